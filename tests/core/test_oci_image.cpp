// Image references and OCI image documents. Reference rows after
// distribution/reference's normalize_test.go (TestValidateReferenceName,
// TestParseDockerRef) and reference_test.go (TestReferenceParse), on the
// grammar of regexp.go; document rows after opencontainers/image-spec
// (descriptor.md, image-index.md, manifest.md, config.md, layer.md) and
// containerd's platforms matcher (platforms.Only).

#include <string>
#include <vector>

#include "core/image_reference.h"
#include "core/oci_image.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

const std::string kHex = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";
const std::string kHex2 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

struct RefRow {
    const char* rule;  // the upstream rule the row pins
    std::string input;
    std::string want;   // canonical form, or "" for an error
    std::string error;  // a substring of the error
};

const RefRow kRefRows[] = {
    // normalize.go splitDockerDomain + TagNameOnly.
    {"familiar name gets docker.io/library and latest", "busybox", "docker.io/library/busybox:latest", ""},
    {"library/ is docker.io's", "library/debian", "docker.io/library/debian:latest", ""},
    {"a user's repository on Docker Hub", "docker/docker", "docker.io/docker/docker:latest", ""},
    {"docker.io/x gets library/", "docker.io/debian", "docker.io/library/debian:latest", ""},
    {"index.docker.io is docker.io", "index.docker.io/library/debian", "docker.io/library/debian:latest", ""},
    {"index.docker.io/x gets library/", "index.docker.io/debian", "docker.io/library/debian:latest", ""},
    {"tag kept", "nothing:tag", "docker.io/library/nothing:tag", ""},
    {"tag may be upper case", "lowercase:Uppercase", "docker.io/library/lowercase:Uppercase", ""},
    {"digest only", "nothing@sha256:" + kHex, "docker.io/library/nothing@sha256:" + kHex, ""},
    {"ParseDockerRef: tag and digest keep the digest", "nothing:tag@sha256:" + kHex,
     "docker.io/library/nothing@sha256:" + kHex, ""},
    {"'sha256:<hex>' alone is the repository sha256 with a tag", "sha256:" + kHex,
     "docker.io/library/sha256:" + kHex, ""},
    {"a dot makes a domain", "gcr.io/library/foo", "gcr.io/library/foo:latest", ""},
    {"localhost is a domain", "localhost/foo", "localhost/foo:latest", ""},
    {"a port makes a domain", "test:5000/repo", "test:5000/repo:latest", ""},
    {"domain, port, path, tag", "127.0.0.1:5000/docker/docker:1.0", "127.0.0.1:5000/docker/docker:1.0", ""},
    {"domain with port and digest", "host:5000/x/y@sha256:" + kHex2, "host:5000/x/y@sha256:" + kHex2, ""},
    {"IPv6 domain with port", "[fc00::1]:5000/docker/docker", "[fc00::1]:5000/docker/docker:latest", ""},
    {"IPv6 domain", "[2001:db8::1]/repo", "[2001:db8::1]/repo:latest", ""},
    {"an upper-case first component is a domain", "Example/foo", "Example/foo:latest", ""},
    {"an IPv4 address alone is a repository", "192.168.0.1", "docker.io/library/192.168.0.1:latest", ""},
    {"no slash: the colon is a tag", "foo_bar.com:8080", "docker.io/library/foo_bar.com:8080", ""},
    {"punycode domain and tag", "xn--n3h.com/myimage:xn--n3h.com", "xn--n3h.com/myimage:xn--n3h.com", ""},
    {"sha512 digest", "xn--7o8h.com/myimage:xn--7o8h.com@sha512:" + kHex + kHex,
     "xn--7o8h.com/myimage@sha512:" + kHex + kHex, ""},
    {"separators: '.', '_', '__', '-+'", "x/a.b_c__d---e", "docker.io/x/a.b_c__d---e:latest", ""},
    {"a first component with a dot is a domain, and _ is no domain character", "a_b.c/d", "",
     "invalid reference format"},
    {"deep path", "sub-dom1.foo.com/bar/baz/quux:some-long-tag",
     "sub-dom1.foo.com/bar/baz/quux:some-long-tag", ""},
    // Errors.
    {"ErrNameEmpty", "", "", "at least one component"},
    {"anchoredIdentifierRegexp: 64 hex alone", kHex, "", "cannot specify 64-byte hexadecimal strings"},
    {"ParseNormalizedNamed: repository must be lowercase", "docker/Docker", "", "must be lowercase"},
    {"lowercase after a domain too", "test:5000/Uppercase/lowercase:tag", "", "must be lowercase"},
    {"Docker Hub path lowercase", "docker.io/docker/Docker", "", "must be lowercase"},
    {"a scheme is no domain", "https://github.com/docker/docker", "", "invalid reference format"},
    {"path component cannot start with '-'", "-docker", "", "invalid reference format"},
    {"domain component cannot start with '-'", "-docker.io/docker/docker", "", "invalid reference format"},
    {"empty path components", "docker///docker", "", "invalid reference format"},
    {"'___' is no separator", "a___b", "", "invalid reference format"},
    {"'._' is no separator", "a._b", "", "invalid reference format"},
    {"a domain needs a path", "[fc00::1]:5000", "", "invalid reference format"},
    {"IPv6 must be bracketed", "fc00::1:5000/debian", "", "invalid reference format"},
    {"no zone in IPv6", "[fe80::1%eth0]:5000/debian", "", "invalid reference format"},
    {"no IPv4 in IPv6", "[2001:db8:3:4::192.0.2.33]:5000/debian", "", "invalid reference format"},
    {"a tag needs a name", ":justtag", "", "invalid reference format"},
    {"a digest needs a name", "@sha256:" + kHex, "", "invalid reference format"},
    {"tag at most 128 characters", "foo:" + std::string(129, 'a'), "", "invalid reference format"},
    {"bad characters", "aa/asdf$$^/aa", "", "invalid reference format"},
    {"go-digest: sha256 is 64 hex", "repo@sha256:" + kHex.substr(0, 60), "", "invalid digest format"},
    {"go-digest: hex is lower case", "repo@sha256:" + std::string(64, 'F'), "", "invalid digest format"},
    {"go-digest: unregistered algorithm", "validname@invaliddigest:" + kHex, "",
     "unsupported digest algorithm"},
    {"NameTotalLengthMax 255", "a/" + std::string(254, 'a'), "", "not be more than 255 characters"},
};

}  // namespace

