// bench_core: the decision core and the manifest reader, measured.
//
//   bench_core [--daemonsets N] [--seconds S]
//
// Prints decisions per second for one node against N DaemonSets with
// realistic selectors, affinity and tolerations, and manifest throughput
// (MB/s) for YAML and JSON streams of the same N DaemonSets, split into
// parsing alone and the full load (parse, default, decode, validate).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/decision.h"
#include "core/json_parse.h"
#include "core/manifest.h"

using namespace daemonlet;
using Clock = std::chrono::steady_clock;

namespace {

// One DaemonSet of the kinds an edge fleet carries: every fourth has a node
// selector, every third a required affinity with two terms (one with Gt),
// every second tolerations, some hostNetwork.
std::string daemonset_yaml(int i) {
    std::string n = std::to_string(i);
    std::string s =
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent-" + n +
        "\n  namespace: edge\n  labels: {app: agent-" + n +
        ", tier: node}\n"
        "spec:\n  selector:\n    matchLabels: {app: agent-" +
        n +
        "}\n"
        "  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 10%, maxSurge: 0}}\n"
        "  template:\n    metadata:\n      labels: {app: agent-" +
        n + ", tier: node}\n    spec:\n";
    if (i % 5 == 0) s += "      hostNetwork: true\n";
    if (i % 4 == 0) s += "      nodeSelector: {kubernetes.io/os: linux, disktype: ssd}\n";
    if (i % 3 == 0)
        s += "      affinity:\n        nodeAffinity:\n          "
             "requiredDuringSchedulingIgnoredDuringExecution:\n"
             "            nodeSelectorTerms:\n"
             "              - matchExpressions:\n"
             "                  - {key: kubernetes.io/arch, operator: In, values: [arm64, arm]}\n"
             "                  - {key: daemonlet.io/ram-mb, operator: Gt, values: [\"512\"]}\n"
             "              - matchExpressions:\n"
             "                  - {key: node-role.kubernetes.io/gateway, operator: Exists}\n"
             "          preferredDuringSchedulingIgnoredDuringExecution:\n"
             "            - weight: 10\n              preference:\n                matchExpressions:\n"
             "                  - {key: zone, operator: In, values: [a, b]}\n";
    if (i % 2 == 0)
        s += "      tolerations:\n"
             "        - {key: dedicated, operator: Equal, value: sensors, effect: NoSchedule}\n"
             "        - {key: maintenance, operator: Exists, effect: NoExecute, tolerationSeconds: 300}\n";
    s +=
        "      containers:\n        - name: main\n          image: registry.local/agent-" + n +
        ":1.0.0\n          args: [--interval=10s, --verbose]\n"
        "          env:\n            - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}\n"
        "          ports: [{containerPort: " +
        std::to_string(9000 + i % 1000) +
        ", name: metrics}]\n"
        "          resources:\n            limits: {cpu: 100m, memory: 32Mi}\n            requests: {cpu: "
        "10m, memory: 16Mi}\n"
        "          readinessProbe:\n            httpGet: {path: /healthz, port: metrics}\n";
    return s;
}

Node bench_node() {
    Node node;
    node.metadata.name = "edge-01";
    node.metadata.labels = {{"kubernetes.io/hostname", "edge-01"}, {"kubernetes.io/os", "linux"},
                            {"kubernetes.io/arch", "arm64"},       {"disktype", "ssd"},
                            {"daemonlet.io/ram-mb", "2048"},       {"zone", "a"}};
    node.taints = {{"dedicated", "sensors", "NoSchedule", ""}, {"maintenance", "", "NoExecute", ""}};
    return node;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

long max_rss_kib() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

// Runs fn repeatedly for at least `budget` seconds; returns iterations per second.
template <class F>
double rate(double budget, F fn) {
    long n = 0;
    auto start = Clock::now();
    double elapsed = 0;
    do {
        fn();
        ++n;
        elapsed = seconds_since(start);
    } while (elapsed < budget);
    return static_cast<double>(n) / elapsed;
}

}  // namespace

int main(int argc, char** argv) {
    int count = 200;
    double budget = 2.0;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--daemonsets" && i + 1 < argc)
            count = std::atoi(argv[++i]);
        else if (a == "--seconds" && i + 1 < argc)
            budget = std::atof(argv[++i]);
        else {
            std::fprintf(stderr, "usage: bench_core [--daemonsets N] [--seconds S]\n");
            return 2;
        }
    }

