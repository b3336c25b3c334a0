// The agent's configuration file: keys, defaults, and errors naming the key.
#include <string>
#include <vector>

#include "core/config.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {
std::string all(const ConfigResult& r) {
    std::string s;
    for (const auto& e : r.errors) s += e + "\n";
    return s;
}
bool has(const ConfigResult& r, const std::string& needle) {
    return all(r).find(needle) != std::string::npos;
}
}  // namespace

TEST_GROUP(Config){};

TEST(Config, EmptyFileIsTheDefaults) {
    auto r = parse_agent_config("# nothing\n", "c.yaml", "/etc/daemonlet");
    CHECK_TRUE(r.errors.empty());
    STRCMP_EQUAL("/etc/daemonlet/manifests", r.config.manifest_dir.c_str());
    STRCMP_EQUAL("/var/lib/daemonlet", r.config.state_dir.c_str());
    CHECK_EQUAL(20000, r.config.file_check_frequency_ms);
    CHECK_EQUAL(10000, r.config.backoff_initial_ms);
    CHECK_EQUAL(300000, r.config.backoff_max_ms);
}

TEST(Config, TheIssuesExampleParses) {
    auto r = parse_agent_config(R"(
nodeName: edge-01
nodeLabels: {disktype: ssd}
nodeTaints:
  - {key: dedicated, value: sensors, effect: NoSchedule}
manifestDir: manifests
stateDir: /var/lib/daemonlet
runtime: {type: exec}
fileCheckFrequency: 20s
crashLoopBackoff: {initial: 10s, max: 300s}
containerLogMaxSize: 1Mi
containerLogMaxFiles: 3
)",
                                "c.yaml", "/opt/board");
    CHECK_TEXT(r.errors.empty(), all(r).c_str());
    STRCMP_EQUAL("edge-01", r.config.node_name.c_str());
    STRCMP_EQUAL("ssd", r.config.node_labels.at("disktype").c_str());
    CHECK_EQUAL(1, r.config.node_taints.size());
    STRCMP_EQUAL("NoSchedule", r.config.node_taints[0].effect.c_str());
    STRCMP_EQUAL("/opt/board/manifests", r.config.manifest_dir.c_str());  // relative to the file
    CHECK_EQUAL(1048576u, r.config.container_log_max_size);
    CHECK_EQUAL(3u, r.config.container_log_max_files);
}

TEST(Config, RuncRuntimeTakesAnImportDirAndARuncPath) {
    auto r = parse_agent_config(
        "stateDir: /var/lib/dl\nruntime: {type: runc, imageImportDir: import, runcPath: "
        "/usr/sbin/runc}\n",
        "c.yaml", "/opt/board");
    CHECK_TEXT(r.errors.empty(), all(r).c_str());
    STRCMP_EQUAL("runc", r.config.runtime_type.c_str());
    STRCMP_EQUAL("/opt/board/import", r.config.image_import_dir.c_str());  // relative to the file
    STRCMP_EQUAL("/usr/sbin/runc", r.config.runc_path.c_str());
    STRCMP_EQUAL("/opt/board/import", image_import_dir_of(r.config).c_str());
}

TEST(Config, TheImportDirDefaultsUnderTheStateDir) {
    auto r = parse_agent_config("stateDir: /var/lib/dl\nruntime: {type: runc}\n", "c.yaml", "/");
    CHECK_TEXT(r.errors.empty(), all(r).c_str());
    STRCMP_EQUAL("runc", r.config.runc_path.c_str());
    STRCMP_EQUAL("/var/lib/dl/import", image_import_dir_of(r.config).c_str());
}

