// The container's log as daemonlet-shim writes it: CRI records, partial
// records for long lines, rotation by size keeping at most N files.
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "platform/shim/shim_protocol.h"
#include "tests/platform/runtime_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

TEST_GROUP(ShimLogs) {
    RuntimeFixture f;
    void setup() override { f.setup(); }
    void teardown() override { f.teardown(); }
};

TEST(ShimLogs, LongLinesAreSplitIntoPartialRecords) {
    // 40000 bytes and a newline, then a short line: P, P, F, F.
    auto info = f.wait_exit(
        f.start(launch({"/bin/sh", "-c", "head -c 40000 /dev/zero | tr '\\0' a; echo; echo short"})));
    auto records = read_cri_log(info.log_path);
    LONGS_EQUAL(4, records.size());
    const std::size_t max = shim::kLogLineMax;
    const char tags[] = {'P', 'P', 'F', 'F'};
    const std::size_t sizes[] = {max, max, 40000 - 2 * max, 5};
    for (std::size_t i = 0; i < 4; ++i) {
        LONGS_EQUAL(tags[i], records[i].tag);
        LONGS_EQUAL(sizes[i], records[i].text.size());
        STRCMP_EQUAL("stdout", records[i].stream.c_str());
    }
    CHECK(std::all_of(records[0].text.begin(), records[0].text.end(), [](char c) { return c == 'a'; }));
    STRCMP_EQUAL("short", records[3].text.c_str());
}

TEST(ShimLogs, ARecordTheFileCannotTakeIsCutOffNotLeftHalf) {
    // A log file that takes no more: a full disk fills the last block and
    // then refuses (a short write, then ENOSPC); a file size limit does the
    // same, deterministically (a short write, then EFBIG). The file must
    // end at the last whole record, so that what is written once there is
    // room starts a line of its own.
    struct rlimit old {};
    CHECK(::getrlimit(RLIMIT_FSIZE, &old) == 0);
    struct rlimit lim = old;
    lim.rlim_cur = 3001;                        // not a multiple of a record's length
    auto prev = std::signal(SIGXFSZ, SIG_IGN);  // inherited by the shim: EFBIG, not a kill
    CHECK(::setrlimit(RLIMIT_FSIZE, &lim) == 0);
    auto id = f.start(
        launch({"/bin/sh", "-c", "i=1; while [ $i -le 300 ]; do echo \"line $i\"; i=$((i+1)); done"}));
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, prev);
    auto info = f.wait_exit(id, "cannot write " + f.dir + "/logs/ns_pod_uid-1/c/0.log: file too large");
    LONGS_EQUAL(0, *info.exit_code);
    const std::string text = read_text(info.log_path);
    CHECK(!text.empty() && text.size() <= 3001);
    CHECK_TEXT(text.back() == '\n', "the file ends inside a record");
    auto records = read_cri_log(info.log_path);
    CHECK(records.size() > 10 && records.size() < 300);
    for (std::size_t i = 0; i < records.size(); ++i)
        STRCMP_EQUAL(("line " + std::to_string(i + 1)).c_str(), records[i].text.c_str());
}

TEST(ShimLogs, RotationBySizeKeepsAtMostMaxFiles) {
    auto l = launch({"/bin/sh", "-c", "i=1; while [ $i -le 2000 ]; do echo \"line $i\"; i=$((i+1)); done"});
    l.log_max_bytes = 2048;
    l.log_max_files = 3;
    auto info = f.wait_exit(f.start(l));
    LONGS_EQUAL(0, *info.exit_code);

    std::filesystem::path log(info.log_path);
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(log.parent_path())) {
        files.push_back(e.path().filename().string());
        CHECK_TEXT(e.file_size() <= l.log_max_bytes, e.path().c_str());
    }
    std::sort(files.begin(), files.end());
    LONGS_EQUAL(3, files.size());
    STRCMP_EQUAL("0.log", files[0].c_str());
    STRCMP_EQUAL("0.log.1", files[1].c_str());
    STRCMP_EQUAL("0.log.2", files[2].c_str());

    // Oldest to newest, the kept records are the last lines, in order, none lost between files.
    std::vector<CriRecord> kept;
    for (const char* suffix : {".2", ".1", ""}) {
        auto part = read_cri_log(info.log_path + suffix);
        CHECK(!part.empty());
        kept.insert(kept.end(), part.begin(), part.end());
    }
    for (std::size_t i = 0; i < kept.size(); ++i) {
        std::string expected = "line " + std::to_string(2000 - kept.size() + 1 + i);
        STRCMP_EQUAL(expected.c_str(), kept[i].text.c_str());
    }
    CHECK(kept.size() > 40);  // about three files' worth
}