TEST_GROUP(ImageReference){};

TEST(ImageReference, NormalisesAsDistributionReference) {
    for (const auto& row : kRefRows) {
        auto r = normalize_image_reference(row.input);
        if (row.want.empty()) {
            CHECK_TEXT(!r.ok(), row.rule);
            if (!r.ok()) CHECK_TEXT(r.error().message.find(row.error) != std::string::npos, row.rule);
        } else {
            CHECK_TEXT(r.ok(), row.rule);
            if (r.ok()) STRCMP_EQUAL_TEXT(row.want.c_str(), r.value().str().c_str(), row.rule);
        }
    }
}

TEST(ImageReference, SplitsDomainPathTagDigest) {
    auto r = normalize_image_reference("host:5000/x/y:1.2");
    CHECK(r.ok());
    STRCMP_EQUAL("host:5000", r.value().domain.c_str());
    STRCMP_EQUAL("x/y", r.value().path.c_str());
    STRCMP_EQUAL("1.2", r.value().tag.c_str());
    STRCMP_EQUAL("", r.value().digest.c_str());
    STRCMP_EQUAL("host:5000/x/y", r.value().name().c_str());
}

TEST(ImageReference, ErrorQuotesTheInput) {
    auto r = normalize_image_reference("docker/Docker");
    CHECK(!r.ok());
    STRCMP_EQUAL(
        "image reference \"docker/Docker\": invalid reference format: repository name (docker/Docker) must "
        "be "
        "lowercase",
        r.error().message.c_str());
}