TEST(Config, RuncRuntimeTakesRegistrySettings) {
    auto r = parse_agent_config(
        "runtime: {type: runc, registryAuthFile: auth.json, registryCertsDir: /etc/x/certs.d,\n"
        "          insecureRegistries: [\"10.0.0.5:5000\", \"registry.local\"]}\n",
        "c.yaml", "/opt/board");
    CHECK_TEXT(r.errors.empty(), all(r).c_str());
    STRCMP_EQUAL("/opt/board/auth.json", r.config.registry_auth_file.c_str());  // relative to the file
    STRCMP_EQUAL("/etc/x/certs.d", r.config.registry_certs_dir.c_str());
    CHECK_EQUAL(2, r.config.insecure_registries.size());
    STRCMP_EQUAL("registry.local", r.config.insecure_registries[1].c_str());
    // Defaults: anonymous, Docker's certs.d under /etc/daemonlet, TLS everywhere.
    auto d = parse_agent_config("runtime: {type: runc}\n", "c.yaml", "/");
    STRCMP_EQUAL("", d.config.registry_auth_file.c_str());
    STRCMP_EQUAL("/etc/daemonlet/certs.d", d.config.registry_certs_dir.c_str());
    CHECK_TRUE(d.config.insecure_registries.empty());
}

TEST(Config, RegistrySettingsErrorsNameTheField) {
    auto r = parse_agent_config(
        "runtime: {type: runc, registryAuthFile: \"\", insecureRegistries: [\"Bad Host\", 5, \"h:1/x\"]}\n",
        "c.yaml", "/");
    CHECK_TRUE(has(r, "c.yaml: runtime.registryAuthFile: must not be empty"));
    CHECK_TRUE(has(r, "c.yaml: runtime.insecureRegistries[0]: \"Bad Host\": not a registry host[:port]"));
    CHECK_TRUE(has(r, "c.yaml: runtime.insecureRegistries[1]: "));
    CHECK_TRUE(has(r, "c.yaml: runtime.insecureRegistries[2]: \"h:1/x\": not a registry host[:port]"));
    auto l = parse_agent_config("runtime: {insecureRegistries: h:1}\n", "c.yaml", "/");
    CHECK_TRUE(has(l, "c.yaml: runtime.insecureRegistries: expected a list"));
}

TEST(Config, MaxParallelOperationsDefaultsToFourAndIsBounded) {
    auto d = parse_agent_config("runtime: {type: exec}\n", "c.yaml", "/");
    CHECK_EQUAL(4u, d.config.max_parallel_operations);
    auto r = parse_agent_config("runtime: {type: cri, maxParallelOperations: 8}\n", "c.yaml", "/");
    CHECK_TEXT(r.errors.empty(), all(r).c_str());
    CHECK_EQUAL(8u, r.config.max_parallel_operations);
    for (const char* bad : {"0", "65", "two", "1.5"}) {
        auto b =
            parse_agent_config(std::string("runtime: {maxParallelOperations: ") + bad + "}\n", "c.yaml", "/");
        CHECK_TEXT(has(b, "c.yaml: runtime.maxParallelOperations: expected an integer from 1 to 64"), bad);
    }
}

TEST(Config, RuncRuntimeErrorsNameTheKey) {
    auto r = parse_agent_config("runtime: {type: runc, imageImportDir: \"\", runcPath: 3, pull: yes}\n",
                                "c.yaml", "/");
    CHECK_TRUE(has(r, "c.yaml: runtime.imageImportDir: must not be empty"));
    CHECK_TRUE(has(r, "c.yaml: runtime.runcPath: "));
    CHECK_TRUE(has(r, "c.yaml: runtime.pull: unknown key"));
}

// runtime.rootfs chooses how a runc container's root filesystem is made:
// an overlayfs mount of the layers, as containerd's overlayfs snapshotter
// (the default snapshotter) does, or a copy (its "native" snapshotter).
TEST(Config, RuncRootfsIsAutoOverlayOrCopy) {
    static const struct {
        const char* name;
        const char* yaml;
        const char* expected;  // the value, or the error's text
        bool valid;
    } rows[] = {
        {"absent: auto", "runtime: {type: runc}\n", "auto", true},
        {"overlay", "runtime: {type: runc, rootfs: overlay}\n", "overlay", true},
        {"copy", "runtime: {type: runc, rootfs: copy}\n", "copy", true},
        {"auto", "runtime: {type: runc, rootfs: auto}\n", "auto", true},
        {"unknown value", "runtime: {type: runc, rootfs: aufs}\n",
         "c.yaml: runtime.rootfs: Unsupported value: \"aufs\": supported values: \"auto\", \"overlay\", "
         "\"copy\"",
         false},
        {"not a string", "runtime: {type: runc, rootfs: [overlay]}\n", "c.yaml: runtime.rootfs: ", false},
    };
    for (const auto& row : rows) {
        auto r = parse_agent_config(row.yaml, "c.yaml", "/");
        if (row.valid) {
            CHECK_TEXT(r.errors.empty(), (std::string(row.name) + ": " + all(r)).c_str());
            STRCMP_EQUAL_TEXT(row.expected, r.config.runtime_rootfs.c_str(), row.name);
        } else {
            CHECK_TEXT(has(r, row.expected), (std::string(row.name) + ": " + all(r)).c_str());
        }
    }
}

