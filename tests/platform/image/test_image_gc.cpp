// Removing images from a real store in a temporary directory
// (image_store.h: remove_images, prune, collect_garbage): the files only
// the removed image had go, a layer another image shares stays, a layer an
// overlay mount uses stays, and a removal interrupted after each deletion
// leaves no named image missing a file, and a later prune finishes it.

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

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

std::set<std::string> entries(const std::string& dir) {
    std::set<std::string> out;
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it)
        out.insert(it->path().filename().string());
    return out;
}

std::string hex(const std::string& digest) { return digest.substr(digest.find(':') + 1); }

std::string layer_tar(const std::string& file, const std::string& content) {
    return make_tar(
        {{TarEntry::kDir, "etc", "", "", 0755}, {TarEntry::kFile, "etc/" + file, content, "", 0644}});
}

}  // namespace

TEST_GROUP(ImageGcStore) {
    std::string dir, root;
    void setup() override {
        char tmpl[] = "/tmp/daemonlet-imagegc.XXXXXX";
        dir = ::mkdtemp(tmpl);
        root = dir + "/images";
        fs::create_directories(dir + "/bundles");
        fs::create_directories(root);
    }
    void teardown() override {
        CHECK(unmount_if_mounted(dir + "/bundles/a/rootfs").ok());
        CHECK(remove_tree_on_one_fs(dir).ok());
    }
    ImageStore open() { return open_store(root); }
    ImportedImage import(ImageStore & store, const std::vector<std::string>& layers,
                         const std::string& name) {
        return import_plain(store, dir, layers, name);
    }
    // Every file `image` needs is in the store, and its rootfs assembles.
    void check_whole(const ImageStore& store, const ImportedImage& image) {
        CHECK(fs::exists(store.blob_path(image.manifest_digest)));
        CHECK(fs::exists(store.blob_path(image.manifest.config.digest)));
        for (const auto& l : image.manifest.layers)
            CHECK_TEXT(fs::exists(store.blob_path(l.digest)), l.digest.c_str());
        for (const auto& d : image.config.diff_ids) CHECK_TEXT(fs::exists(store.layer_path(d)), d.c_str());
        const std::string rootfs = dir + "/check-rootfs";
        fs::remove_all(rootfs);
        auto st = store.assemble_rootfs(image, rootfs);
        CHECK_TEXT(st.ok(), st.ok() ? "" : st.error().message.c_str());
        fs::remove_all(rootfs);
    }
    // The store holds exactly `images`' files.
    void check_only(const ImageStore& store, const std::vector<ImportedImage>& images) {
        std::set<std::string> blobs, layers;
        for (const auto& i : images) {
            blobs.insert(hex(i.manifest_digest));
            blobs.insert(hex(i.manifest.config.digest));
            for (const auto& l : i.manifest.layers) blobs.insert(hex(l.digest));
            for (const auto& d : i.config.diff_ids) layers.insert(hex(d));
        }
        CHECK(blobs == entries(store.root() + "/blobs/sha256"));
        CHECK(layers == entries(store.root() + "/layers/sha256"));
        for (const auto& o : entries(store.root() + "/overlay/sha256"))
            CHECK_TEXT(layers.count(o), o.c_str());
        for (const auto& t : entries(store.root() + "/tmp")) FAIL(("left in tmp/: " + t).c_str());
    }
};

TEST(ImageGcStore, RemovingAnImageDeletesItsOwnFilesAndKeepsSharedLayers) {
    ImageStore store = open();
    const std::string base = layer_tar("base", "shared by both");
    auto old_image = import(store, {base, layer_tar("app", "version 1")}, "app:1");
    auto new_image = import(store, {base, layer_tar("app", "version 2")}, "app:2");
    CHECK(old_image.config.diff_ids[0] == new_image.config.diff_ids[0]);

    auto removed = store.remove_images({"app:1"});
    CHECK_TEXT(removed.ok(), removed.ok() ? "" : removed.error().message.c_str());
    LONGS_EQUAL(1, removed.value().removed.size());
    STRCMP_EQUAL("docker.io/library/app:1", removed.value().removed[0].name.c_str());
    CHECK(removed.value().removed[0].bytes > 0);
    CHECK(removed.value().bytes_freed >= removed.value().removed[0].bytes);
    CHECK(store.find("app:1").error().code == ErrorCode::NotFound);
    check_whole(store, store.find("app:2").value());
    check_only(store, {new_image});
}

TEST(ImageGcStore, RemovingAnUnknownImageIsNotFoundAndRemovesNothing) {
    ImageStore store = open();
    auto image = import(store, {layer_tar("a", "a")}, "a:1");
    auto removed = store.remove_images({"a:1", "b:1"});
    CHECK(!removed.ok());
    STRCMP_EQUAL("not_found", removed.error().code_name());
    CHECK(removed.error().message.find("b:1") != std::string::npos);
    check_whole(store, store.find("a:1").value());
}

TEST(ImageGcStore, RemovingByDigestRemovesEveryNameOfIt) {
    ImageStore store = open();
    auto image = import(store, {layer_tar("a", "a")}, "a:1");
    std::vector<Compression> plain(1, Compression::kPlain);
    write_oci_archive(dir + "/alias.tar", make_image({layer_tar("a", "a")}, plain), "a:alias");
    CHECK(store.import_archive(dir + "/alias.tar").ok());
    LONGS_EQUAL(2, store.list().value().size());
    // One name removed: the other keeps every file.
    CHECK(store.remove_images({"a:alias"}).ok());
    check_whole(store, store.find("a:1").value());
    CHECK(store.import_archive(dir + "/alias.tar").ok());
    auto removed = store.remove_images({image.manifest_digest});
    CHECK(removed.ok());
    LONGS_EQUAL(2, removed.value().removed.size());
    LONGS_EQUAL(0, store.list().value().size());
    check_only(store, {});
}