TEST(ImageReference, Sha256DigestsOnlyAreVerifiable) {
    CHECK(is_sha256_digest("sha256:" + kHex2));
    CHECK(!is_sha256_digest("sha256:" + kHex2.substr(1)));
    CHECK(!is_sha256_digest("sha512:" + kHex2 + kHex2));
    CHECK(!is_sha256_digest("sha256:" + std::string(64, 'A')));
}

namespace {

std::string desc(const std::string& media, const std::string& hex, long size, const std::string& extra = "") {
    return "{\"mediaType\":\"" + media + "\",\"digest\":\"sha256:" + hex +
           "\",\"size\":" + std::to_string(size) + extra + "}";
}
const std::string kOciLayer = "application/vnd.oci.image.layer.v1.tar";
const std::string kOciGzip = "application/vnd.oci.image.layer.v1.tar+gzip";
const std::string kOciConfig = "application/vnd.oci.image.config.v1+json";

std::string manifest(const std::string& layers, const std::string& config = "",
                     const std::string& media = "application/vnd.oci.image.manifest.v1+json") {
    return "{\"schemaVersion\":2,\"mediaType\":\"" + media +
           "\",\"config\":" + (config.empty() ? desc(kOciConfig, kHex, 10) : config) + ",\"layers\":[" +
           layers + "]}";
}

struct DocRow {
    const char* rule;
    std::string json;
    std::string error;  // "" when valid
};

const DocRow kManifestRows[] = {
    {"manifest.md: an OCI manifest", manifest(desc(kOciLayer, kHex, 1) + "," + desc(kOciGzip, kHex2, 2)), ""},
    {"manifest.md: no layers is an image too", manifest(""), ""},
    {"Docker v2 schema 2, docker config and gzip layer",
     manifest(desc("application/vnd.docker.image.rootfs.diff.tar.gzip", kHex, 5),
              desc("application/vnd.docker.container.image.v1+json", kHex2, 3),
              "application/vnd.docker.distribution.manifest.v2+json"),
     ""},
    {"layer.md: tar+zstd", manifest(desc("application/vnd.oci.image.layer.v1.tar+zstd", kHex, 1)), ""},
    {"manifest.md: schemaVersion must be 2",
     "{\"schemaVersion\":1,\"config\":" + desc(kOciConfig, kHex, 1) + ",\"layers\":[]}",
     "schemaVersion: must be 2"},
    {"manifest.md: config required", "{\"schemaVersion\":2,\"layers\":[]}", "config: required"},
    {"an artifact's config is no image config", manifest("", desc("application/vnd.example+json", kHex, 1)),
     "is not an image config"},
    {"layer.md: non-distributable layers are not carried",
     manifest(desc("application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", kHex, 1)),
     "non-distributable"},
    {"unknown layer media type", manifest(desc("application/x-tar", kHex, 1)), "layers[0].mediaType"},
    {"descriptor.md: digest required", manifest("{\"mediaType\":\"" + kOciLayer + "\",\"size\":1}"),
     "layers[0].digest: required"},
    {"descriptor.md: sha256 is 64 lower-case hex", manifest(desc(kOciLayer, kHex.substr(2), 1)),
     "layers[0].digest: invalid digest format"},
    {"only sha256 verifiable here",
     manifest("{\"mediaType\":\"" + kOciLayer + "\",\"digest\":\"sha512:" + kHex + kHex + "\",\"size\":1}"),
     "only sha256"},
    {"descriptor.md: size is a non-negative integer", manifest(desc(kOciLayer, kHex, -1)),
     "layers[0].size: must be a non-negative integer"},
    {"descriptor.md: size required",
     manifest("{\"mediaType\":\"" + kOciLayer + "\",\"digest\":\"sha256:" + kHex + "\"}"),
     "layers[0].size: required"},
    {"an index is no manifest",
     "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":[]}",
     "is not an image manifest media type"},
    {"not JSON", "{\"schemaVersion\":", "not JSON"},
    {"nesting bounded", std::string(100, '[') + std::string(100, ']'), "nesting deeper than"},
};

}  // namespace

TEST_GROUP(OciImage){};