// kubelet's defaults (imageGCHighThresholdPercent 85, imageGCLowThresholdPercent
// 80, imageMinimumGCAge 2m) and NewImageGCManager's checks.
TEST(Config, RuncImageGcDefaultsAsKubeletAndTakesItsThreeFields) {
    auto d = parse_agent_config("runtime: {type: runc}\n", "c.yaml", "/");
    CHECK_TRUE(d.errors.empty());
    LONGS_EQUAL(85, d.config.image_gc.high_threshold_percent);
    LONGS_EQUAL(80, d.config.image_gc.low_threshold_percent);
    LONGS_EQUAL(120, d.config.image_gc.minimum_age_s);
    auto r = parse_agent_config(
        "runtime: {type: runc, imageGC: {highThresholdPercent: 1, lowThresholdPercent: 0, minimumAgeSeconds: "
        "0}}\n",
        "c.yaml", "/");
    CHECK_TRUE(r.errors.empty());
    CHECK(r.config.image_gc == (ImageGcPolicy{1, 0, 0}));
}

TEST(Config, RuncImageGcErrorsNameTheField) {
    struct Row {
        const char* yaml;
        const char* error;
    };
    const Row rows[] = {
        {"runtime: {type: runc, imageGC: 85}", "c.yaml: runtime.imageGC: expected {highThresholdPercent"},
        {"runtime: {type: runc, imageGC: {high: 1}}", "c.yaml: runtime.imageGC.high: unknown key"},
        {"runtime: {type: runc, imageGC: {highThresholdPercent: 101}}",
         "c.yaml: runtime.imageGC.highThresholdPercent: Invalid value: 101: must be in range [0-100]"},
        {"runtime: {type: runc, imageGC: {highThresholdPercent: \"90%\"}}",
         "c.yaml: runtime.imageGC.highThresholdPercent: expected an integer"},
        {"runtime: {type: runc, imageGC: {highThresholdPercent: 70}}",
         "c.yaml: runtime.imageGC.lowThresholdPercent: Invalid value: 80: can not be higher than "
         "highThresholdPercent (70)"},
        {"runtime: {type: runc, imageGC: {minimumAgeSeconds: -5}}",
         "c.yaml: runtime.imageGC.minimumAgeSeconds: Invalid value: -5"},
    };
    for (const Row& row : rows) {
        auto r = parse_agent_config(row.yaml, "c.yaml", "/");
        std::string all;
        for (const auto& e : r.errors) all += e + "\n";
        CHECK_TEXT(has(r, row.error), (std::string(row.yaml) + " gave:\n" + all).c_str());
    }
}

TEST(Config, CriRuntimeTakesAnEndpointDefaultingToContainerds) {
    auto r = parse_agent_config("runtime: {type: cri}\n", "c.yaml", "/");
    CHECK_TEXT(r.errors.empty(), all(r).c_str());
    STRCMP_EQUAL("cri", r.config.runtime_type.c_str());
    STRCMP_EQUAL("unix:///run/containerd/containerd.sock", r.config.cri_endpoint.c_str());
    r = parse_agent_config("runtime: {type: cri, endpoint: \"unix:///run/k3s/containerd/containerd.sock\"}\n",
                           "c.yaml", "/");
    CHECK_TEXT(r.errors.empty(), all(r).c_str());
    STRCMP_EQUAL("unix:///run/k3s/containerd/containerd.sock", r.config.cri_endpoint.c_str());
}

