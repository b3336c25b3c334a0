// Root filesystems as overlay mounts (issue 5), with real mounts: the
// overlay of the layers' overlay forms shows the same tree as the copy
// that applies the OCI whiteouts (image-spec layer.md), and deleting a
// bundle never reaches through its mount into the image store's layers.
// The mount tests need root and a kernel with overlay; they print SKIPPED
// without.

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "platform/fd.h"
#include "platform/image/image_store.h"
#include "platform/image/overlay_mount.h"
#include "tests/platform/image/image_fixture.h"

#include <CppUTest/TestHarness.h>
// After TestHarness.h, which declares what it needs.
#include <CppUTest/MemoryLeakWarningPlugin.h>

using namespace daemonlet;
using namespace daemonlet::platform;
using namespace daemonlet::test;
namespace fs = std::filesystem;

namespace {

// Each entry under `root` (not root itself) as "type mode uid:gid content".
std::map<std::string, std::string> tree_of(const std::string& root) {
    std::map<std::string, std::string> out;
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
        struct stat st {};
        CHECK(::lstat(it->path().c_str(), &st) == 0);
        std::string what = S_ISDIR(st.st_mode)   ? "dir"
                           : S_ISLNK(st.st_mode) ? "link " + fs::read_symlink(it->path()).string()
                           : S_ISREG(st.st_mode) ? "file " + slurp(it->path())
                                                 : "other " + std::to_string(st.st_rdev);
        out[fs::relative(it->path(), root).string()] = what + " " + std::to_string(st.st_mode & 07777) + " " +
                                                       std::to_string(st.st_uid) + ":" +
                                                       std::to_string(st.st_gid);
    }
    return out;
}

std::string describe(const std::map<std::string, std::string>& tree) {
    std::string s;
    for (const auto& [path, what] : tree) s += "  " + path + ": " + what + "\n";
    return s;
}

// Layers whose whiteouts interact: a file and a directory whited out, one
// of them made again above, one in the same layer; an opaque directory that a later layer adds
// to; a symlink replaced by a file; a hard link.
std::vector<std::string> three_layers() {
    std::string one = make_tar({
        {TarEntry::kDir, "etc", "", "", 0755},
        {TarEntry::kFile, "etc/keep", "keep", "", 0644},
        {TarEntry::kFile, "etc/gone", "gone", "", 0600},
        {TarEntry::kFile, "etc/back", "first", "", 0600},
        {TarEntry::kDir, "etc/sub", "", "", 0755},
        {TarEntry::kFile, "etc/sub/old", "old", "", 0644},
        {TarEntry::kDir, "var", "", "", 0755},
        {TarEntry::kDir, "var/cache", "", "", 0700},
        {TarEntry::kFile, "var/cache/old", "old", "", 0644},
        {TarEntry::kDir, "opq", "", "", 0750},
        {TarEntry::kFile, "opq/a", "a", "", 0644},
        {TarEntry::kDir, "opq/sub", "", "", 0755},
        {TarEntry::kFile, "opq/sub/b", "b", "", 0644},
        {TarEntry::kDir, "bin", "", "", 0755},
        {TarEntry::kFile, "bin/tool", "#!/bin/sh\n", "", 0755},
        {TarEntry::kSymlink, "bin/link", "", "tool", 0777},
        {TarEntry::kHardlink, "bin/tool2", "", "bin/tool", 0755},
    });
    std::string two = make_tar({
        {TarEntry::kDir, "etc", "", "", 0755},
        {TarEntry::kFile, "etc/.wh.gone", "", "", 0644},
        {TarEntry::kFile, "etc/.wh.back", "", "", 0644},
        {TarEntry::kFile, "etc/.wh.sub", "", "", 0644},
        {TarEntry::kDir, "etc/sub", "", "", 0700},
        {TarEntry::kFile, "etc/sub/x", "x", "", 0644},
        {TarEntry::kDir, "var", "", "", 0755},
        {TarEntry::kFile, "var/.wh.cache", "", "", 0644},
        {TarEntry::kDir, "opq", "", "", 0750},
        {TarEntry::kFile, "opq/.wh..wh..opq", "", "", 0644},
        {TarEntry::kFile, "opq/new", "new", "", 0644},
        {TarEntry::kFile, "bin/link", "now a file", "", 0644},
    });
    std::string three = make_tar({
        {TarEntry::kDir, "etc", "", "", 0755},
        {TarEntry::kFile, "etc/back", "again", "", 0640},
        {TarEntry::kDir, "opq", "", "", 0750},
        {TarEntry::kFile, "opq/later", "later", "", 0644},
        {TarEntry::kDir, "var", "", "", 0755},
        {TarEntry::kDir, "var/cache", "", "", 0755},
        {TarEntry::kFile, "var/cache/fresh", "fresh", "", 0644},
    });
    return {one, two, three};
}

}  // namespace