TEST(OciImage, ManifestsValidatedAsImageSpec) {
    for (const auto& row : kManifestRows) {
        auto m = parse_image_manifest(row.json, "m.json");
        if (row.error.empty()) {
            CHECK_TEXT(m.ok(), (std::string(row.rule) + ": " + (m.ok() ? "" : m.error().message)).c_str());
        } else {
            CHECK_TEXT(!m.ok(), row.rule);
            if (!m.ok())
                CHECK_TEXT(m.error().message.find(row.error) != std::string::npos,
                           (std::string(row.rule) + ": " + m.error().message).c_str());
        }
    }
}

TEST(OciImage, ManifestFieldsAndErrorsNameTheDocument) {
    auto m =
        parse_image_manifest(manifest(desc(kOciLayer, kHex, 7) + "," + desc(kOciGzip, kHex2, 9)), "x.tar: m");
    CHECK(m.ok());
    STRCMP_EQUAL(kOciConfig.c_str(), m.value().config.media_type.c_str());
    LONGS_EQUAL(2, m.value().layers.size());
    STRCMP_EQUAL(("sha256:" + kHex2).c_str(), m.value().layers[1].digest.c_str());
    LONGS_EQUAL(9, m.value().layers[1].size);
    auto bad = parse_image_manifest(manifest(desc(kOciLayer, kHex, -1)), "x.tar: blobs/sha256/ab");
    STRCMP_EQUAL("x.tar: blobs/sha256/ab: layers[0].size: must be a non-negative integer (got -1)",
                 bad.error().message.c_str());
}

TEST(OciImage, ManifestMediaTypeMustMatchItsDescriptor) {
    // manifest.md: the descriptor's mediaType and the manifest's must agree.
    auto m = parse_image_manifest(manifest(""), "m", "application/vnd.docker.distribution.manifest.v2+json");
    CHECK(!m.ok());
    CHECK(m.error().message.find("differs from the descriptor's") != std::string::npos);
}

TEST(OciImage, ConfigGivesTheProcessDefaults) {
    std::string json = R"({"architecture":"arm","os":"linux","variant":"v7",
        "config":{"User":"1000:1000","Env":["PATH=/bin","EMPTY="],"Entrypoint":["/bin/sh","-c"],
                  "Cmd":["echo hi"],"WorkingDir":"/srv"},
        "rootfs":{"type":"layers","diff_ids":["sha256:)" +
                       kHex + R"("]}})";
    auto c = parse_image_config(json, "c");
    CHECK(c.ok());
    STRCMP_EQUAL("linux/arm/v7", platform_string(c.value().platform).c_str());
    STRCMP_EQUAL("1000:1000", c.value().user.c_str());
    LONGS_EQUAL(2, c.value().env.size());
    STRCMP_EQUAL("EMPTY=", c.value().env[1].c_str());
    LONGS_EQUAL(2, c.value().entrypoint.size());
    STRCMP_EQUAL("echo hi", c.value().cmd[0].c_str());
    STRCMP_EQUAL("/srv", c.value().working_dir.c_str());
    LONGS_EQUAL(1, c.value().diff_ids.size());
}

