// libFuzzer target: what the API server sends, as the cluster source reads
// it: a watch stream (split at an arbitrary point, as chunks arrive) fed to
// the reflector, the same bytes as a list page, and as the board's Node read
// before a status post (registerNode: core/node_status.h), as a
// TokenRequest's answer (core/service_account.h), and as the
// ControllerRevisions and Pods read for the board's Pods (podStatus:
// core/daemon_pod.h, core/pod_api_status.h). The page is parsed by
// core/json_parse and compared with nlohmann's own parser.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/daemon_pod.h"
#include "core/json_diff.h"
#include "core/json_parse.h"
#include "core/manifest.h"
#include "core/node_status.h"
#include "core/pod_api_status.h"
#include "core/reflector.h"
#include "core/service_account.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace daemonlet;
    std::string_view in(reinterpret_cast<const char*>(data), size);
    Reflector r({"/apis/apps/v1/daemonsets", "apps/v1", "DaemonSet", "", "", 500});
    (void)r.begin(0, 0.5);
    // The agent parses API answers with parse_json (linear in an object's
    // keys); it must build what nlohmann's own parser builds, and refuse
    // what it refuses.
    Json page = parse_json(in);
    const Json theirs = Json::parse(in, nullptr, false);
    if (page.is_discarded() != theirs.is_discarded() || (!page.is_discarded() && page != theirs))
        __builtin_trap();
    if (!page.is_discarded()) {
        (void)r.on_list_page(page);
        NodeStatusInput node;
        node.ips = {"192.168.1.20"};
        node.hostname = "board";
        Json status = node_status(node, &page, 1'700'000'000'000);
        (void)node_status_patch(page, status, {{"kubernetes.io/os", "linux"}});
        (void)node_status_changed(page, status);
        if (auto t = parse_token_request(page); t.ok()) (void)token_requires_refresh(t.value(), 0, 0);
        static const DaemonSet ds = [] {
            LoadedManifest m = load_manifest(
                R"({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "a", "namespace": "n",
                    "uid": "u"}, "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {"metadata":
                    {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})",
                "fuzz");
            return std::get<DaemonSet>(m.objects.at(0).object);
        }();
        for (const auto& rev : cluster_revisions(ds, page)) (void)daemon_pod_object(ds, rev, "board");
        for (const Json& pod : controlled_pods(page, "u", "board", true)) {
            const Json& old = json_member(pod, "status");
            Json next = pod_api_status(PodRecord{}, PodStatusContext{});
            keep_transition_times(next, old, "2026-01-01T00:00:00Z");
            (void)pod_status_patch(old, next, json_text(json_member(pod, "metadata"), "uid"));
        }
    }
    (void)parse_rfc3339(std::string(in.substr(0, 64)));
    (void)api_server_host_port(std::string(in.substr(0, 256)));
    (void)r.begin(1, 0.5);
    WatchDecoder d(64 * 1024);
    std::size_t cut = size ? data[0] % (size + 1) : 0;
    std::int64_t now = 2;
    for (std::string_view part : {in.substr(0, cut), in.substr(cut)}) {
        auto events = d.feed(part);
        if (!events.ok()) {
            r.on_failure(0, false, 0, now, 0.5);
            break;
        }
        for (const auto& ev : events.value()) (void)r.on_watch_event(ev, ++now, 0.5);
    }
    r.on_watch_end(now + 2000, 0.5);
    (void)r.begin(now + 100'000, 0.5);
    return 0;
}
