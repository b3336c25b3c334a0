// libFuzzer target: the whole manifest path (YAML/JSON parse, conversion,
// defaults, decode, validation, decision and template hash) on arbitrary
// bytes, every kind a published install file holds (ConfigMaps, Secrets with
// base64 data, static Pods, any other kind). Nothing may crash, hang, leak
// or read out of bounds.
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
    std::size_t bytes = 0;
    for (const auto& o : m.objects) {
        (void)describe_object(o);
        if (const auto* s = std::get_if<Secret>(&o.object))
            for (const auto& [k, v] : s->data) bytes += k.size() + v.size();
        if (const auto* cm = std::get_if<ConfigMap>(&o.object))
            for (const auto& [k, v] : cm->binary_data) bytes += k.size() + v.size();
    }
    (void)bytes;
    for (const auto& e : m.errors) (void)e.to_string();
    return 0;
}