TEST(OciImage, ConfigRules) {
    const std::string rootfs = R"("rootfs":{"type":"layers","diff_ids":[]})";
    const DocRow rows[] = {
        {"config.md: Cmd and Entrypoint may be null",
         R"({"architecture":"amd64","os":"linux","config":{"Cmd":null,"Entrypoint":null},)" + rootfs + "}",
         ""},
        {"config.md: config may be absent", R"({"architecture":"amd64","os":"linux",)" + rootfs + "}", ""},
        {"config.md: architecture required", R"({"os":"linux",)" + rootfs + "}", "architecture: required"},
        {"config.md: os required", R"({"architecture":"amd64",)" + rootfs + "}", "os: required"},
        {"config.md: Env is VARNAME=VARVALUE",
         R"({"architecture":"amd64","os":"linux","config":{"Env":["NOEQUALS"]},)" + rootfs + "}",
         "config.Env[0]: \"NOEQUALS\" is not NAME=value"},
        {"config.md: Cmd is an array of strings",
         R"({"architecture":"amd64","os":"linux","config":{"Cmd":"sh"},)" + rootfs + "}",
         "config.Cmd: must be"},
        {"config.md: rootfs required", R"({"architecture":"amd64","os":"linux"})", "rootfs: required"},
        {"config.md: rootfs.type is layers",
         R"({"architecture":"amd64","os":"linux","rootfs":{"type":"x","diff_ids":[]}})", "rootfs.type"},
        {"config.md: diff_ids are digests",
         R"({"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:12"]}})",
         "rootfs.diff_ids[0]"},
    };
    for (const auto& row : rows) {
        auto c = parse_image_config(row.json, "c");
        CHECK_EQUAL_TEXT(row.error.empty(), c.ok(), row.rule);
        if (!c.ok() && !row.error.empty())
            CHECK_TEXT(c.error().message.find(row.error) != std::string::npos,
                       (std::string(row.rule) + ": " + c.error().message).c_str());
    }
}

TEST(OciImage, DockerArchiveManifest) {
    auto ok = parse_docker_archive_manifest(
        R"([{"Config":"abc.json","RepoTags":["busybox:latest"],"Layers":["l1/layer.tar","l2/layer.tar"]}])",
        "m");
    CHECK(ok.ok());
    STRCMP_EQUAL("abc.json", ok.value()[0].config.c_str());
    STRCMP_EQUAL("busybox:latest", ok.value()[0].repo_tags[0].c_str());
    LONGS_EQUAL(2, ok.value()[0].layers.size());
    auto untagged =
        parse_docker_archive_manifest(R"([{"Config":"a.json","RepoTags":null,"Layers":[]}])", "m");
    CHECK(untagged.ok());
    CHECK(!parse_docker_archive_manifest("[]", "m").ok());
    auto no_config = parse_docker_archive_manifest(R"([{"Layers":[]}])", "x.tar: manifest.json");
    STRCMP_EQUAL("x.tar: manifest.json: [0].Config: required", no_config.error().message.c_str());
}

TEST(OciImage, IndexRules) {
    const std::string plat = R"(,"platform":{"os":"linux","architecture":"amd64"})";
    const DocRow rows[] = {
        {"image-index.md: an OCI index",
         R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[)" +
             desc("application/vnd.oci.image.manifest.v1+json", kHex, 100, plat) + "]}",
         ""},
        {"image-index.md: mediaType is optional (oci-layout index.json)",
         R"({"schemaVersion":2,"manifests":[)" + desc("application/vnd.oci.image.manifest.v1+json", kHex, 1) +
             "]}",
         ""},
        {"Docker manifest list",
         R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.list.v2+json","manifests":[)" +
             desc("application/vnd.docker.distribution.manifest.v2+json", kHex, 1, plat) + "]}",
         ""},
        {"image-index.md: manifests required", R"({"schemaVersion":2})", "manifests: required"},
        {"image-index.md: platform needs os and architecture",
         R"({"schemaVersion":2,"manifests":[)" +
             desc("application/vnd.oci.image.manifest.v1+json", kHex, 1, R"(,"platform":{"os":"linux"})") +
             "]}",
         "manifests[0].platform.architecture: required"},
        {"a manifest is no index", manifest(""), "is not an image index media type"},
        {"annotations are strings",
         R"({"schemaVersion":2,"manifests":[)" +
             desc("application/vnd.oci.image.manifest.v1+json", kHex, 1, R"(,"annotations":{"a":1})") + "]}",
         "manifests[0].annotations.a: must be a string"},
    };
    for (const auto& row : rows) {
        auto i = parse_image_index(row.json, "index.json");
        CHECK_EQUAL_TEXT(row.error.empty(), i.ok(), row.rule);
        if (!i.ok() && !row.error.empty())
            CHECK_TEXT(i.error().message.find(row.error) != std::string::npos,
                       (std::string(row.rule) + ": " + i.error().message).c_str());
    }
}

