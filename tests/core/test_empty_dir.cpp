// A Memory emptyDir's tmpfs size (core/empty_dir.h). Rows pin
// pkg/volume/emptydir/empty_dir_test.go TestCalculateEmptyDirMemorySize
// and component-helpers resource helpers_test.go TestPodLimits (restartable
// init containers), as ResourceConfigForPod reads them.
#include <optional>
#include <string>
#include <vector>

#include "core/empty_dir.h"
#include "core/quantity.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

constexpr std::int64_t kMi = 1024 * 1024;
constexpr std::int64_t kGi = 1024 * kMi;

Container with_memory_limit(const char* name, const char* limit, const char* restart_policy = "") {
    Container c;
    c.name = name;
    c.restart_policy = restart_policy;
    if (*limit) c.resources.limits["memory"] = parse_quantity(limit).value();
    c.resources.requests["cpu"] = parse_quantity("100m").value();
    return c;
}

Volume memory_volume(const char* size_limit) {
    Volume v;
    v.name = "cache";
    v.source = Volume::Source::EmptyDir;
    v.empty_dir_medium = "Memory";
    if (*size_limit) v.empty_dir_size_limit = parse_quantity(size_limit).value();
    return v;
}

std::string show(std::optional<std::int64_t> v) { return v ? std::to_string(*v) : "none"; }

}  // namespace

TEST_GROUP(EmptyDir){};

TEST(EmptyDir, PodMemoryLimitAsResourceConfigForPod) {
    struct Row {
        const char* name;
        std::vector<Container> containers, init_containers;
        std::optional<std::int64_t> want;
    };
    const std::vector<Row> rows = {
        {"ResourceConfigForPod: BestEffort: no memory", {with_memory_limit("a", "")}, {}, std::nullopt},
        {"ResourceConfigForPod: memoryLimitsDeclared: the app containers' sum",
         {with_memory_limit("a", "1Gi"), with_memory_limit("b", "512Mi")},
         {},
         kGi + 512 * kMi},
        {"ResourceConfigForPod: one container without a limit: none (Burstable, not declared)",
         {with_memory_limit("a", "1Gi"), with_memory_limit("b", "")},
         {},
         std::nullopt},
        {"TestPodLimits: a regular init container above the sum is the limit",
         {with_memory_limit("a", "1Gi")},
         {with_memory_limit("init", "2Gi")},
         2 * kGi},
        {"TestPodLimits: an init container without a limit: not declared",
         {with_memory_limit("a", "1Gi")},
         {with_memory_limit("init", "")},
         std::nullopt},
        {"TestPodLimits restartable init containers: a sidecar adds to the app containers",
         {with_memory_limit("a", "1Gi")},
         {with_memory_limit("sidecar", "256Mi", "Always")},
         kGi + 256 * kMi},
        {"TestPodLimits restartable init containers: a later init container runs beside the sidecar",
         {with_memory_limit("a", "256Mi")},
         {with_memory_limit("sidecar", "512Mi", "Always"), with_memory_limit("init", "1Gi")},
         kGi + 512 * kMi},
    };
    for (const auto& row : rows) {
        PodSpec spec;
        spec.containers = row.containers;
        spec.init_containers = row.init_containers;
        STRCMP_EQUAL_TEXT(show(row.want).c_str(), show(pod_memory_limit(spec)).c_str(), row.name);
    }
}

TEST(EmptyDir, MemoryVolumeSizeAsCalculateEmptyDirMemorySize) {
    struct Row {
        const char* name;
        const char* pod_limit;  // the one container's memory limit; "" none
        const char* size_limit;
        std::optional<std::int64_t> allocatable;
        std::optional<std::int64_t> want;
    };
    const Row rows[] = {
        {"TestCalculateEmptyDirMemorySize 'SizeLimit unset': the node's allocatable", "", "", 16 * kGi,
         16 * kGi},
        {"TestCalculateEmptyDirMemorySize 'SizeLimit 0': the node's allocatable", "", "0", 16 * kGi,
         16 * kGi},
        {"TestCalculateEmptyDirMemorySize 'pod has memory limit': the pod's limit", "1Gi", "", 16 * kGi, kGi},
        {"TestCalculateEmptyDirMemorySize 'sizeLimit below the pod limit': the sizeLimit", "1Gi", "500Mi",
         16 * kGi, 500 * kMi},
        {"TestCalculateEmptyDirMemorySize 'sizeLimit above the pod limit': the pod's limit", "1Gi", "10Gi",
         16 * kGi, kGi},
        {"TestCalculateEmptyDirMemorySize 'sizeLimit above allocatable': the node's allocatable", "", "20Gi",
         16 * kGi, 16 * kGi},
        {"TestCalculateEmptyDirMemorySize 'pod limit above allocatable': the node's allocatable", "32Gi", "",
         16 * kGi, 16 * kGi},
        {"calculateEmptyDirMemorySize: Cmp < 1: a sizeLimit equal to the size is taken", "", "16Gi", 16 * kGi,
         16 * kGi},
        {"daemonlet: no allocatable known: the sizeLimit", "", "64Mi", std::nullopt, 64 * kMi},
        {"daemonlet: nothing known: the kernel's default (no size=)", "", "", std::nullopt, std::nullopt},
    };
    for (const auto& row : rows) {
        PodSpec spec;
        spec.containers = {with_memory_limit("a", row.pod_limit)};
        const Volume v = memory_volume(row.size_limit);
        spec.volumes = {v};
        STRCMP_EQUAL_TEXT(show(row.want).c_str(),
                          show(empty_dir_memory_size(v, spec, row.allocatable)).c_str(), row.name);
    }
    // Not a Memory emptyDir: no tmpfs at all.
    PodSpec spec;
    Volume disk = memory_volume("1Gi");
    disk.empty_dir_medium = "";
    CHECK_FALSE(empty_dir_memory_size(disk, spec, 16 * kGi).has_value());
}
