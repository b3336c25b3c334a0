// The local image store with real archives in a temporary directory: OCI
// image-layout and docker-archive tarballs built at test time, imported,
// verified and assembled into a root filesystem with the OCI whiteouts
// (image-spec layer.md); broken archives refused with nothing left behind.

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "platform/image/image_store.h"
#include "tests/platform/image/image_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::platform;
using namespace daemonlet::test;
namespace fs = std::filesystem;

namespace {

std::size_t count_entries(const std::string& dir) {
    std::error_code ec;
    std::size_t n = 0;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it) ++n;
    return n;
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_GROUP(ImageStore) {
    std::string dir;
    std::string root;
    void setup() override {
        char tmpl[] = "/tmp/daemonlet-images.XXXXXX";
        dir = ::mkdtemp(tmpl);
        root = dir + "/images";
    }
    void teardown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    ImageStore open() { return open_store(root); }
    // The store holds nothing: no blob, no layer, no staging, no index.
    void check_empty() {
        LONGS_EQUAL(0, count_entries(root + "/blobs/sha256"));
        LONGS_EQUAL(0, count_entries(root + "/layers/sha256"));
        LONGS_EQUAL(0, count_entries(root + "/tmp"));
        CHECK(!fs::exists(root + "/images.json"));
    }
    void check_error(const Error& e, std::initializer_list<std::string> parts) {
        for (const auto& p : parts) CHECK_TEXT(contains(e.message, p), (p + " not in: " + e.message).c_str());
    }
    // The rootfs of whiteout_layers(), file by file.
    void check_whiteout_rootfs(const std::string& rootfs) {
        STRCMP_EQUAL("keep", slurp(rootfs + "/etc/keep").c_str());
        STRCMP_EQUAL("added", slurp(rootfs + "/etc/added").c_str());
        CHECK_TEXT(!fs::exists(rootfs + "/etc/gone"), "layer 2's .wh.gone removes etc/gone");
        CHECK_TEXT(!fs::exists(rootfs + "/etc/.wh.gone"), "whiteout files are not copied");
        CHECK_TEXT(!fs::exists(rootfs + "/opq/a"), "the opaque directory hides layer 1's opq/a");
        CHECK_TEXT(!fs::exists(rootfs + "/opq/sub"), "and opq/sub");
        CHECK(!fs::exists(rootfs + "/opq/.wh..wh..opq"));
        STRCMP_EQUAL("new", slurp(rootfs + "/opq/new").c_str());
        STRCMP_EQUAL("now a file", slurp(rootfs + "/bin/link").c_str());
        CHECK_TEXT(!fs::is_symlink(rootfs + "/bin/link"), "a file of layer 2 replaces layer 1's symlink");
        CHECK(fs::is_symlink(rootfs + "/bin/abs"));
        STRCMP_EQUAL("/bin/tool", fs::read_symlink(rootfs + "/bin/abs").c_str());
        struct stat tool {
        }, tool2{}, opq{}, added{};
        CHECK(::lstat((rootfs + "/bin/tool").c_str(), &tool) == 0);
        CHECK(::lstat((rootfs + "/bin/tool2").c_str(), &tool2) == 0);
        LONGS_EQUAL(0755, tool.st_mode & 07777);
        CHECK_TEXT(tool.st_ino == tool2.st_ino, "a hard link stays a hard link");
        CHECK(::lstat((rootfs + "/opq").c_str(), &opq) == 0);
        LONGS_EQUAL(0750, opq.st_mode & 07777);
        CHECK(::lstat((rootfs + "/etc/added").c_str(), &added) == 0);
        LONGS_EQUAL(0640, added.st_mode & 07777);
        LONGS_EQUAL(1700000000, added.st_mtim.tv_sec);
        std::size_t files = 0;
        for (auto it = fs::recursive_directory_iterator(rootfs); it != fs::recursive_directory_iterator();
             ++it) {
            CHECK_TEXT(it->path().filename().string().rfind(".wh.", 0) != 0, it->path().c_str());
            ++files;
        }
        // etc{keep,added} opq{new} bin{tool,tool2,link,abs} and the three directories.
        LONGS_EQUAL(10, files);
    }
};

TEST(ImageStore, ImportsAnOciLayoutAndAssemblesTheRootfsWithWhiteouts) {
    ImageStore store = open();
    TestImage img = make_image(whiteout_layers(), {Compression::kGzip, Compression::kPlain});
    write_oci_archive(dir + "/demo.tar", img, "demo:1.0");
    auto imported = store.import_archive(dir + "/demo.tar");
    CHECK_TEXT(imported.ok(), imported.ok() ? "" : imported.error().message.c_str());
    LONGS_EQUAL(1, imported.value().size());
    const ImportedImage& image = imported.value()[0];
    STRCMP_EQUAL("docker.io/library/demo:1.0", image.name.c_str());
    STRCMP_EQUAL(img.manifest_digest.c_str(), image.manifest_digest.c_str());
    STRCMP_EQUAL("/bin/tool", image.config.cmd.at(0).c_str());
    STRCMP_EQUAL("/etc", image.config.working_dir.c_str());
    // Blobs: manifest, config, two layers; each file's name is its digest.
    LONGS_EQUAL(4, count_entries(root + "/blobs/sha256"));
    for (const auto& e : fs::directory_iterator(root + "/blobs/sha256"))
        STRCMP_EQUAL(("sha256:" + e.path().filename().string()).c_str(), digest_of(slurp(e.path())).c_str());
    LONGS_EQUAL(2, count_entries(root + "/layers/sha256"));
    LONGS_EQUAL(0, count_entries(root + "/tmp"));

    CHECK(store.assemble_rootfs(image, dir + "/rootfs").ok());
    check_whiteout_rootfs(dir + "/rootfs");
}

// A registry pull stages the OCI layout as files and imports the directory
// (image_pull.cpp): the same image as from its archive, and the directory's
// files moved into the store.
TEST(ImageStore, ImportsAnOciLayoutDirectoryAsItsArchive) {
    ImageStore store = open();
    TestImage img = make_image(whiteout_layers(), {Compression::kGzip, Compression::kPlain});
    write_oci_layout(dir + "/layout", img, "demo:1.0");
    auto imported = store.import_layout(dir + "/layout");
    CHECK_TEXT(imported.ok(), imported.ok() ? "" : imported.error().message.c_str());
    LONGS_EQUAL(1, imported.value().size());
    const ImportedImage& image = imported.value()[0];
    STRCMP_EQUAL("docker.io/library/demo:1.0", image.name.c_str());
    STRCMP_EQUAL(img.manifest_digest.c_str(), image.manifest_digest.c_str());
    LONGS_EQUAL(4, count_entries(root + "/blobs/sha256"));
    for (const auto& e : fs::directory_iterator(root + "/blobs/sha256"))
        STRCMP_EQUAL(("sha256:" + e.path().filename().string()).c_str(), digest_of(slurp(e.path())).c_str());
    LONGS_EQUAL(2, count_entries(root + "/layers/sha256"));
    LONGS_EQUAL(0, count_entries(root + "/tmp"));
    auto found = store.find("demo:1.0");
    CHECK_TEXT(found.ok(), found.ok() ? "" : found.error().message.c_str());
    CHECK(store.assemble_rootfs(found.value(), dir + "/rootfs").ok());
    check_whiteout_rootfs(dir + "/rootfs");
}

TEST(ImageStore, ALayoutDirectoryWithACorruptedBlobIsRefusedAndNothingIsLeft) {
    ImageStore store = open();
    TestImage img = make_image(whiteout_layers(), {Compression::kGzip, Compression::kPlain});
    const std::string layout = dir + "/layout", good = digest_of(img.layers[1]);
    write_oci_layout(layout, img, "demo:1.0");
    std::string bad = img.layers[1];
    bad[600] ^= 1;
    std::ofstream(layout + "/blobs/sha256/" + good.substr(7), std::ios::binary | std::ios::trunc) << bad;
    auto r = store.import_layout(layout);
    CHECK(!r.ok());
    check_error(r.error(), {layout + ": blobs/sha256/" + good.substr(7), "digest mismatch",
                            "the descriptor says " + good});
    check_empty();
}

// As an archive's symlink members are checked, a layout's links are refused:
// a pull writes none, and one would let the import read (and move) a file
// outside the layout.
TEST(ImageStore, ALayoutDirectoryWithASymlinkIsRefused) {
    ImageStore store = open();
    TestImage img = make_image(whiteout_layers(), {Compression::kGzip, Compression::kPlain});
    const std::string layout = dir + "/layout", config = digest_of(img.config);
    write_oci_layout(layout, img, "demo:1.0");
    std::ofstream(dir + "/outside") << img.config;
    fs::remove(layout + "/blobs/sha256/" + config.substr(7));
    fs::create_symlink(dir + "/outside", layout + "/blobs/sha256/" + config.substr(7));
    auto r = store.import_layout(layout);
    CHECK(!r.ok());
    check_error(r.error(), {layout + ": blobs/sha256/" + config.substr(7), "not a regular file: refused"});
    check_empty();
    STRCMP_EQUAL(img.config.c_str(), slurp(dir + "/outside").c_str());
}

TEST(ImageStore, ImportsADockerArchive) {
    ImageStore store = open();
    TestImage img = make_image(whiteout_layers(), {Compression::kPlain, Compression::kGzip});
    write_docker_archive(dir + "/demo.tar", img, "registry.local:5000/team/demo:2.0");
    auto imported = store.import_archive(dir + "/demo.tar");
    CHECK_TEXT(imported.ok(), imported.ok() ? "" : imported.error().message.c_str());
    const ImportedImage& image = imported.value().at(0);
    STRCMP_EQUAL("registry.local:5000/team/demo:2.0", image.name.c_str());
    // The layers keep their digests; the manifest is the store's own.
    STRCMP_EQUAL(digest_of(img.layers[1]).c_str(), image.manifest.layers[1].digest.c_str());
    STRCMP_EQUAL("application/vnd.oci.image.layer.v1.tar+gzip", image.manifest.layers[1].media_type.c_str());
    STRCMP_EQUAL("application/vnd.oci.image.layer.v1.tar", image.manifest.layers[0].media_type.c_str());
    CHECK(fs::exists(store.blob_path(image.manifest_digest)));
    CHECK(store.assemble_rootfs(image, dir + "/rootfs").ok());
    check_whiteout_rootfs(dir + "/rootfs");
}

TEST(ImageStore, ImportsZstdLayers) {
    // layer.md: tar+zstd, which libarchive decompresses.
    ImageStore store = open();
    TestImage img = make_image(whiteout_layers(), {Compression::kZstd, Compression::kZstd});
    write_oci_archive(dir + "/demo.tar", img, "demo:zstd");
    auto imported = store.import_archive(dir + "/demo.tar");
    CHECK_TEXT(imported.ok(), imported.ok() ? "" : imported.error().message.c_str());
    CHECK(store.assemble_rootfs(imported.value().at(0), dir + "/rootfs").ok());
    check_whiteout_rootfs(dir + "/rootfs");
}

TEST(ImageStore, ADockerArchiveLayerSeenTwiceIsASymlink) {
    // docker save writes a layer it has written before as a symlink to it.
    ImageStore store = open();
    TestImage img = make_image(whiteout_layers(), {Compression::kPlain, Compression::kPlain});
    write_docker_archive(dir + "/demo.tar", img, "demo:linked", true);
    auto imported = store.import_archive(dir + "/demo.tar");
    CHECK_TEXT(imported.ok(), imported.ok() ? "" : imported.error().message.c_str());
    CHECK(store.assemble_rootfs(imported.value().at(0), dir + "/rootfs").ok());
    check_whiteout_rootfs(dir + "/rootfs");
}

TEST(ImageStore, ALayerThatIsNotItsDiffIdIsRefused) {
    ImageStore store = open();
    std::string other = make_tar({{TarEntry::kFile, "other", "x", "", 0644}});
    // Compressed: the uncompressed stream is checked against the config.
    TestImage gz = make_image(whiteout_layers(), {Compression::kGzip, Compression::kPlain});
    TestImage swapped = make_image({other}, {Compression::kGzip});
    gz.layers[0] = swapped.layers[0];
    rebuild_manifest(gz);
    write_oci_archive(dir + "/gz.tar", gz, "demo:1");
    auto r = store.import_archive(dir + "/gz.tar");
    CHECK(!r.ok());
    check_error(r.error(), {"blobs/sha256/" + digest_of(gz.layers[0]).substr(7),
                            "uncompressed content has digest " + swapped.diff_ids[0],
                            "the image config's diff_id is " + gz.diff_ids[0]});
    check_empty();
    // Uncompressed, in a docker-archive: its digest is its diff_id.
    TestImage plain = make_image(whiteout_layers(), {Compression::kPlain, Compression::kPlain});
    plain.layers[1] = other;
    write_docker_archive(dir + "/plain.tar", plain, "demo:1");
    auto p = store.import_archive(dir + "/plain.tar");
    CHECK(!p.ok());
    check_error(p.error(), {"layer1/layer.tar", "not rootfs.diff_ids[1]"});
    check_empty();
}

TEST(ImageStore, AMultiPlatformImageImportsThisMachinesManifest) {
    std::string amd = make_tar({{TarEntry::kFile, "arch", "amd64", "", 0644}});
    std::string arm = make_tar({{TarEntry::kFile, "arch", "arm64", "", 0644}});
    TestImage a = make_image({amd}, {Compression::kGzip}, "amd64");
    TestImage b = make_image({arm}, {Compression::kGzip}, "arm64");
    write_multi_platform_archive(dir + "/multi.tar", {a, b}, "example.com/multi:1");
    auto store = ImageStore::open(root, Platform{"linux", "arm64", "v8"});
    auto imported = store.value().import_archive(dir + "/multi.tar");
    CHECK_TEXT(imported.ok(), imported.ok() ? "" : imported.error().message.c_str());
    STRCMP_EQUAL("example.com/multi:1", imported.value().at(0).name.c_str());
    STRCMP_EQUAL(b.manifest_digest.c_str(), imported.value()[0].manifest_digest.c_str());
    CHECK(!fs::exists(store.value().layer_path(a.diff_ids[0])));  // the other platform's layer stays out
    CHECK(store.value().assemble_rootfs(imported.value()[0], dir + "/rootfs").ok());
    STRCMP_EQUAL("arm64", slurp(dir + "/rootfs/arch").c_str());

    fs::remove_all(root);
    auto riscv = ImageStore::open(root, Platform{"linux", "riscv64", ""});
    auto none = riscv.value().import_archive(dir + "/multi.tar");
    CHECK(!none.ok());
    check_error(none.error(), {"no manifest for linux/riscv64", "linux/amd64, linux/arm64"});
    check_empty();
}

TEST(ImageStore, FindsImagesByNameAndDigest) {
    ImageStore store = open();
    TestImage img = make_image(whiteout_layers(), {Compression::kGzip, Compression::kZstd});
    write_oci_archive(dir + "/demo.tar", img, "demo:1.0");
    CHECK(store.import_archive(dir + "/demo.tar").ok());
    CHECK(store.find("demo:1.0").ok());
    CHECK(store.find("docker.io/library/demo:1.0").ok());
    CHECK(store.find("demo@" + img.manifest_digest).ok());
    CHECK(store.find(img.manifest_digest).ok());
    auto absent = store.find("demo");  // demo:latest
    CHECK(!absent.ok());
    STRCMP_EQUAL("not_found", absent.error().code_name());
    CHECK(!store.find("Demo:1.0").ok());
    // A store opened again reads the same index.
    auto again = ImageStore::open(root, kAmd64);
    auto listed = again.value().list();
    LONGS_EQUAL(1, listed.value().size());
    STRCMP_EQUAL("docker.io/library/demo:1.0", listed.value()[0].name.c_str());
}

TEST(ImageStore, ReimportIsIdempotent) {
    ImageStore store = open();
    TestImage img = make_image(whiteout_layers(), {Compression::kGzip, Compression::kPlain});
    write_oci_archive(dir + "/demo.tar", img, "demo:1.0");
    write_docker_archive(dir + "/same.tar", img, "demo:1.0");
    CHECK(store.import_archive(dir + "/demo.tar").ok());
    std::string index = slurp(root + "/images.json");
    auto layer_mtime = fs::last_write_time(store.layer_path(img.diff_ids[0]));
    auto again = store.import_archive(dir + "/demo.tar");
    CHECK(again.ok());
    STRCMP_EQUAL(index.c_str(), slurp(root + "/images.json").c_str());
    LONGS_EQUAL(4, count_entries(root + "/blobs/sha256"));
    LONGS_EQUAL(2, count_entries(root + "/layers/sha256"));
    CHECK_TEXT(layer_mtime == fs::last_write_time(store.layer_path(img.diff_ids[0])),
               "a layer is not unpacked twice");
    // The same layers through a docker-archive: only the store-made manifest
    // can be new (it is the same when written as the fixture writes it).
    auto docker = store.import_archive(dir + "/same.tar");
    CHECK(docker.ok());
    bool new_manifest = docker.value().at(0).manifest_digest != img.manifest_digest;
    LONGS_EQUAL(4 + (new_manifest ? 1 : 0), count_entries(root + "/blobs/sha256"));
    LONGS_EQUAL(2, count_entries(root + "/layers/sha256"));
    LONGS_EQUAL(1, store.list().value().size());  // the name moved to the new manifest
}

TEST(ImageStore, ACorruptedBlobIsRefusedAndNothingIsLeft) {
    ImageStore store = open();
    TestImage img = make_image(whiteout_layers(), {Compression::kGzip, Compression::kPlain});
    std::string good = digest_of(img.layers[1]);
    img.layers[1][600] ^= 1;  // the manifest still names the good digest
    std::string archive = dir + "/bad.tar";
    // write_oci_archive names blobs by their content: put the bad bytes under the good name.
    write_oci_archive(archive, img, "demo:1.0",
                      {{TarEntry::kFile, "blobs/sha256/" + good.substr(7), img.layers[1], "", 0644}});
    auto r = store.import_archive(archive);
    CHECK(!r.ok());
    check_error(r.error(), {archive + ": blobs/sha256/" + good.substr(7), "digest mismatch",
                            "the descriptor says " + good});
    check_empty();
}

TEST(ImageStore, AMissingBlobOrWrongSizeIsRefused) {
    ImageStore store = open();
    TestImage img = make_image(whiteout_layers(), {Compression::kGzip, Compression::kPlain});
    std::string config = digest_of(img.config);
    // The config is gone: the archive has no member of that name.
    img.config += " ";
    write_oci_archive(dir + "/bad.tar", img, "demo:1.0");
    auto r = store.import_archive(dir + "/bad.tar");
    CHECK(!r.ok());
    check_error(r.error(), {"blobs/sha256/" + config.substr(7), "missing"});
    check_empty();
}

TEST(ImageStore, ALayerMemberWithDotDotIsRefused) {
    ImageStore store = open();
    std::string evil = make_tar(
        {{TarEntry::kFile, "etc/ok", "ok", "", 0644}, {TarEntry::kFile, "../escape", "gotcha", "", 0644}});
    TestImage img = make_image({evil}, {Compression::kGzip});
    write_oci_archive(dir + "/evil.tar", img, "evil:1");
    auto r = store.import_archive(dir + "/evil.tar");
    CHECK(!r.ok());
    check_error(r.error(), {dir + "/evil.tar: blobs/sha256/" + digest_of(img.layers[0]).substr(7),
                            "../escape", "\"..\" in the path: refused"});
    CHECK(!fs::exists(root + "/tmp/escape"));
    CHECK(!fs::exists(root + "/escape"));
    check_empty();
}

TEST(ImageStore, LayerMembersLeavingTheRootAreRefused) {
    struct Row {
        const char* rule;
        std::vector<TarEntry> entries;
        const char* error;
    } rows[] = {
        {"absolute member name", {{TarEntry::kFile, "/etc/passwd", "x", "", 0644}}, "absolute path: refused"},
        {"a member written through a symlink of the layer",
         {{TarEntry::kSymlink, "etc", "", "/etc", 0777}, {TarEntry::kFile, "etc/passwd", "x", "", 0644}},
         "written through the symlink etc"},
        {"a relative symlink climbing out",
         {{TarEntry::kDir, "a", "", "", 0755}, {TarEntry::kSymlink, "a/up", "", "../../etc", 0777}},
         "leads out of the image's root"},
        {"a hard link to outside", {{TarEntry::kHardlink, "x", "", "../../etc/passwd", 0644}}, "hard link"},
        {"a whiteout of ..", {{TarEntry::kFile, "a/.wh..", "", "", 0644}}, "whiteout"},
    };
    for (const auto& row : rows) {
        ImageStore store = open();
        TestImage img = make_image({make_tar(row.entries)}, {Compression::kPlain});
        write_oci_archive(dir + "/evil.tar", img, "evil:1");
        auto r = store.import_archive(dir + "/evil.tar");
        CHECK_TEXT(!r.ok(), row.rule);
        if (!r.ok())
            CHECK_TEXT(contains(r.error().message, row.error),
                       (row.rule + (": " + r.error().message)).c_str());
        check_empty();
    }
}

TEST(ImageStore, ArchiveMembersLeavingTheArchiveAreRefused) {
    ImageStore store = open();
    TestImage img = make_image(whiteout_layers(), {Compression::kGzip, Compression::kPlain});
    write_oci_archive(dir + "/evil.tar", img, "demo:1", {{TarEntry::kFile, "../../outside", "x", "", 0644}});
    auto r = store.import_archive(dir + "/evil.tar");
    CHECK(!r.ok());
    check_error(r.error(), {dir + "/evil.tar: ../../outside", "refused"});
    check_empty();
}

TEST(ImageStore, AFailedImportLeavesEarlierImagesAsTheyWere) {
    ImageStore store = open();
    TestImage img = make_image(whiteout_layers(), {Compression::kGzip, Compression::kPlain});
    write_oci_archive(dir + "/demo.tar", img, "demo:1.0");
    CHECK(store.import_archive(dir + "/demo.tar").ok());
    std::string index = slurp(root + "/images.json");
    TestImage bad = make_image({make_tar({{TarEntry::kFile, "../x", "", "", 0644}})}, {Compression::kGzip});
    write_oci_archive(dir + "/bad.tar", bad, "demo:1.0");
    CHECK(!store.import_archive(dir + "/bad.tar").ok());
    STRCMP_EQUAL(index.c_str(), slurp(root + "/images.json").c_str());
    LONGS_EQUAL(4, count_entries(root + "/blobs/sha256"));
    LONGS_EQUAL(0, count_entries(root + "/tmp"));
    CHECK(store.find("demo:1.0").ok());
}

// runtime.type cri: an archive is checked with every check of an import
// before containerd's ctr sees it, and nothing of it is kept here.
TEST(ImageStore, VerifyChecksEveryDigestAndKeepsNothing) {
    ImageStore store = open();
    TestImage img = make_image(whiteout_layers(), {Compression::kGzip, Compression::kPlain});
    write_oci_archive(dir + "/demo.tar", img, "demo:1.0");
    auto v = store.verify_archive(dir + "/demo.tar");
    CHECK_TEXT(v.ok(), v.ok() ? "" : v.error().message.c_str());
    LONGS_EQUAL(1, v.value().size());
    STRCMP_EQUAL("docker.io/library/demo:1.0", v.value()[0].name.c_str());
    // ctr keeps the annotation as written: the name to tag from.
    STRCMP_EQUAL("demo:1.0", v.value()[0].archive_name.c_str());
    STRCMP_EQUAL(img.manifest_digest.c_str(), v.value()[0].manifest_digest.c_str());
    check_empty();
    // A layer that is not its diff_id is refused even when the store has
    // a layer of that diff_id: the archive is checked, not the store.
    CHECK(store.import_archive(dir + "/demo.tar").ok());
    TestImage swapped =
        make_image({make_tar({{TarEntry::kFile, "other", "x", "", 0644}})}, {Compression::kGzip});
    img.layers[0] = swapped.layers[0];
    rebuild_manifest(img);
    write_oci_archive(dir + "/bad.tar", img, "demo:1.0");
    auto bad = store.verify_archive(dir + "/bad.tar");
    CHECK(!bad.ok());
    check_error(bad.error(), {dir + "/bad.tar: blobs/sha256/" + digest_of(img.layers[0]).substr(7),
                              "the image config's diff_id is " + img.diff_ids[0]});
    LONGS_EQUAL(0, count_entries(root + "/tmp"));
    // A docker-archive: ctr normalises RepoTags as we do, no archive_name.
    write_docker_archive(dir + "/docker.tar",
                         make_image(whiteout_layers(), {Compression::kPlain, Compression::kPlain}), "demo:2");
    auto d = store.verify_archive(dir + "/docker.tar");
    CHECK_TEXT(d.ok(), d.ok() ? "" : d.error().message.c_str());
    STRCMP_EQUAL("docker.io/library/demo:2", d.value().at(0).name.c_str());
    STRCMP_EQUAL("", d.value().at(0).archive_name.c_str());
}

TEST(ImageStore, NotAnImageArchive) {
    ImageStore store = open();
    std::ofstream(dir + "/junk.tar") << "this is not a tar archive at all";
    auto r = store.import_archive(dir + "/junk.tar");
    CHECK(!r.ok());
    check_error(r.error(), {dir + "/junk.tar"});
    std::ofstream(dir + "/empty.tar", std::ios::binary)
        << make_tar({{TarEntry::kFile, "hello", "x", "", 0644}});
    auto e = store.import_archive(dir + "/empty.tar");
    check_error(e.error(), {"neither an OCI image layout", "nor a docker-archive"});
    check_empty();
}

TEST(ImageStore, AnInterruptedImportIsClearedOnOpen) {
    // A crash mid-import leaves only its staging directory, never an image.
    fs::create_directories(root + "/tmp/import-abc123/layer-x");
    std::ofstream(root + "/tmp/import-abc123/m1") << "half a blob";
    ImageStore store = open();
    check_empty();
}

TEST(ImageStore, ADamagedIndexIsAnErrorNamingIt) {
    ImageStore store = open();
    std::ofstream(root + "/images.json") << "{\"images\": [{\"name\": 1}]}";
    auto r = store.find("busybox");
    CHECK(!r.ok());
    check_error(r.error(), {root + "/images.json", "not {name, digest}"});
    TestImage img = make_image(whiteout_layers(), {Compression::kGzip, Compression::kPlain});
    write_oci_archive(dir + "/demo.tar", img, "demo:1.0");
    auto i = store.import_archive(dir + "/demo.tar");
    CHECK(!i.ok());
    check_error(i.error(), {root + "/images.json"});
    LONGS_EQUAL(0, count_entries(root + "/tmp"));
    LONGS_EQUAL(0, count_entries(root + "/blobs/sha256"));  // the index is read before anything moves in
}

TEST(ImageStore, AssemblyWantsAnEmptyDirectory) {
    ImageStore store = open();
    TestImage img = make_image(whiteout_layers(), {Compression::kGzip, Compression::kPlain});
    write_oci_archive(dir + "/demo.tar", img, "demo:1.0");
    auto image = store.import_archive(dir + "/demo.tar").value().at(0);
    fs::create_directories(dir + "/busy");
    std::ofstream(dir + "/busy/file") << "x";
    auto r = store.assemble_rootfs(image, dir + "/busy");
    CHECK(!r.ok());
    check_error(r.error(), {dir + "/busy", "not empty"});
}

// A real image: tests/data/make_busybox_image.sh over Debian's busybox-static.
TEST(ImageStore, ImportsTheBusyboxImage) {
    if (::access("/bin/busybox", X_OK) != 0) {
        std::printf("\n  SKIPPED: /bin/busybox missing (apt-get install busybox-static)\n");
        return;
    }
    std::string archive = dir + "/busybox.tar";
    std::string cmd =
        std::string("bash ") + DAEMONLET_TEST_DATA + "/make_busybox_image.sh " + archive + " >/dev/null";
    LONGS_EQUAL(0, std::system(cmd.c_str()));
    ImageStore store = open();
    auto start = std::chrono::steady_clock::now();
    auto imported = store.import_archive(archive);
    auto import_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    CHECK_TEXT(imported.ok(), imported.ok() ? "" : imported.error().message.c_str());
    auto image = store.find("busybox").value();
    STRCMP_EQUAL("docker.io/library/busybox:latest", image.name.c_str());
    LONGS_EQUAL(1, image.config.cmd.size());
    STRCMP_EQUAL("sh", image.config.cmd[0].c_str());
    start = std::chrono::steady_clock::now();
    CHECK(store.assemble_rootfs(image, dir + "/rootfs").ok());
    auto assemble_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::string rootfs = dir + "/rootfs";
    CHECK(fs::is_symlink(rootfs + "/bin/sh"));
    STRCMP_EQUAL("busybox", fs::read_symlink(rootfs + "/bin/sh").c_str());
    for (const char* applet : {"sleep", "cat", "echo"})
        CHECK_TEXT(fs::is_symlink(rootfs + "/bin/" + applet), applet);
    CHECK(::access((rootfs + "/bin/busybox").c_str(), X_OK) == 0);
    STRCMP_EQUAL(slurp("/bin/busybox").c_str(), slurp(rootfs + "/bin/busybox").c_str());
    std::uintmax_t bytes = 0;
    for (const auto& e : fs::recursive_directory_iterator(rootfs))
        if (e.symlink_status().type() == fs::file_type::regular) bytes += e.file_size();
    std::printf("\n  busybox image: archive %ju bytes, import %.1f ms, assemble %.1f ms, rootfs %ju bytes\n",
                static_cast<std::uintmax_t>(fs::file_size(archive)), import_ms, assemble_ms, bytes);
}