namespace {

Descriptor entry(const std::string& arch, const std::string& variant, char hex) {
    Descriptor d;
    d.media_type = "application/vnd.oci.image.manifest.v1+json";
    d.digest = "sha256:" + std::string(64, hex);
    d.platform = Platform{"linux", arch, variant};
    return d;
}

}  // namespace

TEST(OciImage, PlatformSelectionAsContainerdMatcher) {
    ImageIndex multi{"",
                     {entry("amd64", "", 'a'), entry("arm64", "v8", 'b'), entry("arm", "v7", 'c'),
                      entry("arm", "v6", 'd'), entry("riscv64", "", 'e')}};
    ImageIndex old_arm{"", {entry("arm", "v6", '6'), entry("arm", "v5", '5')}};
    ImageIndex arm64_no_variant{"", {entry("arm64", "", 'f')}};
    ImageIndex only_v7{"", {entry("arm", "v7", '7')}};
    struct Row {
        const char* rule;
        const ImageIndex* index;
        Platform want;
        char hex;  // 0: no match
    } rows[] = {
        {"os and architecture equal", &multi, {"linux", "amd64", ""}, 'a'},
        {"arm64: no variant is v8", &multi, {"linux", "arm64", ""}, 'b'},
        {"arm64 image without variant is v8", &arm64_no_variant, {"linux", "arm64", "v8"}, 'f'},
        {"arm: no variant is v7", &multi, {"linux", "arm", ""}, 'c'},
        {"arm v6 exact before older", &multi, {"linux", "arm", "v6"}, 'd'},
        {"arm v7 runs v6, the newest older first", &old_arm, {"linux", "arm", "v7"}, '6'},
        {"arm v6 does not run v7", &only_v7, {"linux", "arm", "v6"}, 0},
        {"no such architecture", &old_arm, {"linux", "amd64", ""}, 0},
        {"os must match", &multi, {"windows", "amd64", ""}, 0},
    };
    for (const auto& row : rows) {
        auto d = select_platform(*row.index, row.want, "idx");
        CHECK_EQUAL_TEXT(row.hex != 0, d.ok(), row.rule);
        if (d.ok() && row.hex)
            STRCMP_EQUAL_TEXT(("sha256:" + std::string(64, row.hex)).c_str(), d.value().digest.c_str(),
                              row.rule);
    }
    auto none = select_platform(old_arm, {"linux", "amd64", ""}, "x.tar: blobs/sha256/ab");
    STRCMP_EQUAL(
        "x.tar: blobs/sha256/ab: no manifest for linux/amd64 (the index has linux/arm/v6, linux/arm/v5)",
        none.error().message.c_str());
}

TEST(OciImage, HostPlatformFromUname) {
    STRCMP_EQUAL("linux/amd64", platform_string(host_platform("amd64", "x86_64")).c_str());
    STRCMP_EQUAL("linux/arm64/v8", platform_string(host_platform("arm64", "aarch64")).c_str());
    STRCMP_EQUAL("linux/arm/v7", platform_string(host_platform("arm", "armv7l")).c_str());
    STRCMP_EQUAL("linux/arm/v6", platform_string(host_platform("arm", "armv6l")).c_str());
    STRCMP_EQUAL("linux/arm/v7", platform_string(host_platform("arm", "arm")).c_str());
}

TEST(OciImage, LayerCompressionByMediaType) {
    CHECK(layer_compression("application/vnd.oci.image.layer.v1.tar").value() == LayerCompression::kNone);
    CHECK(layer_compression("application/vnd.oci.image.layer.v1.tar+gzip").value() ==
          LayerCompression::kGzip);
    CHECK(layer_compression("application/vnd.docker.image.rootfs.diff.tar.gzip").value() ==
          LayerCompression::kGzip);
    CHECK(layer_compression("application/vnd.oci.image.layer.v1.tar+zstd").value() ==
          LayerCompression::kZstd);
    CHECK(!layer_compression("application/vnd.docker.image.rootfs.foreign.diff.tar.gzip").ok());
    CHECK(!layer_compression("text/plain").ok());
}