// runtime.type cri imports runtime.imageImportDir's archives into
// containerd, unpacked for the CRI plugin's snapshotter (containerd's
// plugins."io.containerd.grpc.v1.cri".containerd.snapshotter).
TEST(Config, CriRuntimeTakesAnImportDirectoryAndTheCriPluginsSnapshotter) {
    auto r = parse_agent_config("runtime: {type: cri, imageImportDir: imports, snapshotter: native}\n",
                                "c.yaml", "/etc/daemonlet");
    CHECK_TEXT(r.errors.empty(), all(r).c_str());
    STRCMP_EQUAL("/etc/daemonlet/imports", r.config.image_import_dir.c_str());
    STRCMP_EQUAL("native", r.config.cri_snapshotter.c_str());
    auto d = parse_agent_config("runtime: {type: cri}\n", "c.yaml", "/");
    STRCMP_EQUAL("", d.config.cri_snapshotter.c_str());  // ctr's default
    auto e = parse_agent_config("runtime: {type: cri, snapshotter: \"\"}\n", "c.yaml", "/");
    CHECK_TRUE(has(e, "c.yaml: runtime.snapshotter: must not be empty"));
    auto t = parse_agent_config("runtime: {type: cri, snapshotter: [native]}\n", "c.yaml", "/");
    CHECK_TRUE(has(t, "c.yaml: runtime.snapshotter: "));
}

TEST(Config, CriEndpointMustBeAUnixSocketPath) {
    for (const char* bad :
         {"tcp://10.0.0.1:1234", "unix://relative.sock", "/run/containerd.sock", "unix:///"}) {
        auto r = parse_agent_config(std::string("runtime: {type: cri, endpoint: \"") + bad + "\"}\n",
                                    "c.yaml", "/");
        CHECK_TEXT(has(r, std::string("c.yaml: runtime.endpoint: \"") + bad + "\": expected unix:///"),
                   (bad + std::string(": ") + all(r)).c_str());
    }
}

TEST(Config, ErrorsNameTheKeyPath) {
    auto r = parse_agent_config(R"(
nodeName: Edge_01
nodeLables: {a: b}
nodeTaints:
  - {key: dedicated, value: sensors, effect: NoSchedul}
  - {key: x, effect: NoExecute, extra: 1}
runtime: {type: docker}
fileCheckFrequency: often
crashLoopBackoff: {initial: 10s, max: 5s}
containerLogMaxFiles: 1
)",
                                "c.yaml", "/");
    CHECK_TRUE(has(r, "c.yaml: nodeName: a lowercase RFC 1123 subdomain"));
    CHECK_TRUE(has(r, "c.yaml: nodeLables: unknown key"));
    CHECK_TRUE(has(r, "c.yaml: nodeTaints[0].effect: Unsupported value: \"NoSchedul\""));
    CHECK_TRUE(has(r, "c.yaml: nodeTaints[1].extra: unknown key"));
    CHECK_TRUE(has(r, "c.yaml: runtime.type: Unsupported value: \"docker\""));
    CHECK_TRUE(has(r, "c.yaml: fileCheckFrequency: invalid duration \"often\""));
    CHECK_TRUE(has(r, "c.yaml: crashLoopBackoff.max: must not be less than crashLoopBackoff.initial"));
    CHECK_TRUE(has(r, "c.yaml: containerLogMaxFiles: expected an integer from 2 to 100"));
}

