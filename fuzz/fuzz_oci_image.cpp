// libFuzzer target: what an image archive brings in, untrusted: image
// references (RepoTags, annotations) and the OCI index, manifest and config
// documents and docker-archive's manifest.json. Each input goes through
// every parser; none may crash, and an accepted reference must normalise to
// itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/image_reference.h"
#include "core/oci_image.h"

using namespace daemonlet;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    if (auto ref = normalize_image_reference(in); ref.ok()) {
        auto again = normalize_image_reference(ref.value().str());
        if (!again.ok() || again.value().str() != ref.value().str()) std::abort();
    }
    if (auto index = parse_image_index(in, "fuzz"); index.ok())
        (void)select_platform(index.value(), Platform{"linux", "arm", "v7"}, "fuzz");
    (void)parse_image_manifest(in, "fuzz");
    (void)parse_image_config(in, "fuzz");
    (void)parse_docker_archive_manifest(in, "fuzz");
    return 0;
}
