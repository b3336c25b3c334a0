// daemonlet describe pod NAME: kubectl describe for one pod of this node
// (describePod's fields that the store has): its status, a rejection's
// reason and message, who controls it (its DaemonSet, or the Node for a
// static pod, as the API server's mirror pod says) and its containers.
// Reads the store read-only.
#include <cstdio>

#include "agent/cli/cli.h"
#include "agent/cli/operator_view.h"
#include "core/pod.h"
#include "platform/system_info.h"

namespace daemonlet::agent {
namespace {

// kubectl's describe times: RFC 1123 with a numeric zone, in UTC;
// "<unknown>" for none, or for one recorded before the clock was set
// (core/wall_clock.h), as kubectl prints a zero time.
std::string rfc1123z(std::int64_t ms, std::int64_t now) {
    return utc_time(ms, now, "%a, %d %b %Y %H:%M:%S +0000").value_or("<unknown>");
}

void print_container(const ContainerStatus& c, const std::string& runtime, std::int64_t now) {
    std::printf("  %s:\n", c.name.c_str());
    if (!c.runtime_id.empty())
        std::printf("    Container ID:   %s://%s\n", runtime.c_str(), c.runtime_id.c_str());
    if (c.state == ContainerState::Running) {
        std::printf("    State:          Running\n      Started:      %s\n",
                    rfc1123z(c.started_at_ms, now).c_str());
    } else if (c.state == ContainerState::Terminated) {
        std::printf("    State:          Terminated\n      Reason:       %s\n      Exit Code:    %d\n",
                    c.reason.c_str(), c.exit_code);
        std::printf("      Started:      %s\n      Finished:     %s\n",
                    rfc1123z(c.started_at_ms, now).c_str(), rfc1123z(c.finished_at_ms, now).c_str());
    } else {
        std::printf("    State:          Waiting\n      Reason:       %s\n", c.reason.c_str());
        if (!c.message.empty()) std::printf("      Message:      %s\n", c.message.c_str());
    }
    std::printf("    Ready:          %s\n    Restart Count:  %d\n", c.ready ? "True" : "False",
                c.restart_count);
}

}  // namespace

int describe_pod(store::Store& store, const AgentConfig& cfg, const std::string& ns,
                 const std::string& name) {
    const std::int64_t now = platform::wall_clock_ms();
    auto pods = store.list_pods();
    if (!pods.ok()) {
        std::fprintf(stderr, "error: %s\n", pods.error().message.c_str());
        return 1;
    }
    for (const PodRecord& p : pods.value()) {
        if (p.namespace_ != ns || p.name != name) continue;
        std::printf("Name:             %s\nNamespace:        %s\nNode:             %s\n", p.name.c_str(),
                    p.namespace_.c_str(), cfg.node_name.c_str());
        std::printf("Start Time:       %s\n", rfc1123z(p.created_at_ms, now).c_str());
        if (p.is_static())
            std::printf(
                "Annotations:      kubernetes.io/config.hash: %s\n"
                "                  kubernetes.io/config.source: file\n"
                "                  daemonlet.io/manifest-file: %s\n",
                p.uid.c_str(), p.source.c_str());
        std::printf("Status:           %s\n", p.deleting ? "Terminating" : to_string(p.phase));
        if (!p.reason.empty())
            std::printf("Reason:           %s\nMessage:          %s\n", p.reason.c_str(), p.message.c_str());
        if (!p.pod_ips.empty()) std::printf("IP:               %s\n", p.pod_ips.front().c_str());
        std::printf("Controlled By:    %s/%s\n", p.is_static() ? "Node" : "DaemonSet",
                    p.is_static() ? cfg.node_name.c_str() : p.daemonset.c_str());
        if (!p.init_containers.empty()) std::printf("Init Containers:\n");
        for (const auto& c : p.init_containers) print_container(c, cfg.runtime_type, now);
        std::printf("Containers:\n");
        for (const auto& c : p.containers) print_container(c, cfg.runtime_type, now);
        return kExitOk;
    }
    std::fprintf(stderr, "Error from server (NotFound): pods \"%s\" not found\n", name.c_str());
    return 1;
}

}  // namespace daemonlet::agent