// Upstream: kubelet leaves the choice to the runtime; containerd's
// snapshotter setting is the same three ways (overlayfs, native copy).
TEST_GROUP(RootfsMode){};

TEST(RootfsMode, TheSettingAndTheProbeChoose) {
    static const struct {
        const char* name;
        const char* setting;
        bool probe_ok;
        bool valid;
        bool overlay;
        const char* error;
    } rows[] = {
        {"auto with overlay", "auto", true, true, true, ""},
        {"auto without overlay: the copy", "auto", false, true, false, ""},
        {"copy with overlay available", "copy", true, true, false, ""},
        {"copy without", "copy", false, true, false, ""},
        {"overlay forced and available", "overlay", true, true, true, ""},
        {"overlay forced and unavailable: an error naming the field and why", "overlay", false, false, false,
         "runtime.rootfs: overlay: this node cannot mount one: no overlay here"},
    };
    for (const auto& row : rows) {
        Status probe = row.probe_ok ? Status{Ok{}} : Status{Error{ErrorCode::Unavailable, "no overlay here"}};
        auto r = use_overlay(row.setting, probe);
        CHECK_EQUAL_TEXT(row.valid, r.ok(), row.name);
        if (row.valid)
            CHECK_EQUAL_TEXT(row.overlay, r.value(), row.name);
        else
            STRCMP_EQUAL_TEXT(row.error, r.error().message.c_str(), row.name);
    }
}

TEST_GROUP(ImageOverlay) {
    std::string dir, root;
    bool usable = false;
    void setup() override {
        char tmpl[] = "/tmp/daemonlet-overlay.XXXXXX";
        dir = ::mkdtemp(tmpl);
        root = dir + "/images";
        fs::create_directories(dir + "/bundles");
        fs::create_directories(root);
        // probe_overlay keeps its first answer for the process's life: made
        // outside the leak detector, which would count it against this test.
        MemoryLeakWarningPlugin::saveAndDisableNewDeleteOverloads();
        {
            auto probe = probe_overlay(root, dir + "/bundles");
            usable = probe.ok();
            if (!usable)
                std::printf("\n  SKIPPED: no overlay mounts here: %s\n", probe.error().message.c_str());
        }
        MemoryLeakWarningPlugin::restoreNewDeleteOverloads();
    }
    void teardown() override {
        // Never a remove_all through a mount left by a failed check.
        for (const auto& b : {dir + "/bundles/a/rootfs", dir + "/bundles/b/rootfs", dir + "/rootfs"})
            CHECK(unmount_if_mounted(b).ok());
        CHECK(remove_tree_on_one_fs(dir).ok());
    }
    ImageStore open() { return open_store(root); }
    ImportedImage import(ImageStore & store, const std::vector<std::string>& layers,
                         const std::string& name) {
        return import_plain(store, dir, layers, name);
    }
    void mount(const ImageStore& store, const ImportedImage& image, const std::string& bundle) {
        auto m = store.mount_rootfs(image, bundle + "/rootfs", bundle + "/overlay");
        CHECK_TEXT(m.ok(), m.ok() ? "" : m.error().message.c_str());
        CHECK(is_mount_point(bundle + "/rootfs"));
    }
};