    std::string yaml;
    for (int i = 0; i < count; ++i) yaml += (i ? "---\n" : "") + daemonset_yaml(i);
    LoadedManifest loaded = load_manifest(yaml, "bench.yaml");
    if (!loaded.errors.empty() || static_cast<int>(loaded.objects.size()) != count) {
        std::fprintf(stderr, "bench: generated manifests do not load: %s\n",
                     loaded.errors.empty() ? "count mismatch" : loaded.errors.front().to_string().c_str());
        return 1;
    }
    std::string json;
    for (const auto& o : loaded.objects) json += std::get<DaemonSet>(o.object).object.dump() + "\n";

    std::vector<const DaemonSet*> sets;
    for (const auto& o : loaded.objects) sets.push_back(&std::get<DaemonSet>(o.object));
    Node node = bench_node();
    int runs = 0;
    for (const auto* ds : sets) runs += node_should_run_daemon_pod(node, *ds).should_run ? 1 : 0;

    double decide_sets = rate(budget, [&] {
        for (const auto* ds : sets) {
            Decision d = node_should_run_daemon_pod(node, *ds);
            if (d.reasons.size() > 1000) std::abort();  // keep the result alive
        }
    });
    double mb_yaml = static_cast<double>(yaml.size()) / 1e6;
    double mb_json = static_cast<double>(json.size()) / 1e6;
    double parse_yaml = rate(budget, [&] { (void)parse_documents(yaml, "bench.yaml"); });
    double load_yaml = rate(budget, [&] { (void)load_manifest(yaml, "bench.yaml"); });
    double parse_json = rate(budget, [&] { (void)parse_documents(json, "bench.json"); });
    double load_json = rate(budget, [&] { (void)load_manifest(json, "bench.json"); });

    // A JSON object of n keys (an API answer or a JSON manifest of one large
    // mapping): parse_json is linear in n, nlohmann's own parser quadratic.
    auto keys_json = [](int n) {
        std::string text = "{";
        for (int k = 0; k < n; ++k) text += (k ? ",\"key-" : "\"key-") + std::to_string(k) + "\":\"v\"";
        return text + "}";
    };
    auto once_ms = [](auto fn) {
        auto start = Clock::now();
        if (fn() == 0) std::abort();  // keep the result alive
        return seconds_since(start) * 1e3;
    };
    const std::string keys_5k = keys_json(5000), keys_20k = keys_json(20000);
    const double ours_5k = once_ms([&] { return daemonlet::parse_json(keys_5k).size(); });
    const double ours_20k = once_ms([&] { return daemonlet::parse_json(keys_20k).size(); });
    const double theirs_5k = once_ms([&] { return Json::parse(keys_5k, nullptr, false).size(); });
    const double theirs_20k = once_ms([&] { return Json::parse(keys_20k, nullptr, false).size(); });

    std::printf("bench_core: %d DaemonSets, one node (%d placed), %.1f s per figure\n", count, runs, budget);
    std::printf("  decisions per second            %12.0f\n", decide_sets * count);
    std::printf("  time per decision               %12.2f us\n", 1e6 / (decide_sets * count));
    std::printf("  YAML stream size                %12.2f MB\n", mb_yaml);
    std::printf("  YAML parse only                 %12.2f MB/s\n", parse_yaml * mb_yaml);
    std::printf("  YAML full load                  %12.2f MB/s  (%.0f DaemonSets/s)\n", load_yaml * mb_yaml,
                load_yaml * count);
    std::printf("  JSON stream size                %12.2f MB\n", mb_json);
    std::printf("  JSON parse only                 %12.2f MB/s\n", parse_json * mb_json);
    std::printf("  JSON full load                  %12.2f MB/s  (%.0f DaemonSets/s)\n", load_json * mb_json,
                load_json * count);
    std::printf("  JSON object of 5k / 20k keys    %8.1f / %.1f ms  (nlohmann's parser: %.1f / %.1f ms)\n",
                ours_5k, ours_20k, theirs_5k, theirs_20k);
    std::printf("  peak RSS                        %12ld KiB\n", max_rss_kib());
    return 0;
}