// nodeIP is kubelet's --node-ip: ParseNodeIPArgument (one IP or a
// dual-stack pair, the order kept) and validateNodeIP's refusals; core/
// test_node_ips.cpp has the table of values.
TEST(Config, NodeIpIsOneIpOrADualStackPair) {
    auto none = parse_agent_config("nodeName: edge-01\n", "c.yaml", "/");
    CHECK_TRUE(none.config.node_ips.empty());
    auto one = parse_agent_config("nodeIP: 192.168.1.20\n", "c.yaml", "/");
    CHECK_TEXT(one.errors.empty(), all(one).c_str());
    CHECK(one.config.node_ips == std::vector<std::string>{"192.168.1.20"});
    auto two = parse_agent_config("nodeIP: \"FD00::20, 192.168.1.20\"\n", "c.yaml", "/");
    CHECK_TEXT(two.errors.empty(), all(two).c_str());
    CHECK((two.config.node_ips == std::vector<std::string>{"fd00::20", "192.168.1.20"}));
}

TEST(Config, NodeIpErrorsNameTheKeyAndTheReason) {
    auto r = parse_agent_config("nodeIP: 192.168.1.300\n", "c.yaml", "/");
    CHECK_TEXT(has(r, "c.yaml: nodeIP: \"192.168.1.300\" is not an IP address"), all(r).c_str());
    r = parse_agent_config("nodeIP: 10.0.0.1,10.0.0.2\n", "c.yaml", "/");
    CHECK_TEXT(has(r, "c.yaml: nodeIP: \"10.0.0.1,10.0.0.2\": at most one IPv4 and one IPv6 address"),
               all(r).c_str());
    r = parse_agent_config("nodeIP: 127.0.0.1\n", "c.yaml", "/");
    CHECK_TEXT(has(r, "c.yaml: nodeIP: \"127.0.0.1\": nodeIP can't be loopback address"), all(r).c_str());
    r = parse_agent_config("nodeIP: [10.0.0.1]\n", "c.yaml", "/");
    CHECK_TEXT(has(r, "c.yaml: nodeIP: expected a string"), all(r).c_str());
}

TEST(Config, MalformedYamlIsReported) {
    auto r = parse_agent_config("nodeName: [\n", "c.yaml", "/");
    CHECK_TRUE(has(r, "c.yaml: document 1: line"));
}

TEST(Config, DurationsAsGo) {
    struct Row {
        const char* in;
        bool ok;
        std::int64_t ms;
    };
    const Row rows[] = {{"20s", true, 20000}, {"1m30s", true, 90000}, {"300ms", true, 300},
                        {"1.5s", true, 1500}, {"1h", true, 3600000},  {"0", true, 0},
                        {"10", false, 0},     {"s", false, 0},        {"5d", false, 0},
                        {"", false, 0},       {"100us", true, 0}};
    for (const auto& row : rows) {
        auto d = parse_duration_ms(row.in);
        CHECK_EQUAL_TEXT(row.ok, d.ok(), row.in);
        if (row.ok && d.ok()) CHECK_EQUAL_TEXT(row.ms, d.value(), row.in);
    }
}

TEST(Config, ApiServerIsOffUnlessConfigured) {
    auto r = parse_agent_config("nodeName: a\n", "c.yaml", "/etc/daemonlet");
    CHECK_TRUE(r.errors.empty());
    CHECK_FALSE(r.config.api_server.enabled);
}

TEST(Config, ApiServerWithAKubeconfig) {
    auto r = parse_agent_config(R"(
apiServer:
  kubeconfig: kubeconfig
  namespaces: [kube-system, edge]
  labelSelector: "edge=true"
  nodeFromCluster: true
  leaseNamespace: edge-leases
  registerNode: true
  registerWithTaints:
    - {key: daemonlet.io/board, effect: NoSchedule}
)",
                                "c.yaml", "/etc/daemonlet");
    CHECK_TEXT(r.errors.empty(), all(r).c_str());
    const ApiServerConfig& a = r.config.api_server;
    CHECK_TRUE(a.enabled);
    STRCMP_EQUAL("/etc/daemonlet/kubeconfig", a.kubeconfig.c_str());
    LONGS_EQUAL(2, a.namespaces.size());
    STRCMP_EQUAL("edge", a.namespaces[1].c_str());
    STRCMP_EQUAL("edge=true", a.label_selector.c_str());
    CHECK_TRUE(a.node_from_cluster);
    STRCMP_EQUAL("edge-leases", a.lease_namespace.c_str());
    CHECK_TRUE(a.register_node);
    LONGS_EQUAL(1, a.register_with_taints.size());
    STRCMP_EQUAL("daemonlet.io/board", a.register_with_taints[0].key.c_str());
    STRCMP_EQUAL("NoSchedule", a.register_with_taints[0].effect.c_str());
}

