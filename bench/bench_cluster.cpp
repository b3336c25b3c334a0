// bench_cluster: the figures of issue 4 (following a cluster), measured on
// the real daemonlet, daemonlet-shim and the test API server of this build
// (tests/apiserver/fake_apiserver.cpp), on loopback over TLS.
//
//   bench_cluster [--daemonlet PATH] [--fake-apiserver PATH] [--daemonsets N]
//                 [--changes N] [--idle-minutes N] [--offline-daemonsets N]
//                 [--register-node] [--pod-status]
//                 [--work-parent DIR] [--keep]
//
// It makes a self-signed certificate (openssl), starts the fake API server
// with a token and kube-apiserver's bookmark interval (--bookmark-ms 60000),
// creates N DaemonSets there through its /_control endpoints (libcurl, one
// kept-alive TLS connection), and runs `daemonlet run` with an empty
// manifest directory and `apiServer: {kubeconfig: ...}`, NOTIFY_SOCKET on a
// socket it listens on. Containers are those of bench_agent:
//   sh -c 'echo $$ > MARKS/$(POD_NAME); exec /bin/sleep infinity'
// so a container runs when its mark file is closed (inotify, no polling).
//
// --register-node and --pod-status set apiServer.registerNode and
// apiServer.podStatus (both written, false when not given); with
// --pod-status the bench writes each DaemonSet's ControllerRevisions as the
// DaemonSet controller does, since the agent creates no Pod before them.
//
// Phases, in order: start with N DaemonSets on the server; template changes
// PUT on the server, cycling through the DaemonSets (the default
// RollingUpdate: old pod stopped, then the new one started), each timed from
// just before the PUT to the new container's mark, the server's request and
// wire-byte counters read before the first and once the agent is quiet after
// the last (the rollout window); the agent's memory, with where its resident
// pages are (smaps, per mapped file); an idle connected window, with the
// same counters read before and after; then all but K DaemonSets deleted on the server,
// the server killed (no network), the agent, shims and containers killed
// (a reboot), and the agent started again from its cache alone.
//
// It prints the command, the machine and a Markdown table; docs/figures.md
// records one run.
#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/agent_harness.h"

using namespace daemonlet::bench;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr Ns kSecond = 1'000'000'000;
constexpr const char* kToken = "bench-token";

struct Options {
    std::string daemonlet = DAEMONLET_PATH;
    std::string fake = FAKE_APISERVER_PATH;
    int daemonsets = 200;
    int changes = 100;
    int idle_minutes = 5;
    int offline = 50;
    bool register_node = false;  // apiServer.registerNode
    bool pod_status = false;     // apiServer.podStatus
    bool h2 = false;             // the agent reaches the server through nghttpx, over HTTP/2
    std::string work_parent = "/tmp";
    bool keep = false;
};

// What the agent asked of the server between two /_control/stats, per kind
// of request (the server's: lease, watch, list, node, pod, event, revision):
// requests, and the bytes on the wire each way (down: server to agent).
struct Traffic {
    double requests = 0, down = 0, up = 0;
};
std::map<std::string, Traffic> traffic(const Json& s0, const Json& s1) {
    auto count = [](const Json& s, const std::string& kind) {
        return static_cast<double>(s["requests"].value(kind, std::int64_t{0}));
    };
    auto wire = [](const Json& s, const std::string& kind, const char* dir) {
        return s["wire"].contains(kind) ? static_cast<double>(s["wire"][kind].value(dir, std::int64_t{0}))
                                        : 0.0;
    };
    // The kinds the server counts bytes for: every request has one. Its
    // other counters (configmaps, secrets, token) count requests of "other"
    // again, so they are left out of the sum (requestsByVerb names them).
    std::map<std::string, Traffic> out;
    for (const auto& [kind, v] : s1["wire"].items()) {
        if (kind == "control") continue;
        out[kind] = {count(s1, kind) - count(s0, kind), wire(s1, kind, "sent") - wire(s0, kind, "sent"),
                     wire(s1, kind, "received") - wire(s0, kind, "received")};
    }
    return out;
}

// "pods/status patch 12.0, leases update 6.0": the server's requestsByVerb
// between two stats, each times `scale`, most first.
std::string by_verb(const Json& s0, const Json& s1, double scale) {
    std::vector<std::pair<double, std::string>> v;
    for (const auto& [key, n] : s1["requestsByVerb"].items()) {
        const double d =
            static_cast<double>(n.get<std::int64_t>() - s0["requestsByVerb"].value(key, std::int64_t{0}));
        if (d > 0) v.emplace_back(d * scale, key);
    }
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string out;
    for (const auto& [n, key] : v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " %.1f", n);
        out += (out.empty() ? "" : ", ") + key + buf;
    }
    return out.empty() ? "none" : out;
}

// One mapping of /proc/PID/smaps, summed over its ranges: a file's path,
// or [heap], [stack], [anon] (no name), [vdso], ...
struct Mapping {
    std::string name;
    std::int64_t rss_kib = 0, pss_kib = 0;
    std::string group;
};

// Runs a command to its end, its stdout to `out` (replaced) and its stderr
// appended to `log`; a non-zero exit is a Failure.
void run_command(std::vector<std::string> args, const std::string& out, const std::string& log) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    int err = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err != 0) throw Failure(args[0] + ": " + std::strerror(err));
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw Failure(args[0] + " failed (see " + log + ")");
}

