// libFuzzer target: the whole manifest path (YAML/JSON parse, conversion,
// defaults, decode, validation, decision and template hash) on arbitrary
// bytes. Nothing may crash, hang, leak or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "core/decision.h"
#include "core/manifest.h"
#include "core/template_hash.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace daemonlet;
    ManifestLimits limits;
    limits.max_bytes = 256 * 1024;  // keep iterations fast; the limit itself is tested elsewhere
    auto m = load_manifest(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.yaml", limits);
    const Node* node = nullptr;
    for (const auto& o : m.objects)
        if (const auto* n = std::get_if<Node>(&o.object)) node = n;
    Node fallback;
    fallback.metadata.name = "fuzz-node";
    for (const auto& o : m.objects) {
        if (const auto* ds = std::get_if<DaemonSet>(&o.object)) {
            (void)node_should_run_daemon_pod(node ? *node : fallback, *ds);
            (void)template_hash(ds->object["spec"]["template"]);
        }
    }
    for (const auto& e : m.errors) (void)e.to_string();
    return 0;
}