TEST(ImageGcStore, PruneKeepsTheImagesInUseAndRemovesTheRest) {
    ImageStore store = open();
    const std::string base = layer_tar("base", "shared");
    auto running = import(store, {base, layer_tar("app", "2")}, "app:2");
    auto cached = import(store, {layer_tar("ds", "ds")}, "ds:1");
    import(store, {base, layer_tar("app", "1")}, "app:1");
    import(store, {layer_tar("other", "o")}, "other:1");
    auto pruned = store.prune({"app:2", cached.manifest_digest});
    CHECK_TEXT(pruned.ok(), pruned.ok() ? "" : pruned.error().message.c_str());
    LONGS_EQUAL(2, pruned.value().removed.size());
    check_whole(store, store.find("app:2").value());
    check_whole(store, store.find("ds:1").value());
    check_only(store, {running, cached});
    // Nothing left to do: a second prune removes nothing.
    auto again = store.prune({"app:2", "ds:1"});
    CHECK(again.ok());
    LONGS_EQUAL(0, again.value().removed.size());
    LONGS_EQUAL(0, again.value().bytes_freed);
}

// SQLite-style fault injection: the removal stops after N deletions, for
// every N; each time the images left are whole, the removed one is gone
// from the index, and a prune completes the job.
TEST(ImageGcStore, AnInterruptedRemovalLeavesWholeImagesAndPruneFinishesIt) {
    for (int budget = 0;; ++budget) {
        fs::remove_all(root);
        ImageStore store = open();
        const std::string base = layer_tar("base", "shared");
        auto kept = import(store, {base, layer_tar("app", "2")}, "app:2");
        auto gone = import(store, {base, layer_tar("app", "1"), layer_tar("more", "m")}, "app:1");
        // Overlay forms too, as a mount would have made them (without root:
        // only their directories, which is all the sweep looks at).
        for (const auto& d : gone.config.diff_ids) fs::create_directories(store.overlay_layer_path(d));
        store.set_deletion_budget(budget);
        auto removed = store.remove_images({"app:1"});
        std::string row = "budget " + std::to_string(budget);
        CHECK_TEXT(store.find("app:1").error().code == ErrorCode::NotFound, row.c_str());
        check_whole(store, store.find("app:2").value());
        if (removed.ok()) {
            check_only(store, {kept});
            CHECK_TEXT(budget > 3, "a removal of 2 layers (and 2 forms) and 4 blobs cannot finish in 3");
            break;
        }
        STRCMP_EQUAL_TEXT("interrupted", removed.error().code_name(), row.c_str());
        // The next agent's prune, in a new process (a new store object).
        ImageStore later = open();
        auto pruned = later.prune({"app:2"});
        CHECK_TEXT(pruned.ok(), pruned.ok() ? "" : pruned.error().message.c_str());
        check_only(later, {kept});
        // The image comes back whole when imported again.
        auto back = import(later, {base, layer_tar("app", "1"), layer_tar("more", "m")}, "app:1");
        check_whole(later, back);
        CHECK_TEXT(budget < 20, "the removal never finished");
    }
}

// A layer that an overlay mount uses as a lower directory stays, even when
// no image needs it any more; once unmounted, the next prune deletes it.
TEST(ImageGcStore, AMountedLayerSurvivesUntilUnmounted) {
    MemoryLeakWarningPlugin::saveAndDisableNewDeleteOverloads();
    bool usable = false;
    {
        auto probe = probe_overlay(root, dir + "/bundles");
        usable = probe.ok();
        if (!usable) std::printf("\n  SKIPPED: no overlay mounts here: %s\n", probe.error().message.c_str());
    }
    MemoryLeakWarningPlugin::restoreNewDeleteOverloads();
    if (!usable) return;
    ImageStore store = open();
    auto image = import(store, {layer_tar("one", "1"), layer_tar("two", "2")}, "mounted:1");
    const std::string rootfs = dir + "/bundles/a/rootfs";
    auto m = store.mount_rootfs(image, rootfs, dir + "/bundles/a/overlay");
    CHECK_TEXT(m.ok(), m.ok() ? "" : m.error().message.c_str());

    auto removed = store.remove_images({"mounted:1"});
    CHECK_TEXT(removed.ok(), removed.ok() ? "" : removed.error().message.c_str());
    LONGS_EQUAL(2, removed.value().kept_mounted.size());
    for (const auto& d : image.config.diff_ids) {
        CHECK_TEXT(fs::exists(store.layer_path(d)), d.c_str());
        CHECK_TEXT(fs::exists(store.overlay_layer_path(d)), d.c_str());
    }
    STRCMP_EQUAL("1", slurp(rootfs + "/etc/one").c_str());
    STRCMP_EQUAL("2", slurp(rootfs + "/etc/two").c_str());

    CHECK(unmount_if_mounted(rootfs).ok());
    auto pruned = store.prune({});
    CHECK(pruned.ok());
    LONGS_EQUAL(0, pruned.value().kept_mounted.size());
    CHECK(pruned.value().bytes_freed > 0);
    check_only(store, {});
    CHECK(entries(store.root() + "/overlay/sha256").empty());
}