// The fake API server as the bench's child. It prints its port on stdout
// (a pipe) once it listens; everything else goes to a log file.
class FakeServer {
  public:
    FakeServer() = default;
    FakeServer(const FakeServer&) = delete;
    FakeServer& operator=(const FakeServer&) = delete;
    ~FakeServer() { kill(); }

    void start(const std::string& path, const std::string& work, Observer& obs) {
        int out[2];
        if (::pipe2(out, O_CLOEXEC) != 0) throw Failure("pipe: " + std::string(std::strerror(errno)));
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        posix_spawn_file_actions_addopen(&fa, 2, (work + "/apiserver.log").c_str(),
                                         O_WRONLY | O_CREAT | O_APPEND, 0644);
        std::vector<std::string> args = {path,      "--cert", work + "/cert.pem", "--key", work + "/key.pem",
                                         "--token", kToken,   "--bookmark-ms",    "60000"};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        int err = posix_spawn(&pid_, path.c_str(), &fa, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        ::close(out[1]);
        if (err != 0) {
            pid_ = -1;
            ::close(out[0]);
            throw Failure(path + ": " + std::strerror(err));
        }
        pidfd_ = open_pidfd(pid_);
        bool readable = false;
        bool ok = obs.wait_until(
            10 * kSecond, [&] { return readable; }, out[0], &readable);
        char buf[256] = {};
        ssize_t n = ok ? ::read(out[0], buf, sizeof buf - 1) : -1;
        ::close(out[0]);
        const char* at = n > 0 ? std::strstr(buf, "127.0.0.1:") : nullptr;
        if (!at) throw Failure(path + " did not say where it listens (see " + work + "/apiserver.log)");
        port_ = std::atoi(at + 10);
    }

    // SIGKILL, as a network gone at once: every connection is reset.
    void kill() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        if (pidfd_ >= 0) ::close(pidfd_);
        pid_ = pidfd_ = -1;
    }
    int port() const { return port_; }

  private:
    pid_t pid_ = -1;
    int pidfd_ = -1;
    int port_ = 0;
};

// --h2: nghttpx (Debian's nghttp2-proxy) in front of the server for the
// agent, as kube-apiserver offers h2 by ALPN and the test server speaks
// HTTP/1.1 only; the bench's own control requests go to the server.
class H2Proxy {
  public:
    H2Proxy() = default;
    H2Proxy(const H2Proxy&) = delete;
    H2Proxy& operator=(const H2Proxy&) = delete;
    ~H2Proxy() { kill(); }

    void start(int backend, const std::string& work, Observer& obs) {
        port_ = free_loopback_port();
        std::vector<std::string> args = {"nghttpx",
                                         "--conf=/dev/null",
                                         "--frontend=127.0.0.1," + std::to_string(port_),
                                         "--backend=127.0.0.1," + std::to_string(backend) + ";;tls",
                                         "--insecure",  // the bench's certificate names no host
                                         "--no-ocsp",
                                         "--workers=1",
                                         "--errorlog-file=" + work + "/nghttpx.log",
                                         work + "/key.pem",
                                         work + "/cert.pem"};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        if (int err = posix_spawnp(&pid_, "nghttpx", nullptr, nullptr, argv.data(), environ); err != 0) {
            pid_ = -1;
            throw Failure(std::string("nghttpx (apt-get install nghttp2-proxy): ") + std::strerror(err));
        }
        // nghttpx says nothing when it listens: its port is tried until it
        // answers (a bench's set-up, not a measurement).
        obs.expect("nghttpx listens", 10 * kSecond, [&] {
            if (connects()) return true;
            obs.wait_until(kSecond / 50, [] { return false; });
            return connects();
        });
    }
    void kill() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }
    int port() const { return port_; }

  private:
    static int free_loopback_port() {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
            throw Failure("a free loopback port: " + std::string(std::strerror(errno)));
        ::close(fd);
        return ntohs(a.sin_port);
    }
    bool connects() const {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<std::uint16_t>(port_));
        const bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        if (fd >= 0) ::close(fd);
        return ok;
    }
    pid_t pid_ = -1;
    int port_ = 0;
};

// The fake's /_control endpoints over one kept-alive TLS connection.
class Control {
  public:
    Control() : h_(curl_easy_init()) {
        if (!h_) throw Failure("curl_easy_init failed");
    }
    Control(const Control&) = delete;
    Control& operator=(const Control&) = delete;
    ~Control() { curl_easy_cleanup(h_); }

    void connect(int port, const std::string& ca) {
        base_ = "https://127.0.0.1:" + std::to_string(port) + "/_control";
        ca_ = ca;
    }