TEST(ImageOverlay, TheOverlayShowsTheSameTreeAsTheCopy) {
    if (!usable) return;
    ImageStore store = open();
    auto image = import(store, three_layers(), "three:1");
    CHECK(store.assemble_rootfs(image, dir + "/copy").ok());
    mount(store, image, dir + "/bundles/a");
    auto copy = tree_of(dir + "/copy"), over = tree_of(dir + "/bundles/a/rootfs");
    CHECK_TEXT(copy == over, ("copy:\n" + describe(copy) + "overlay:\n" + describe(over)).c_str());
    // The rules the trees pin (layer.md, "Whiteouts" and "Opaque Whiteout").
    CHECK(!over.count("etc/gone"));
    STRCMP_EQUAL("again", slurp(dir + "/bundles/a/rootfs/etc/back").c_str());
    CHECK(!over.count("var/cache/old"));
    CHECK(!over.count("etc/sub/old") && over.count("etc/sub/x"));
    CHECK(over.count("var/cache/fresh"));
    CHECK(!over.count("opq/a") && !over.count("opq/sub"));
    CHECK(over.count("opq/new") && over.count("opq/later"));
    STRCMP_EQUAL("now a file", slurp(dir + "/bundles/a/rootfs/bin/link").c_str());
    LONGS_EQUAL(15, over.size());
}

TEST(ImageOverlay, ALayerListedTwiceGivesTheSameTreeAsTheCopy) {
    if (!usable) return;
    ImageStore store = open();
    auto layers = three_layers();
    // Layer two again on top: its whiteouts apply to layer three's etc/back.
    auto image = import(store, {layers[0], layers[1], layers[2], layers[1]}, "twice:1");
    CHECK(store.assemble_rootfs(image, dir + "/copy").ok());
    mount(store, image, dir + "/bundles/a");
    auto copy = tree_of(dir + "/copy"), over = tree_of(dir + "/bundles/a/rootfs");
    CHECK_TEXT(copy == over, ("copy:\n" + describe(copy) + "overlay:\n" + describe(over)).c_str());
    CHECK(!over.count("etc/back"));
}

TEST(ImageOverlay, WhiteoutsTakeOverlaysFormAndTheLayersKeepTheOciForm) {
    if (!usable) return;
    ImageStore store = open();
    auto image = import(store, three_layers(), "three:1");
    mount(store, image, dir + "/bundles/a");
    const std::string two = store.overlay_layer_path(image.config.diff_ids[1]);
    struct stat st {};
    CHECK(::lstat((two + "/etc/gone").c_str(), &st) == 0);
    CHECK_TEXT(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0), "a whiteout is a 0/0 character device");
    char value[4] = {};
    LONGS_EQUAL(1, ::lgetxattr((two + "/opq").c_str(), "trusted.overlay.opaque", value, sizeof value));
    STRCMP_EQUAL("y", value);
    CHECK(!fs::exists(two + "/etc/.wh.gone"));
    // The copy's source is untouched: the OCI whiteout files are still there.
    const std::string oci = store.layer_path(image.config.diff_ids[1]);
    CHECK(fs::is_regular_file(oci + "/etc/.wh.gone"));
    CHECK(fs::is_regular_file(oci + "/opq/.wh..wh..opq"));
    CHECK(fs::is_empty(root + "/overlay/tmp"));
}

// A store whose layers were unpacked before overlays were used has no
// overlay forms: the first mount makes them.
TEST(ImageOverlay, AStoreFromBeforeOverlaysGetsTheirFormsOnFirstMount) {
    if (!usable) return;
    ImageStore store = open();
    auto image = import(store, three_layers(), "three:1");
    CHECK(!fs::exists(root + "/overlay"));
    mount(store, image, dir + "/bundles/a");
    for (const auto& d : image.config.diff_ids) CHECK(fs::is_directory(store.overlay_layer_path(d)));
    // A second container shares them, with its own upper directory.
    mount(store, image, dir + "/bundles/b");
    std::ofstream(dir + "/bundles/a/rootfs/etc/keep") << "changed in a";
    STRCMP_EQUAL("keep", slurp(dir + "/bundles/b/rootfs/etc/keep").c_str());
}