TEST(Config, PodStatusFollowsRegisterNodeUnlessSet) {
    struct Row {
        const char* text;
        bool want;
    };
    const Row rows[] = {
        {"apiServer: {inCluster: true}", false},
        {"apiServer: {inCluster: true, registerNode: true}", true},
        {"apiServer: {inCluster: true, registerNode: true, podStatus: false}", false},
        {"apiServer: {inCluster: true, nodeFromCluster: true, podStatus: true}", true},
    };
    for (const auto& row : rows) {
        auto r = parse_agent_config(row.text, "c.yaml", "/etc/daemonlet");
        CHECK_TEXT(r.errors.empty(), all(r).c_str());
        CHECK_EQUAL_TEXT(row.want, r.config.api_server.pod_status, row.text);
    }
}

// issue 14 §3: the cluster paces rollouts unless `rollouts: board`.
TEST(Config, RolloutsAreTheClustersUnlessBoard) {
    struct Row {
        const char* text;
        bool want;
    };
    const Row rows[] = {
        {"apiServer: {inCluster: true}", true},
        {"apiServer: {inCluster: true, rollouts: cluster}", true},
        {"apiServer: {inCluster: true, rollouts: board}", false},
    };
    for (const auto& row : rows) {
        auto r = parse_agent_config(row.text, "c.yaml", "/etc/daemonlet");
        CHECK_TEXT(r.errors.empty(), all(r).c_str());
        CHECK_EQUAL_TEXT(row.want, r.config.api_server.cluster_paces_rollouts, row.text);
    }
}

TEST(Config, ApiServerErrorsNameTheKey) {
    struct Row {
        const char* text;
        const char* expected;
    };
    const Row rows[] = {
        {"apiServer: yes", "c.yaml: apiServer: expected {kubeconfig: PATH} or {inCluster: true}"},
        {"apiServer: {}", "c.yaml: apiServer: kubeconfig: required (or inCluster: true)"},
        {"apiServer: {kubeconfig: k, inCluster: true}",
         "c.yaml: apiServer: kubeconfig and inCluster: true are exclusive"},
        {"apiServer: {inCluster: 1}", "c.yaml: apiServer.inCluster: expected true or false"},
        {"apiServer: {inCluster: true, namespaces: [Edge_1]}", "c.yaml: apiServer.namespaces[0]: "},
        {"apiServer: {inCluster: true, namespaces: kube-system}",
         "c.yaml: apiServer.namespaces: expected a list"},
        {"apiServer: {inCluster: true, server: x}", "c.yaml: apiServer.server: unknown key"},
        {"apiServer: {inCluster: true, leaseNamespace: ''}", "c.yaml: apiServer.leaseNamespace: "},
        {"apiServer: {inCluster: true, registerNode: yes please}",
         "c.yaml: apiServer.registerNode: expected true or false"},
        {"apiServer: {inCluster: true, registerNode: true, podStatus: 1}",
         "c.yaml: apiServer.podStatus: expected true or false"},
        {"apiServer: {inCluster: true, podStatus: true}",
         "c.yaml: apiServer.podStatus: needs the board's Node (registerNode: true, or nodeFromCluster: true"},
        {"apiServer: {inCluster: true, rollouts: node}",
         "c.yaml: apiServer.rollouts: expected cluster or board (got \"node\")"},
        {"apiServer: {inCluster: true, rollouts: [cluster]}",
         "c.yaml: apiServer.rollouts: expected a string"},
        {"apiServer: {inCluster: true, registerWithTaints: {key: a}}",
         "c.yaml: apiServer.registerWithTaints: expected a list of {key, value, effect}"},
        {"apiServer: {inCluster: true, registerWithTaints: [{key: a, effect: Never}]}",
         "c.yaml: apiServer.registerWithTaints[0].effect: Unsupported value: \"Never\""},
        {"apiServer: {inCluster: true, registerWithTaints: [{key: a, effect: NoSchedule}, {key: a, effect: "
         "NoSchedule}]}",
         "c.yaml: apiServer.registerWithTaints[1]: taints must be unique by key and effect pair"},
    };
    for (const auto& row : rows) {
        auto r = parse_agent_config(row.text, "c.yaml", "/etc/daemonlet");
        std::string msg = std::string(row.text) + " -> " + all(r);
        CHECK_TEXT(has(r, row.expected), msg.c_str());
    }
}

