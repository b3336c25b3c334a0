// What daemonlet-image reads of containerd's CLI: `ctr images ls`'s table,
// ctr's errors (containerd down is told from a bad archive), and the
// command line. The import itself, with a real containerd, is checked end to
// end by tests/agent/test_cri_import.sh.

#include <string>
#include <vector>

#include "platform/image/containerd_images.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::platform;

TEST_GROUP(ContainerdImages){};

// Rows as containerd 1.6's ctr prints them (cmd/ctr/commands/images
// images.go listCommand: tabwriter columns REF TYPE DIGEST SIZE PLATFORMS
// LABELS; an image the CRI plugin knows carries io.cri-containerd.image).
TEST(ContainerdImages, ParsesCtrImagesLs) {
    struct Row {
        const char* name;
        std::string output;
        bool ok;
        std::vector<CtrImage> expected;
        const char* error;
    };
    const std::string d1 = "sha256:68b28343fb1a087b9b1918da46fb15e313c6de001ad0f687ea2a40f8e2a8ce41";
    const std::string d2 = "sha256:57aa3dedb61f74d426d5d12ee9aa4c493ff9f411ecae02e6a77c63090d290c94";
    const std::string header =
        "REF                              TYPE                                       DIGEST  SIZE       "
        "PLATFORMS   LABELS \n";
    const Row rows[] = {
        {"an empty namespace: the header alone", header, true, {}, ""},
        {"no output at all (ctr prints nothing for none)", "", true, {}, ""},
        {"named, by-config-digest and multi-platform rows",
         header + "127.0.0.1:9/daemonlet/archived:1 application/vnd.oci.image.manifest.v1+json " + d1 +
             " 1004.6 KiB linux/amd64 io.cri-containerd.image=managed \n" + d2 +
             " application/vnd.oci.image.manifest.v1+json " + d1 +
             " 1004.6 KiB linux/amd64 io.cri-containerd.image=managed \n" +
             "docker.io/library/busybox:latest application/vnd.oci.image.index.v1+json " + d2 +
             " 2.1 MiB linux/amd64,linux/arm64/v8 - \n",
         true,
         {{"127.0.0.1:9/daemonlet/archived:1", d1}, {d2, d1}, {"docker.io/library/busybox:latest", d2}},
         ""},
        {"not ctr's header", "NAME DIGEST\nx sha256:aa\n", false, {}, "unexpected header"},
        {"a row without a digest",
         header + "busybox:1 application/vnd.oci.image.manifest.v1+json\n",
         false,
         {},
         "no digest in the row \"busybox:1"},
    };
    for (const Row& row : rows) {
        auto r = parse_ctr_images(row.output);
        CHECK_EQUAL_TEXT(row.ok, r.ok(), row.name);
        if (!row.ok) {
            CHECK_TEXT(r.error().message.find(row.error) != std::string::npos,
                       (std::string(row.name) + ": " + r.error().message).c_str());
            continue;
        }
        LONGS_EQUAL_TEXT(row.expected.size(), r.value().size(), row.name);
        for (std::size_t i = 0; i < row.expected.size(); ++i) {
            STRCMP_EQUAL_TEXT(row.expected[i].name.c_str(), r.value()[i].name.c_str(), row.name);
            STRCMP_EQUAL_TEXT(row.expected[i].digest.c_str(), r.value()[i].digest.c_str(), row.name);
        }
    }
}

// containerd down is "unavailable" (the agent tries again later); anything
// else is the archive's failure, with ctr's own words.
TEST(ContainerdImages, CtrErrorsTellContainerdDownFromAFailure) {
    struct Row {
        const char* name;
        int exit_code;
        std::string err;
        const char* code;
        const char* message;
    };
    const Row rows[] = {
        {"no socket", 1,
         "ctr: failed to dial \"/run/x.sock\": context deadline exceeded: connection error: desc = "
         "\"transport: error while dialing: dial unix:///run/x.sock: timeout\"\n",
         "unavailable", "a.tar: ctr images import: ctr: failed to dial \"/run/x.sock\""},
        {"containerd refuses the content", 1, "ctr: failed to extract layer: unexpected EOF\n", "ctr_failed",
         "a.tar: ctr images import: ctr: failed to extract layer: unexpected EOF"},
        {"silent failure", 2, "", "ctr_failed", "a.tar: ctr images import: exit status 2"},
    };
    for (const Row& row : rows) {
        Error e = ctr_error("a.tar: ctr images import", row.exit_code, row.err);
        STRCMP_EQUAL_TEXT(row.code, e.code_name(), row.name);
        CHECK_TEXT(e.message.find(row.message) != std::string::npos,
                   (std::string(row.name) + ": " + e.message).c_str());
        CHECK_TEXT(e.message.back() != '\n', row.name);
    }
}

// The CRI plugin's namespace, the socket without its scheme, and a connect
// timeout so that a containerd that is down answers within seconds.
TEST(ContainerdImages, CtrCommandLine) {
    CtrOptions o;
    o.address = "unix:///run/containerd/containerd.sock";
    o.ctr = "/usr/bin/ctr";
    const std::vector<std::string> expected = {"/usr/bin/ctr", "--address", "/run/containerd/containerd.sock",
                                               "--namespace",  "k8s.io",    "--connect-timeout",
                                               "5s",           "images",    "ls"};
    auto argv = ctr_command(o, {"images", "ls"});
    LONGS_EQUAL(expected.size(), argv.size());
    for (std::size_t i = 0; i < expected.size(); ++i) STRCMP_EQUAL(expected[i].c_str(), argv[i].c_str());
    o.address = "/run/k3s/containerd/containerd.sock";
    STRCMP_EQUAL("/run/k3s/containerd/containerd.sock", ctr_command(o, {})[2].c_str());
}