// The safety the runc runtime's remove() relies on: writes stay in the
// bundle, and deleting the bundle never deletes through its mount.
TEST(ImageOverlay, DeletingABundleNeverReachesTheLayers) {
    if (!usable) return;
    ImageStore store = open();
    auto image = import(store, three_layers(), "three:1");
    const std::string bundle = dir + "/bundles/a", rootfs = bundle + "/rootfs";
    mount(store, image, bundle);
    std::ofstream(rootfs + "/etc/keep") << "written in the container";
    std::ofstream(rootfs + "/etc/new") << "new";
    fs::remove(rootfs + "/etc/back");
    fs::remove_all(rootfs + "/opq");
    const std::string one = store.layer_path(image.config.diff_ids[0]),
                      three = store.layer_path(image.config.diff_ids[2]);
    STRCMP_EQUAL("keep", slurp(one + "/etc/keep").c_str());
    STRCMP_EQUAL("written in the container", slurp(bundle + "/overlay/upper/etc/keep").c_str());

    // Still mounted: the deletion stops at the mount, naming it.
    auto refused = remove_tree_on_one_fs(bundle);
    CHECK(!refused.ok());
    CHECK_TEXT(refused.error().message.find(rootfs + ": a mount point") != std::string::npos,
               refused.error().message.c_str());
    CHECK(is_mount_point(rootfs));
    CHECK(unmount_if_mounted(rootfs).ok());
    CHECK(!is_mount_point(rootfs));
    CHECK(remove_tree_on_one_fs(bundle).ok());
    CHECK(!fs::exists(bundle));
    STRCMP_EQUAL("keep", slurp(one + "/etc/keep").c_str());
    STRCMP_EQUAL("again", slurp(three + "/etc/back").c_str());
    CHECK(fs::exists(one + "/opq/sub/b"));
    STRCMP_EQUAL("keep", slurp(store.overlay_layer_path(image.config.diff_ids[0]) + "/etc/keep").c_str());
    CHECK(fs::exists(store.overlay_layer_path(image.config.diff_ids[0]) + "/opq/sub/b"));
    // And the image mounts again, as it was.
    mount(store, image, dir + "/bundles/b");
    STRCMP_EQUAL("keep", slurp(dir + "/bundles/b/rootfs/etc/keep").c_str());
}

// A process left with a file open in the rootfs: umount is EBUSY, the lazy
// detach takes the mount out of the tree, and the bundle can go.
TEST(ImageOverlay, ABusyRootfsIsDetached) {
    if (!usable) return;
    ImageStore store = open();
    auto image = import(store, three_layers(), "three:1");
    const std::string bundle = dir + "/bundles/a";
    mount(store, image, bundle);
    Fd held(::open((bundle + "/rootfs/etc/keep").c_str(), O_RDONLY | O_CLOEXEC));
    CHECK(held.get() >= 0);
    CHECK(unmount_if_mounted(bundle + "/rootfs").ok());
    CHECK(!is_mount_point(bundle + "/rootfs"));
    CHECK(remove_tree_on_one_fs(bundle).ok());
    STRCMP_EQUAL("keep", slurp(store.layer_path(image.config.diff_ids[0]) + "/etc/keep").c_str());
}

TEST(ImageOverlay, NothingMountedIsNothingToUnmount) {
    if (!usable) return;
    fs::create_directories(dir + "/plain");
    CHECK(unmount_if_mounted(dir + "/plain").ok());
    CHECK(unmount_if_mounted(dir + "/absent").ok());
    CHECK(remove_tree_on_one_fs(dir + "/absent").ok());
}