    Json call(const char* method, const std::string& path, const std::string& body = {}) {
        const std::string url = base_ + path;
        std::string reply;
        curl_easy_reset(h_);
        curl_easy_setopt(h_, CURLOPT_URL, url.c_str());
        curl_easy_setopt(h_, CURLOPT_CAINFO, ca_.c_str());
        curl_easy_setopt(h_, CURLOPT_TIMEOUT_MS, 30'000L);
        curl_easy_setopt(h_, CURLOPT_CUSTOMREQUEST, method);
        if (!body.empty()) {
            curl_easy_setopt(h_, CURLOPT_POSTFIELDS, body.c_str());
            curl_easy_setopt(h_, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
        }
        curl_easy_setopt(h_, CURLOPT_WRITEDATA, &reply);
        curl_easy_setopt(
            h_, CURLOPT_WRITEFUNCTION, +[](char* p, size_t, size_t n, void* out) {
                static_cast<std::string*>(out)->append(p, n);
                return n;
            });
        CURLcode rc = curl_easy_perform(h_);
        long status = 0;
        curl_easy_getinfo(h_, CURLINFO_RESPONSE_CODE, &status);
        if (rc != CURLE_OK) throw Failure(std::string(method) + " " + url + ": " + curl_easy_strerror(rc));
        if (status < 200 || status >= 300)
            throw Failure(std::string(method) + " " + url + ": HTTP " + std::to_string(status) + ": " +
                          reply);
        return Json::parse(reply, nullptr, false);
    }

  private:
    CURL* h_;
    std::string base_, ca_;
};

class Bench {
  public:
    explicit Bench(Options o) : o_(std::move(o)) {}
    Bench(const Bench&) = delete;
    Bench& operator=(const Bench&) = delete;
    ~Bench() { cleanup(); }

    void run();
    const std::vector<Row>& rows() const { return rows_; }
    const std::vector<Mapping>& mappings() const { return mappings_; }

  private:
    Json daemonset(int i) const;
    // PUTs DaemonSet i on the server; returns the time just before.
    Ns put(int i) { return put_body(i, daemonset(i).dump()); }
    Ns put_body(int i, const std::string& body) {
        Ns t = mono_ns();
        Json r = control_.call("PUT", "/daemonsets/bench/" + ds_name(i), body);
        uids_[static_cast<std::size_t>(i)] = r["metadata"].value("uid", "");
        return t;
    }
    void put_revision(int i);
    int running_since(Ns since) const;
    // `daemonlet status -o json` of the running agent.
    Json agent_status() const {
        run_command({o_.daemonlet, "status", "-o", "json", "--config", w_.config}, w_.root + "/status.json",
                    w_.root + "/status.log");
        std::ifstream in(w_.root + "/status.json");
        Json j = Json::parse(in, nullptr, false);
        if (!j.is_object() || !j.contains("apiServer"))
            throw Failure("daemonlet status -o json: no apiServer");
        return j["apiServer"];
    }
    void settle(int daemonsets, const char* link);
    void quiet(int created, int deleted);
    void start_agent() { agent_.start(o_.daemonlet, w_.config, w_.notify_socket, w_.agent_log); }

    void setup();
    void fresh_start();
    void changes();
    void memory();
    void smaps(pid_t pid);
    void idle();
    void offline_boot();
    void teardown();
    void cleanup();

    Options o_;
    WorkDir w_;
    std::unique_ptr<Observer> obs_;
    FakeServer server_;
    H2Proxy proxy_;
    Control control_;
    AgentProcess agent_;
    std::vector<int> generation_;
    std::vector<std::string> uids_;
    std::vector<Row> rows_;
    std::vector<Mapping> mappings_;  // the agent's, most resident first; the groups' sums last
};

Json Bench::daemonset(int i) const {
    const std::string n = ds_name(i);
    // "$$$$" is "$$" once the kubelet's $(VAR) expansion has unescaped it.
    Json container = {
        {"name", "main"},
        {"image", "none"},
        {"command", {"/bin/sh", "-c", "echo $$$$ > " + w_.marks + "/$(POD_NAME); exec /bin/sleep infinity"}},
        {"env",
         {{{"name", "POD_NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}},
          {{"name", "GENERATION"}, {"value", std::to_string(generation_[static_cast<std::size_t>(i)])}}}}};
    return {{"apiVersion", "apps/v1"},
            {"kind", "DaemonSet"},
            {"metadata", {{"name", n}, {"namespace", "bench"}}},
            {"spec",
             {{"selector", {{"matchLabels", {{"app", n}}}}},
              {"template",
               {{"metadata", {{"labels", {{"app", n}}}}},
                {"spec", {{"terminationGracePeriodSeconds", 2}, {"containers", {container}}}}}}}}};
}

// DaemonSet i's current ControllerRevision as the DaemonSet controller
// writes it (controller_history.go NewControllerRevision, update.go
// getPatch), as tests/agent/test_api_pods.sh does: name <ds>-<hash>, the
// template's labels and the hash label, data the template as a patch,
// revision the generation, owned by the DaemonSet. The hash is the bench's
// (the agent reads it, never computes it).
void Bench::put_revision(int i) {
    const std::string n = ds_name(i);
    const int gen = generation_[static_cast<std::size_t>(i)];
    const std::string hash = "bench" + std::to_string(gen);
    Json tmpl = daemonset(i)["spec"]["template"];
    tmpl["$patch"] = "replace";
    Json rev = {{"metadata",
                 {{"name", n + "-" + hash},
                  {"labels", {{"app", n}, {"controller-revision-hash", hash}}},
                  {"ownerReferences",
                   {{{"apiVersion", "apps/v1"},
                     {"kind", "DaemonSet"},
                     {"name", n},
                     {"uid", uids_[static_cast<std::size_t>(i)]},
                     {"controller", true},
                     {"blockOwnerDeletion", true}}}}}},
                {"data", {{"spec", {{"template", tmpl}}}}},
                {"revision", gen}};
    control_.call("PUT", "/controllerrevisions/bench/" + n + "-" + hash, rev.dump());
}

// The agent has nothing left to tell the server: no Event queued and, with
// pod status, a Pod per DaemonSet, at least `created` Pods created and
// `deleted` deleted since its start, and no Pod request for one status
// check period (10 s, the status manager's syncBatch). Checked every 11 s,
// at most 12 times.
void Bench::quiet(int created, int deleted) {
    auto counters = [](const Json& p) {
        return p.value("created", 0) + p.value("taken", 0) + p.value("patches", 0) + p.value("deleted", 0);
    };
    Json a = agent_status();
    int last = -1;
    for (int k = 0;; ++k) {
        const bool events = a["events"].value("queued", 0) == 0;
        bool pods = true;
        if (o_.pod_status) {
            const Json& p = a["podStatus"];
            pods = p.value("pods", 0) == o_.daemonsets && p.value("created", 0) >= created &&
                   p.value("deleted", 0) >= deleted && counters(p) == last;
            last = counters(p);
        }
        if (events && pods) return;
        if (k == 12)
            throw Failure("the agent did not turn quiet: events " + a["events"].dump() + ", podStatus " +
                          a["podStatus"].dump());
        obs_->wait_until(11 * kSecond, [] { return false; });
        a = agent_status();
    }
}

// How many DaemonSets have had a container started since `since`.
int Bench::running_since(Ns since) const {
    int n = 0;
    for (const auto& [ds, m] : obs_->latest())
        if (m.at >= since) ++n;
    return n;
}

// The agent has done what it was doing: its last STATUS= says every pod
// runs, none is stopping, and the link is in the state wanted.
void Bench::settle(int daemonsets, const char* link) {
    const std::string n = std::to_string(daemonsets);
    const std::string want = n + " DaemonSets, " + n + "/" + n + " pods running, API server " + link;
    obs_->expect(("the agent reports: " + want).c_str(), 60 * kSecond,
                 [&] { return obs_->status() == want; });
}

void Bench::setup() {
    w_ = make_work_dir(o_.work_parent, "daemonlet-bench-cluster");
    obs_ = std::make_unique<Observer>(w_.marks, w_.notify_socket);
    run_command({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                 "-nodes", "-keyout", w_.root + "/key.pem", "-out", w_.root + "/cert.pem", "-subj",
                 "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "2"},
                w_.root + "/openssl.log", w_.root + "/openssl.log");
    server_.start(o_.fake, w_.root, *obs_);
    control_.connect(server_.port(), w_.root + "/cert.pem");
    if (o_.h2) proxy_.start(server_.port(), w_.root, *obs_);
    const std::string kubeconfig = w_.root + "/kubeconfig";
    std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\nclusters:\n- name: bench\n  cluster:\n"
                              << "    server: https://127.0.0.1:" << (o_.h2 ? proxy_.port() : server_.port())
                              << "\n    certificate-authority: " << w_.root << "/cert.pem\n"
                              << "users:\n- name: bench\n  user: {token: " << kToken << "}\n"
                              << "contexts:\n- name: bench\n  context: {cluster: bench, user: bench}\n"
                              << "current-context: bench\n";
    ::chmod(kubeconfig.c_str(), 0600);
    // The defaults of dist/config.yaml, and the cluster as the only source.
    std::ofstream(w_.config) << "nodeName: bench-node\nmanifestDir: " << w_.manifests
                             << "\nstateDir: " << w_.state
                             << "\nruntime: {type: exec}\nfileCheckFrequency: 20s\n"
                                "crashLoopBackoff: {initial: 10s, max: 300s}\n"
                                "apiServer: {kubeconfig: "
                             << kubeconfig << ", registerNode: " << (o_.register_node ? "true" : "false")
                             << ", podStatus: "
                             << (o_.pod_status ? "true" : "false")
                             // The test server runs no DaemonSet controller to
                             // delete the old Pods: the board rolls each change
                             // itself, as before apiServer.rollouts (issue 14 §3).
                             << ", rollouts: board}\n";
    generation_.assign(static_cast<std::size_t>(o_.daemonsets), 1);
    uids_.assign(static_cast<std::size_t>(o_.daemonsets), "");
    for (int i = 0; i < o_.daemonsets; ++i) {
        put(i);
        if (o_.pod_status) put_revision(i);
    }
}

void Bench::fresh_start() {
    std::fprintf(stderr, "bench_cluster: start with %d DaemonSets on the server\n", o_.daemonsets);
    Ns t0 = mono_ns();
    start_agent();
    obs_->expect("every pod running after a fresh start", 120 * kSecond,
                 [&] { return running_since(t0) == o_.daemonsets; });
    Ns last = 0;
    for (const auto& [ds, m] : obs_->latest()) last = std::max(last, m.at);
    settle(o_.daemonsets, "connected");
    const std::string n = std::to_string(o_.daemonsets);
    rows_.push_back({"fresh start, " + n + " DaemonSets on the server -> all " + n + " pods running",
                     {},
                     "",
                     "",
                     fmt(ms(last - t0), "ms")});
    rows_.push_back({"fresh start -> STATUS= says API server connected (3 s of a healthy link)",
                     {},
                     "",
                     "",
                     fmt(ms(mono_ns() - t0), "ms")});
}

void Bench::changes() {
    // The start's requests (with pod status: a Pod created and patched per
    // DaemonSet) are done before the window.
    quiet(o_.daemonsets, 0);
    Json a0 = agent_status();
    std::fprintf(stderr, "bench_cluster: %d template changes on the server\n", o_.changes);
    const Json s0 = control_.call("GET", "/stats");
    const Ns t0 = mono_ns();
    Row started{"server change (PUT) -> new process running (maxUnavailable 1: old stopped first)",
                {},
                "ms",
                "within 1 s",
                ""};
    Row gone{"server change (PUT) -> old process gone", {}, "ms", "", ""};
    Row answered{"the PUT itself (bench -> fake, kept-alive TLS), included above", {}, "ms", "", ""};
    for (int k = 0; k < o_.changes; ++k) {
        const int i = k % o_.daemonsets;
        const std::string name = ds_name(i);
        ++generation_[static_cast<std::size_t>(i)];
        const std::string body = daemonset(i).dump();
        // The controller writes the new revision when it sees the change;
        // written first, the agent never waits for it (its retry is timed
        // by the agent, not the server).
        if (o_.pod_status) put_revision(i);
        auto r = obs_->replace(
            name,
            [&] {
                Ns t = put_body(i, body);
                answered.samples.push_back(ms(mono_ns() - t));
                return t;
            },
            "the new pod runs and the old one is gone after a change on the server");
        started.samples.push_back(ms(r.started));
        gone.samples.push_back(ms(r.gone));
    }
    const Ns t1 = mono_ns();
    rows_.push_back(started);
    rows_.push_back(gone);
    rows_.push_back(answered);

    // The rollout window: from just before the first PUT until the agent is
    // quiet after the last change (its Pods' terminal statuses, deletions,
    // creations and status patches sent), per change, and per hour at the
    // bench's pace of changes (the first PUT to the last change's new
    // container, the quiet wait not counted in the hour but its requests
    // counted in the changes).
    settle(o_.daemonsets, "connected");
    const int created0 = o_.pod_status ? a0["podStatus"].value("created", 0) : 0;
    const int deleted0 = o_.pod_status ? a0["podStatus"].value("deleted", 0) : 0;
    // At least one Pod made and one deleted: a revision replaced before the
    // status manager made its Pod never gets one (the changes come within
    // milliseconds of each other), so the count per change is not a bound.
    quiet(created0 + 1, deleted0 + 1);
    const Json s1 = control_.call("GET", "/stats");
    const double per_change = 1.0 / o_.changes;
    const double changes_per_hour = o_.changes * 3600.0 * kSecond / static_cast<double>(t1 - t0);
    const std::string w = "rollout, " + std::to_string(o_.changes) + " changes, per change: ";
    Traffic all;
    for (const auto& [kind, t] : traffic(s0, s1)) {
        all.requests += t.requests;
        all.down += t.down;
        all.up += t.up;
        if (t.requests + t.down + t.up == 0) continue;
        char buf[96];
        std::snprintf(buf, sizeof buf, "%.1f requests, %.2f KiB down, %.2f KiB up", t.requests * per_change,
                      t.down * per_change / 1024.0, t.up * per_change / 1024.0);
        rows_.push_back({w + kind, {}, "", "", buf});
    }
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.1f requests, %.2f KiB down, %.2f KiB up", all.requests * per_change,
                  all.down * per_change / 1024.0, all.up * per_change / 1024.0);
    rows_.push_back({w + "all (TCP payload, down: server to agent)", {}, "", "", buf});
    rows_.push_back(
        {w + "requests by verb (the server's requestsByVerb)", {}, "", "", by_verb(s0, s1, per_change)});
    std::snprintf(buf, sizeof buf, "%.0f changes an hour: %.0f requests, %.0f KiB down, %.0f KiB up",
                  changes_per_hour, all.requests * per_change * changes_per_hour,
                  all.down * per_change * changes_per_hour / 1024.0,
                  all.up * per_change * changes_per_hour / 1024.0);
    rows_.push_back({"rollout, per hour at the bench's pace (first PUT to last new container: " +
                         fmt(ms(t1 - t0) / 1000.0, "s") + ")",
                     {},
                     "",
                     "",
                     buf});
}

void Bench::memory() {
    settle(o_.daemonsets, "connected");
    const std::string n = std::to_string(o_.daemonsets);
    ProcFigures a = proc_figures(agent_.pid());
    auto mib = [](std::int64_t kib) { return fmt(static_cast<double>(kib) / 1024.0, "MiB"); };
    rows_.push_back({"agent VmRSS, following " + n + " DaemonSets with their pods running, after the changes",
                     {},
                     "",
                     "",
                     mib(a.vm_rss_kib)});
    rows_.push_back({"agent Pss (smaps_rollup)", {}, "", "", mib(a.pss_kib)});
    rows_.push_back({"agent RssAnon (heap, stacks)", {}, "", "", mib(a.rss_anon_kib)});
    smaps(agent_.pid());
    for (const auto& m : mappings_)
        if (m.name.rfind("group: ", 0) == 0)
            rows_.push_back({"agent Rss of " + m.name.substr(7),
                             {},
                             "",
                             "",
                             mib(m.rss_kib) + " (Pss " + mib(m.pss_kib) + ")"});
}

// Where the agent's resident pages are: /proc/PID/smaps summed per mapping
// name (a file, or [heap], [stack], [thread stacks], [malloc arenas],
// [anon] ...), each in a group:
//   the agent's binary;
//   libcurl and the libraries it needs that the agent does not link itself
//   (libcurl is loaded on the first request to the API server, curl_api.h):
//   ldd of the mapped libcurl, less ldd of the agent;
//   the libraries the agent links (ldd of the agent);
//   other files (loaded with dlopen and not libcurl's, or not libraries);
//   anonymous memory (heap, stacks, malloc arenas);
//   the kernel's ([vdso], [vvar], [vsyscall]).
void Bench::smaps(pid_t pid) {
    std::map<std::string, Mapping> by_name;
    {
        std::ifstream in("/proc/" + std::to_string(pid) + "/smaps");
        std::string line, current, prev_perms;
        unsigned long prev_end = 0;
        bool prev_anon = false;
        while (std::getline(in, line)) {
            const auto colon = line.find(':');
            const auto space = line.find(' ');
            // A range's header: "start-end perms offset dev inode [path]".
            if (space != std::string::npos && (colon == std::string::npos || space < colon) &&
                line.find('-') < space) {
                std::istringstream h(line);
                std::string range, perms, offset, dev, inode;
                h >> range >> perms >> offset >> dev >> inode;
                std::string name;
                std::getline(h >> std::ws, name);
                const auto dash = range.find('-');
                const unsigned long start = std::stoul(range.substr(0, dash), nullptr, 16);
                const unsigned long end = std::stoul(range.substr(dash + 1), nullptr, 16);
                // Unnamed memory, told apart by glibc's layouts: a thread's
                // stack is a read-write range right above its guard (an
                // inaccessible range that ends where it starts); a malloc
                // arena of a thread (not the main one, which is [heap]) is a
                // heap aligned to its 64 MiB (HEAP_MAX_SIZE on 64 bits).
                if (!name.empty())
                    current = name;
                else if (perms.rfind("rw", 0) == 0 && start % (64ul << 20) == 0)
                    current = "[malloc arenas]";
                else if (perms.rfind("rw", 0) == 0 && prev_anon && prev_perms.rfind("---", 0) == 0 &&
                         prev_end == start)
                    current = "[thread stacks]";
                else
                    current = "[anon]";
                prev_anon = name.empty();
                prev_perms = perms;
                prev_end = end;
                by_name[current].name = current;
                continue;
            }
            if (current.empty() || colon == std::string::npos) continue;
            const std::string key = line.substr(0, colon);
            if (key != "Rss" && key != "Pss") continue;
            const std::int64_t kib = std::atoll(line.c_str() + colon + 1);
            (key == "Rss" ? by_name[current].rss_kib : by_name[current].pss_kib) += kib;
        }
    }
    if (by_name.empty()) throw Failure("/proc/" + std::to_string(pid) + "/smaps: nothing read");
    // The libraries ldd lists for an ELF file, by their canonical paths (as
    // smaps names them: /usr/lib/..., symbolic links resolved).
    auto ldd = [&](const std::string& file) {
        const std::string out = w_.root + "/ldd.txt";
        run_command({"ldd", file}, out, w_.root + "/ldd.log");
        std::set<std::string> libs;
        std::ifstream in(out);
        for (std::string line; std::getline(in, line);) {
            const auto arrow = line.find("=> /");
            std::string path = arrow != std::string::npos ? line.substr(arrow + 3)
                               : line.find_first_not_of(" \t") != std::string::npos &&
                                       line[line.find_first_not_of(" \t")] == '/'
                                   ? line.substr(line.find_first_not_of(" \t"))
                                   : "";
            path = path.substr(0, path.find(" ("));
            std::error_code ec;
            if (!path.empty()) libs.insert(fs::canonical(path, ec).string());
        }
        return libs;
    };
    const std::string self = fs::canonical(o_.daemonlet).string();
    const std::set<std::string> linked = ldd(self);
    std::set<std::string> curl;
    for (const auto& [name, m] : by_name)
        if (name.find("/libcurl") != std::string::npos && name.find(".so") != std::string::npos) {
            curl = ldd(name);
            curl.insert(name);
        }
    for (auto& [name, m] : by_name) {
        if (name == self)
            m.group = "the agent's binary";
        else if (name[0] == '/' && curl.count(name) && !linked.count(name))
            m.group = "libcurl and its closure";
        else if (name[0] == '/' && linked.count(name))
            m.group = "the libraries the agent links";
        else if (name[0] == '/')
            m.group = "other files (dlopen)";
        else if (name == "[vdso]" || name == "[vvar]" || name == "[vsyscall]")
            m.group = "the kernel's ([vdso], [vvar])";
        else
            m.group = "anonymous (heap, stacks, arenas)";
        mappings_.push_back(m);
    }
    std::sort(mappings_.begin(), mappings_.end(),
              [](const Mapping& a, const Mapping& b) { return a.rss_kib > b.rss_kib; });
    std::map<std::string, Mapping> groups;
    std::map<std::string, int> files;
    for (const auto& m : mappings_) {
        Mapping& g = groups[m.group];
        g.name = "group: " + m.group;
        g.rss_kib += m.rss_kib;
        g.pss_kib += m.pss_kib;
        ++files[m.group];
    }
    std::vector<Mapping> sums;
    for (auto& [name, g] : groups) {
        g.group = std::to_string(files[name]) + (files[name] == 1 ? " mapping" : " mappings");
        sums.push_back(g);
    }
    std::sort(sums.begin(), sums.end(),
              [](const Mapping& a, const Mapping& b) { return a.rss_kib > b.rss_kib; });
    mappings_.insert(mappings_.end(), sums.begin(), sums.end());
}

void Bench::idle() {
    std::fprintf(stderr, "bench_cluster: idle and connected for %d min\n", o_.idle_minutes);
    settle(o_.daemonsets, "connected");
    // The Events of the changes are sent as they happen; one whose POST
    // failed waits for the next Lease renewal (10 s). The window starts
    // with none queued: checked once per Lease period, at most 6 times.
    Json a0 = agent_status();
    for (int k = 0; a0["events"].value("queued", 0) > 0; ++k) {
        if (k == 6) throw Failure("the agent keeps Events queued while connected: " + a0["events"].dump());
        obs_->wait_until(10 * kSecond, [] { return false; });
        a0 = agent_status();
    }
    const std::size_t marks0 = obs_->marks().size();
    const Json s0 = control_.call("GET", "/stats");
    const Ns t0 = mono_ns();
    obs_->wait_until(static_cast<Ns>(o_.idle_minutes) * 60 * kSecond, [] { return false; });
    const Json s1 = control_.call("GET", "/stats");
    const Json a1 = agent_status();
    const double hours = static_cast<double>(mono_ns() - t0) / (3600.0 * kSecond);
    if (obs_->status().find("API server connected") == std::string::npos)
        throw Failure("the link did not stay connected while idle: " + obs_->status());

    // A row per kind of request (lease: the Lease renewals; watch: the
    // DaemonSet watch, its bookmarks and re-watches; list, event, node, pod
    // (the node's Pods watched, their status), revision), counted in the
    // window, then their sum.
    const std::string w = "idle connected " + std::to_string(o_.idle_minutes) + " min, per hour: ";
    auto per_hour = [&](double v) { return v / hours; };
    auto kib = [&](double bytes) { return fmt(per_hour(bytes) / 1024.0, "KiB"); };
    auto line = [&](const std::string& what, double n, double down, double up) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.0f requests", per_hour(n));
        rows_.push_back(
            {w + what, {}, "", "", std::string(buf) + ", " + kib(down) + " down, " + kib(up) + " up"});
    };
    double all_n = 0, all_down = 0, all_up = 0;
    for (const auto& [kind, t] : traffic(s0, s1)) {
        const double n = t.requests, down = t.down, up = t.up;
        all_n += n;
        all_down += down;
        all_up += up;
        if (n + down + up == 0 && kind != "lease" && kind != "watch") continue;
        line(kind == "lease"   ? "Lease renewals (" + kind + ")"
             : kind == "watch" ? "DaemonSet watch: bookmarks, re-watches (" + kind + ")"
                               : kind,
             n, down, up);
    }
    line("all (TCP payload: TLS records, HTTP framing; down: server to agent)", all_n, all_down, all_up);
    rows_.push_back(
        {w + "requests by verb (the server's requestsByVerb)", {}, "", "", by_verb(s0, s1, 1.0 / hours)});
    auto counted = [&](const char* key) {
        return static_cast<double>(a1.value(key, std::int64_t{0}) - a0.value(key, std::int64_t{0}));
    };
    char own[128];
    std::snprintf(own, sizeof own, "%.0f requests, %s of response bodies", per_hour(counted("requests")),
                  kib(counted("bytesReceived")).c_str());
    rows_.push_back(
        {w + "the agent's own count (daemonlet status: requests, bytesReceived)", {}, "", "", own});
    rows_.push_back({"the same for a 30-day month",
                     {},
                     "",
                     "",
                     fmt(per_hour(all_down + all_up) * 24 * 30 / (1024.0 * 1024.0), "MiB")});
    std::map<std::string, int> reasons;
    for (std::size_t k = s0["events"].size(); k < s1["events"].size(); ++k)
        ++reasons[s1["events"][k].value("reason", "?")];
    std::string sent = std::to_string(s1["events"].size() - s0["events"].size());
    for (const auto& [reason, n] : reasons)
        sent += (sent.find(' ') == std::string::npos ? ": " : ", ") + reason + " " + std::to_string(n);
    rows_.push_back({"idle: Events sent in the window", {}, "", "", sent});
    rows_.push_back({"idle: containers started", {}, "", "0", std::to_string(obs_->marks().size() - marks0)});
}

void Bench::offline_boot() {
    std::fprintf(stderr, "bench_cluster: %d DaemonSets left, server killed, reboot from the cache\n",
                 o_.offline);
    std::vector<std::pair<pid_t, std::uint64_t>> removed;
    for (int i = o_.offline; i < o_.daemonsets; ++i) {
        const Mark& m = obs_->latest().at(ds_name(i));
        removed.emplace_back(m.pid, m.start_time);
        control_.call("DELETE", "/daemonsets/bench/" + ds_name(i));
    }
    obs_->wait_exits(removed, "the pods of the DaemonSets deleted on the server stop");
    settle(o_.offline, "connected");

    server_.kill();
    proxy_.kill();
    agent_.stop(SIGKILL, *obs_);
    std::vector<std::pair<pid_t, std::uint64_t>> procs = live_shims(w_.state);
    for (int i = 0; i < o_.offline; ++i) {
        const Mark& m = obs_->latest().at(ds_name(i));
        procs.emplace_back(m.pid, m.start_time);
    }
    for (auto [pid, start] : procs)
        if (same_process(pid, start)) ::kill(pid, SIGKILL);
    obs_->wait_exits(procs, "a killed shim or container exits");

    obs_->forget_ready();
    Ns t0 = mono_ns();
    start_agent();
    obs_->expect("READY=1 after a boot with no API server", 60 * kSecond,
                 [&] { return obs_->ready_at().has_value(); });
    obs_->expect("every cached pod running after a boot with no API server", 60 * kSecond,
                 [&] { return running_since(t0) >= o_.offline; });
    Ns last = 0;
    for (const auto& [ds, m] : obs_->latest())
        if (m.at >= t0) last = std::max(last, m.at);
    settle(o_.offline, "disconnected");
    if (running_since(t0) != o_.offline)
        throw Failure(std::to_string(running_since(t0)) + " pods started from the cache, expected " +
                      std::to_string(o_.offline));
    const std::string what = "boot with no API server (connection refused), " + std::to_string(o_.offline) +
                             " DaemonSets cached, their processes gone -> ";
    rows_.push_back({what + "READY=1", {}, "", "", fmt(ms(*obs_->ready_at() - t0), "ms")});
    rows_.push_back({what + "all pods running", {}, "", "", fmt(ms(last - t0), "ms")});
}

// The agent stopped (its pods keep running, by design), then its shims and
// containers.
void Bench::teardown() {
    agent_.stop(SIGTERM, *obs_);
    std::vector<std::pair<pid_t, std::uint64_t>> procs = live_shims(w_.state);
    for (const auto& [ds, m] : obs_->latest()) procs.emplace_back(m.pid, m.start_time);
    for (auto [pid, start] : procs)
        if (same_process(pid, start)) ::kill(pid, SIGKILL);
    obs_->wait_exits(procs, "a shim or container exits at the end");
}

// After a failure too: nothing of the bench's may keep running, and no
// mount may stay: the pods' projected service account volumes (tmpfs, the
// agent mounts them as root) outlive the agent, as their pods do; detached
// so that the work directory can go.
void Bench::cleanup() {
    if (w_.root.empty()) return;
    server_.kill();
    proxy_.kill();
    if (!o_.keep) unmount_below(w_.root);
    kill_all_and_clean(agent_, w_.state, obs_.get(), w_.root, o_.keep, "bench_cluster");
}

void Bench::run() {
    setup();
    fresh_start();
    changes();
    memory();
    idle();
    offline_boot();
    teardown();
}

// The agent's smaps by mapping: the `top` most resident, then the groups'
// sums.
void print_mappings(const std::vector<Mapping>& mappings, std::size_t top) {
    if (mappings.empty()) return;
    std::printf("\nThe agent's resident memory by mapping (/proc/PID/smaps, after the changes):\n\n");
    std::printf("| Mapping | Rss KiB | Pss KiB | group |\n|---|---|---|---|\n");
    std::size_t shown = 0;
    for (const auto& m : mappings) {
        const bool sum = m.name.rfind("group: ", 0) == 0;
        // Every unnamed mapping is shown: heap, stacks and arenas are what
        // the agent's own code and threads decide.
        const bool anon = !sum && m.name[0] != '/' && m.rss_kib > 0;
        if (!sum && shown++ >= top && !anon) continue;
        std::printf("| %s%s%s | %lld | %lld | %s |\n", sum ? "**" : "", m.name.c_str(), sum ? "**" : "",
                    static_cast<long long>(m.rss_kib), static_cast<long long>(m.pss_kib), m.group.c_str());
    }
}

const char* const kUsage =
    "usage: bench_cluster [--daemonlet PATH] [--fake-apiserver PATH] [--daemonsets N] [--changes N]\n"
    "                     [--idle-minutes N] [--offline-daemonsets N] [--register-node] [--pod-status]\n"
    "                     [--h2] [--work-parent DIR] [--keep]\n";

}  // namespace

int main(int argc, char** argv) {
    Options o;
    std::string command = argv[0];
    for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
    const Flags flags{
        {{"--daemonlet", &o.daemonlet}, {"--fake-apiserver", &o.fake}, {"--work-parent", &o.work_parent}},
        {{"--daemonsets", &o.daemonsets},
         {"--changes", &o.changes},
         {"--idle-minutes", &o.idle_minutes},
         {"--offline-daemonsets", &o.offline}},
        {{"--keep", &o.keep},
         {"--register-node", &o.register_node},
         {"--pod-status", &o.pod_status},
         {"--h2", &o.h2}}};
    if (auto exit = parse_flags(argc, argv, flags, kUsage)) return *exit;
    if (o.daemonsets < 1 || o.daemonsets > 999 || o.changes < 1 || o.idle_minutes < 1 || o.offline < 1 ||
        o.offline > o.daemonsets) {
        std::fputs(
            "bench_cluster: --daemonsets 1..999, --changes and --idle-minutes at least 1, "
            "--offline-daemonsets 1..--daemonsets\n",
            stderr);
        return 2;
    }
    if (o.pod_status && !o.register_node) {
        // The agent refuses podStatus without a Node (core/config.cpp); the
        // bench registers one, it does not create the Node itself.
        std::fputs("bench_cluster: --pod-status needs --register-node\n", stderr);
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = 0;
    {
        Bench bench(o);
        try {
            bench.run();
        } catch (const std::exception& f) {  // a Failure, or /proc or the filesystem failing under us
            std::fprintf(stderr,
                         "bench_cluster: FAILED: %s (see the logs in the work directory; --keep keeps it)\n",
                         f.what());
            rc = 1;
        }
        std::printf("command: %s\n", command.c_str());
        std::printf(
            "bench_cluster: %d DaemonSets from the test API server (TLS, loopback), %d changes, "
            "idle %d min, boot with %d cached, apiServer.registerNode %s, apiServer.podStatus %s\n",
            o.daemonsets, o.changes, o.idle_minutes, o.offline, o.register_node ? "true" : "false",
            o.pod_status ? "true" : "false");
        print_table(bench.rows());
        print_mappings(bench.mappings(), 15);
    }
    curl_global_cleanup();
    return rc;
}
