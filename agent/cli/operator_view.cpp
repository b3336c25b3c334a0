#include "agent/cli/operator_view.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "core/decode.h"
#include "core/wall_clock.h"

namespace daemonlet::agent {

std::string control_socket_path(const AgentConfig& cfg) { return cfg.state_dir + "/daemonlet.sock"; }

Result<std::unique_ptr<platform::LineJsonClient>> connect_agent(const AgentConfig& cfg) {
    auto client = std::make_unique<platform::LineJsonClient>();
    auto c = client->connect(control_socket_path(cfg));
    if (!c.ok()) {
        if (c.error().code == ErrorCode::NotRunning)
            return Error{ErrorCode::NotRunning, "the agent is not running (" + c.error().message + ")"};
        return c.error();
    }
    return client;
}

Result<Json> ask_agent(platform::LineJsonClient& client, const Json& request, std::int64_t timeout_ms) {
    if (auto s = client.send(request); !s.ok()) return s.error();
    return client.receive(timeout_ms);
}

Result<std::unique_ptr<store::Store>> open_store_readonly(const AgentConfig& cfg) {
    return store::Store::open_readonly(cfg.state_dir + "/daemonlet.db");
}

Result<std::optional<DaemonSetView>> view_daemonset(store::Store& store, const AgentConfig& cfg,
                                                    const std::string& ns, const std::string& name,
                                                    std::int64_t now_ms) {
    auto row = store.get_daemonset(ns, name);
    if (!row.ok()) return row.error();
    if (!row.value()) return std::optional<DaemonSetView>();
    DaemonSetView v;
    v.row = *row.value();
    Json obj = Json::parse(v.row.object_json, nullptr, false);
    if (obj.is_discarded() || !decode_daemonset(obj, v.ds).empty())
        return Error{ErrorCode::Corrupt, "the stored DaemonSet " + ns + "/" + name + " does not decode"};
    auto node = store.get_node();
    if (!node.ok()) return node.error();
    v.node.metadata.name = cfg.node_name;
    if (node.value()) {
        v.node.metadata.labels = node.value()->labels;
        v.node.taints = node.value()->taints;
        v.node.unschedulable = node.value()->unschedulable;
    }
    v.decision = node_should_run_daemon_pod(v.node, v.ds);
    auto pods = store.list_pods();
    if (!pods.ok()) return pods.error();
    std::vector<NodeDaemonPod> counted;
    for (const auto& p : pods.value()) {
        if (p.namespace_ != ns || p.daemonset != name) continue;
        v.pods.push_back(p);
        bool ready = !p.deleting && !p.containers.empty();
        std::int64_t since = 0;
        for (const auto& c : p.containers) {
            ready = ready && c.ready;
            since = std::max(since, c.started_at_ms);
        }
        const bool available = ready && (v.ds.spec.min_ready_seconds <= 0 ||
                                         now_ms - since >= v.ds.spec.min_ready_seconds * 1000LL);
        counted.push_back(NodeDaemonPod{p.name, p.created_at_ms, p.revision_hash, ready, available});
    }
    v.status = daemonset_node_status(v.decision, std::move(counted), v.row.template_hash);
    auto rb = store.get_rollback(ns, name);
    if (rb.ok()) v.rollback = rb.value();
    return std::optional<DaemonSetView>(std::move(v));
}

bool wall_time_unknown(std::int64_t since_ms, std::int64_t now_ms) {
    return !wall_time_known(since_ms) && wall_time_known(now_ms);
}

std::optional<std::string> utc_time(std::int64_t ms, std::int64_t now_ms, const char* format) {
    if (ms <= 0 || wall_time_unknown(ms, now_ms)) return std::nullopt;
    time_t t = static_cast<time_t>(ms / 1000);
    struct tm tm {};
    gmtime_r(&t, &tm);
    char buf[64];
    if (std::strftime(buf, sizeof buf, format, &tm) == 0) return std::nullopt;
    return std::string(buf);
}

std::string short_age(std::int64_t since_ms, std::int64_t now_ms) {
    if (wall_time_unknown(since_ms, now_ms)) return "<unknown>";
    std::int64_t s = (now_ms - since_ms) / 1000;
    if (s < 0) return "<invalid>";
    if (s < 60) return std::to_string(s) + "s";
    if (s < 3600) return std::to_string(s / 60) + "m";
    if (s < 86400) return std::to_string(s / 3600) + "h";
    if (s < 365 * 86400) return std::to_string(s / 86400) + "d";
    return std::to_string(s / (365 * 86400)) + "y";
}

void print_columns(const std::vector<std::vector<std::string>>& rows, const std::string& indent,
                   std::size_t padding) {
    std::vector<std::size_t> w;
    for (const auto& r : rows)
        for (std::size_t i = 0; i < r.size(); ++i) {
            if (w.size() <= i) w.push_back(0);
            w[i] = std::max(w[i], r[i].size());
        }
    for (const auto& r : rows) {
        std::string line = indent;
        for (std::size_t i = 0; i < r.size(); ++i)
            line += i + 1 < r.size() ? r[i] + std::string(w[i] - r[i].size() + padding, ' ') : r[i];
        std::printf("%s\n", line.c_str());
    }
}

namespace {

std::string labels_text(const Json& labels) {
    if (!labels.is_object() || labels.empty()) return "<none>";
    std::string out;
    for (const auto& [k, v] : labels.items())
        out += (out.empty() ? "" : ",") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
    return out;
}

std::string words(const Json& list) {
    std::string out;
    for (const auto& a : list)
        out += (out.empty() ? "" : " ") + (a.is_string() ? a.get<std::string>() : a.dump());
    return out;
}

}  // namespace

std::string describe_pod_template(const Json& tmpl, const std::string& in) {
    std::string out;
    const Json& md = tmpl.contains("metadata") ? tmpl["metadata"] : Json::object();
    const Json& spec = tmpl.contains("spec") ? tmpl["spec"] : Json::object();
    out += in + "Labels:  " + labels_text(md.value("labels", Json::object())) + "\n";
    out += in + "Containers:\n";
    for (const auto& c : spec.value("containers", Json::array())) {
        out += in + " " + c.value("name", "") + ":\n";
        out += in + "  Image:      " + c.value("image", "<none>") + "\n";
        if (c.contains("command")) out += in + "  Command:    " + words(c["command"]) + "\n";
        if (c.contains("args")) out += in + "  Args:       " + words(c["args"]) + "\n";
        std::string env;
        for (const auto& e : c.value("env", Json::array()))
            env += "\n" + in + "    " + e.value("name", "") + ":  " + e.value("value", "(from a field)");
        out += in + "  Environment:" + (env.empty() ? "  <none>" : env) + "\n";
    }
    return out;
}

bool is_daemonset_kind(const std::string& kind) {
    static const char* const kinds[] = {"ds", "daemonset", "daemonsets", "daemonset.apps", "daemonsets.apps"};
    return std::find(std::begin(kinds), std::end(kinds), kind) != std::end(kinds);
}

std::string daemonset_name_arg(const std::vector<std::string>& args, std::size_t& i, std::string* error) {
    const std::string& a = args[i];
    const auto slash = a.find('/');
    const std::string kind = slash == std::string::npos ? a : a.substr(0, slash);
    if (!is_daemonset_kind(kind)) {
        *error = "the server doesn't have a resource type \"" + kind + "\" (daemonlet knows ds only)";
        return {};
    }
    if (slash != std::string::npos) {
        if (slash + 1 == a.size()) *error = "a name is needed after \"" + a + "\"";
        return a.substr(slash + 1);
    }
    if (i + 1 >= args.size() || args[i + 1].empty() || args[i + 1][0] == '-') {
        *error = "which DaemonSet? (ds/NAME)";
        return {};
    }
    return args[++i];
}

}  // namespace daemonlet::agent