// 50 layers: absolute lower paths (about 110 bytes each here) would pass a
// page; names relative to overlay/sha256 (65 bytes) fit. 70 do not: the
// caller (daemonlet-image prepare) copies instead.
TEST(ImageOverlay, ManyLayersFitAPageAndTooManyAreTooLong) {
    if (!usable) return;
    ImageStore store = open();
    auto layers_of = [](int n, const std::string& tag) {
        std::vector<std::string> layers;
        for (int i = 0; i < n; ++i)
            layers.push_back(
                make_tar({{TarEntry::kFile, "f" + std::to_string(i), tag + std::to_string(i), "", 0644}}));
        return layers;
    };
    auto fifty = import(store, layers_of(50, "fifty"), "fifty:1");
    CHECK((root + "/overlay/sha256/").size() * 50 + 64 * 50 > kMaxMountOptionBytes);
    mount(store, fifty, dir + "/bundles/a");
    STRCMP_EQUAL("fifty49", slurp(dir + "/bundles/a/rootfs/f49").c_str());
    auto seventy = import(store, layers_of(70, "seventy"), "seventy:1");
    auto r = store.mount_rootfs(seventy, dir + "/bundles/b/rootfs", dir + "/bundles/b/overlay");
    CHECK(!r.ok());
    STRCMP_EQUAL("too_long", r.error().code_name());
    CHECK(!is_mount_point(dir + "/bundles/b/rootfs"));
    CHECK(store.assemble_rootfs(seventy, dir + "/bundles/b/rootfs").ok());
}

// Starts run in parallel on the runtime's threads: mounts at once from
// several threads each name their lowers relative to their own directory
// (mount_overlay changes the working directory; a process-wide one made
// two mounts at once fail with ENOENT, agent.runc_security once). Four
// threads, each its own lower base and layer, 40 mounts and unmounts each.
TEST(ImageOverlay, MountsFromManyThreadsAtOnceEachFindTheirLowers) {
    if (!usable) return;
    constexpr int kThreads = 4;
    constexpr int kRounds = 40;
    std::vector<std::string> failures(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        const std::string base = dir + "/t" + std::to_string(t);
        const std::string layer = "layer" + std::to_string(t);
        fs::create_directories(base + "/" + layer);
        std::ofstream(base + "/" + layer + "/whose") << t;
        for (const char* d : {"/upper", "/work", "/merged"}) fs::create_directories(base + d);
    }
    const std::string cwd_before = fs::current_path().string();
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            const std::string base = dir + "/t" + std::to_string(t);
            for (int i = 0; i < kRounds && failures[t].empty(); ++i) {
                auto m = mount_overlay(base, {"layer" + std::to_string(t)}, base + "/upper", base + "/work",
                                       base + "/merged");
                if (!m.ok()) {
                    failures[t] = m.error().message;
                    break;
                }
                if (slurp(base + "/merged/whose") != std::to_string(t))
                    failures[t] = "another thread's lower";
                if (auto u = unmount_if_mounted(base + "/merged"); !u.ok() && failures[t].empty())
                    failures[t] = u.error().message;
            }
        });
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t)
        STRCMP_EQUAL_TEXT("", failures[t].c_str(), ("thread " + std::to_string(t)).c_str());
    STRCMP_EQUAL(cwd_before.c_str(), fs::current_path().string().c_str());  // the process's own, untouched
}