TEST(Config, MetricsBindAddressDefaultsToLoopbackAndEmptyTurnsItOff) {
    auto r = parse_agent_config("", "c.yaml", "/");
    STRCMP_EQUAL("127.0.0.1:10255", r.config.metrics_bind_address.c_str());
    r = parse_agent_config("metricsBindAddress: \"\"\n", "c.yaml", "/");
    CHECK_TEXT(r.errors.empty(), all(r).c_str());
    STRCMP_EQUAL("", r.config.metrics_bind_address.c_str());
    r = parse_agent_config("metricsBindAddress: \"[::]:9100\"\n", "c.yaml", "/");
    CHECK_TEXT(r.errors.empty(), all(r).c_str());
    STRCMP_EQUAL("[::]:9100", r.config.metrics_bind_address.c_str());
}

TEST(Config, MetricsBindAddressErrorsNameTheKeyAndTheReason) {
    struct Row {
        const char* yaml;
        const char* error;
    };
    const Row rows[] = {
        {"metricsBindAddress: 10255", "c.yaml: metricsBindAddress: expected a string"},
        {"metricsBindAddress: localhost:10255",
         "c.yaml: metricsBindAddress: \"localhost:10255\": the host must be an IP address"},
        {"metricsBindAddress: 127.0.0.1", "c.yaml: metricsBindAddress: \"127.0.0.1\": no port"},
        {"metricsBindAddress: 127.0.0.1:99999", "the port must be a number from 0 to 65535"},
    };
    for (const Row& row : rows) {
        auto r = parse_agent_config(row.yaml, "c.yaml", "/");
        CHECK_TEXT(has(r, row.error), (std::string(row.yaml) + " gave:\n" + all(r)).c_str());
    }
}

// kubelet's allowedUnsafeSysctls: names and prefix patterns, each checked
// as NewAllowlist checks them (core/test_sysctl.cpp has the table).
TEST(Config, AllowedUnsafeSysctlsAreNamespacedNamesOrPatterns) {
    auto r = parse_agent_config(
        "allowedUnsafeSysctls: [net.core.somaxconn, 'kernel.msg*', net/ipv4/ip_forward]\n", "c.yaml", "/");
    CHECK_TRUE(r.errors.empty());
    CHECK_TRUE((r.config.allowed_unsafe_sysctls ==
                std::vector<std::string>{"net.core.somaxconn", "kernel.msg*", "net/ipv4/ip_forward"}));
    CHECK_TRUE(parse_agent_config("", "c.yaml", "/").config.allowed_unsafe_sysctls.empty());

    auto bad =
        parse_agent_config("allowedUnsafeSysctls: [vm.swappiness, 'net.*', 'Net.X', 3]\n", "c.yaml", "/");
    CHECK_TRUE(has(bad,
                   "c.yaml: allowedUnsafeSysctls[0]: the sysctl \"vm.swappiness\" are not known to be "
                   "namespaced"));
    CHECK_TRUE(
        has(bad, "c.yaml: allowedUnsafeSysctls[2]: sysctl \"Net.X\" must have at most 253 characters"));
    CHECK_TRUE(has(bad, "c.yaml: allowedUnsafeSysctls[3]:"));
    CHECK_EQUAL(3u, bad.errors.size());
    CHECK_TRUE(has(parse_agent_config("allowedUnsafeSysctls: net.*\n", "c.yaml", "/"),
                   "c.yaml: allowedUnsafeSysctls: expected a list"));
}