namespace {

// Bytes on disk of the tree `root`, each inode once; with `own_only`, only
// directories, whiteouts and files not hard-linked elsewhere (what an
// overlay form adds to the layers it links to).
std::uintmax_t disk_use(const std::string& root, bool own_only = false) {
    std::set<std::pair<dev_t, ino_t>> seen;
    std::uintmax_t bytes = 0;
    auto add = [&](const std::string& path) {
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0 || !seen.insert({st.st_dev, st.st_ino}).second) return;
        if (own_only && S_ISREG(st.st_mode) && st.st_nlink > 1) return;
        bytes += static_cast<std::uintmax_t>(st.st_blocks) * 512;
    };
    add(root);
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it)
        add(it->path());
    return bytes;
}

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// `files` files of `size` pseudo-random (incompressible) bytes under d<layer>/.
std::string random_layer(int layer, int files, std::size_t size) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(layer));
    std::vector<TarEntry> entries{{TarEntry::kDir, "d" + std::to_string(layer), "", "", 0755}};
    for (int i = 0; i < files; ++i) {
        std::string data(size, '\0');
        for (std::size_t j = 0; j + 8 <= size; j += 8) {
            std::uint64_t v = rng();
            std::memcpy(&data[j], &v, 8);
        }
        entries.push_back(
            {TarEntry::kFile, "d" + std::to_string(layer) + "/f" + std::to_string(i), data, "", 0644});
    }
    return make_tar(entries);
}

}  // namespace

// The figures docs/figures.md records ("Root filesystems"): per container,
// the time to make its rootfs and the disk it takes, copy versus overlay,
// for the busybox test image and a 50 MB image of 3 layers. The overlay's
// first mount also makes the layers' overlay forms, once per layer.
TEST(ImageOverlay, PrintsPrepareTimeAndDiskUseCopyVersusOverlay) {
    if (!usable) return;
    ImageStore store = open();
    std::vector<std::pair<std::string, ImportedImage>> images;
    if (::access("/bin/busybox", X_OK) == 0) {
        std::string cmd = std::string("bash ") + DAEMONLET_TEST_DATA + "/make_busybox_image.sh " + dir +
                          "/busybox.tar >/dev/null";
        LONGS_EQUAL(0, std::system(cmd.c_str()));
        auto imported = store.import_archive(dir + "/busybox.tar");
        CHECK(imported.ok());
        images.push_back({"busybox", imported.value().at(0)});
    }
    // 30 + 15 + 5 MB in files of 100 KiB.
    images.push_back({"50 MB in 3 layers", import(store,
                                                  {random_layer(1, 300, 102400), random_layer(2, 150, 102400),
                                                   random_layer(3, 50, 102400)},
                                                  "big:1")});
    for (const auto& [label, image] : images) {
        constexpr int kRuns = 3;
        double copy_ms = 1e9, first_mount_ms = 0, mount_ms = 1e9;
        std::uintmax_t copy_bytes = 0, bundle_bytes = 0, forms_bytes = 0;
        for (int run = 0; run < kRuns; ++run) {
            std::string copy = dir + "/copy" + std::to_string(run);
            auto start = std::chrono::steady_clock::now();
            CHECK(store.assemble_rootfs(image, copy).ok());
            copy_ms = std::min(copy_ms, ms_since(start));
            copy_bytes = disk_use(copy);
            CHECK(remove_tree_on_one_fs(copy).ok());
        }
        for (int run = 0; run < kRuns; ++run) {
            const std::string bundle = dir + "/bundles/a";
            auto start = std::chrono::steady_clock::now();
            mount(store, image, bundle);
            double took = ms_since(start);
            if (run == 0)
                first_mount_ms = took;
            else
                mount_ms = std::min(mount_ms, took);
            CHECK(unmount_if_mounted(bundle + "/rootfs").ok());
            bundle_bytes = disk_use(bundle);
            CHECK(remove_tree_on_one_fs(bundle).ok());
        }
        for (const auto& d : image.config.diff_ids)
            forms_bytes += disk_use(store.overlay_layer_path(d), true);
        std::printf(
            "\n  %s: copy %.1f ms, %ju KiB per container; overlay %.1f ms (first: %.1f ms, making "
            "the layers' overlay forms, %ju KiB once), %ju KiB per container",
            label.c_str(), copy_ms, copy_bytes / 1024, mount_ms, first_mount_ms, forms_bytes / 1024,
            bundle_bytes / 1024);
        CHECK_TEXT(bundle_bytes < copy_bytes, "an overlay bundle takes less disk than a copy");
    }
    std::printf("\n");
}
