// bench_cluster: the figures of issue 4 (following a cluster), measured on
// the real daemonlet, daemonlet-shim and the test API server of this build
// (tests/apiserver/fake_apiserver.cpp), on loopback over TLS.
//
//   bench_cluster [--daemonlet PATH] [--fake-apiserver PATH] [--daemonsets N]
//                 [--changes N] [--idle-minutes N] [--offline-daemonsets N]
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
// Phases, in order: start with N DaemonSets on the server; template changes
// PUT on the server, cycling through the DaemonSets (the default
// RollingUpdate: old pod stopped, then the new one started), each timed from
// just before the PUT to the new container's mark; the agent's memory; an
// idle connected window, with the server's request and wire-byte counters
// read before and after; then all but K DaemonSets deleted on the server,
// the server killed (no network), the agent, shims and containers killed
// (a reboot), and the agent started again from its cache alone.
//
// It prints the command, the machine and a Markdown table; docs/figures.md
// records one run.
#include <curl/curl.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
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
    std::string work_parent = "/tmp";
    bool keep = false;
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

  private:
    Json daemonset(int i) const;
    // PUTs DaemonSet i on the server; returns the time just before.
    Ns put(int i) { return put_body(ds_name(i), daemonset(i).dump()); }
    Ns put_body(const std::string& name, const std::string& body) {
        Ns t = mono_ns();
        control_.call("PUT", "/daemonsets/bench/" + name, body);
        return t;
    }
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
    void start_agent() { agent_.start(o_.daemonlet, w_.config, w_.notify_socket, w_.agent_log); }

    void setup();
    void fresh_start();
    void changes();
    void memory();
    void idle();
    void offline_boot();
    void teardown();
    void cleanup();

    Options o_;
    WorkDir w_;
    std::unique_ptr<Observer> obs_;
    FakeServer server_;
    Control control_;
    AgentProcess agent_;
    std::vector<int> generation_;
    std::vector<Row> rows_;
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
    const std::string kubeconfig = w_.root + "/kubeconfig";
    std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\nclusters:\n- name: bench\n  cluster:\n"
                              << "    server: https://127.0.0.1:" << server_.port()
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
                             << kubeconfig << "}\n";
    generation_.assign(static_cast<std::size_t>(o_.daemonsets), 1);
    for (int i = 0; i < o_.daemonsets; ++i) put(i);
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
    std::fprintf(stderr, "bench_cluster: %d template changes on the server\n", o_.changes);
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
        auto r = obs_->replace(
            name,
            [&] {
                Ns t0 = put_body(name, body);
                answered.samples.push_back(ms(mono_ns() - t0));
                return t0;
            },
            "the new pod runs and the old one is gone after a change on the server");
        started.samples.push_back(ms(r.started));
        gone.samples.push_back(ms(r.gone));
    }
    rows_.push_back(started);
    rows_.push_back(gone);
    rows_.push_back(answered);
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

    auto requests = [&](const std::string& kind) {
        auto n = [&](const Json& s) { return s["requests"].value(kind, std::int64_t{0}); };
        return static_cast<double>(n(s1) - n(s0));
    };
    auto wire = [&](const std::string& kind, const char* dir) {
        auto n = [&](const Json& s) {
            return s["wire"].contains(kind) ? s["wire"][kind].value(dir, std::int64_t{0}) : std::int64_t{0};
        };
        return static_cast<double>(n(s1) - n(s0));
    };
    // Every kind the agent asked for, split into the Lease and the rest
    // (the DaemonSet watch and lists, the Node, Events).
    std::vector<std::string> kinds;
    for (const auto& [kind, v] : s1["wire"].items())
        if (kind != "control") kinds.push_back(kind);
    for (const auto& [kind, v] : s1["requests"].items())
        if (kind != "total" && !s1["wire"].contains(kind)) kinds.push_back(kind);
    // A row per kind of request (lease: the Lease renewals; watch: the
    // DaemonSet watch, its bookmarks and re-watches; list, event, node),
    // counted in the window, then their sum.
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
    for (const auto& kind : kinds) {
        const double n = requests(kind), down = wire(kind, "sent"), up = wire(kind, "received");
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

// After a failure too: nothing of the bench's may keep running.
void Bench::cleanup() {
    if (w_.root.empty()) return;
    server_.kill();
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

const char* const kUsage =
    "usage: bench_cluster [--daemonlet PATH] [--fake-apiserver PATH] [--daemonsets N] [--changes N]\n"
    "                     [--idle-minutes N] [--offline-daemonsets N] [--work-parent DIR] [--keep]\n";

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
        {{"--keep", &o.keep}}};
    if (auto exit = parse_flags(argc, argv, flags, kUsage)) return *exit;
    if (o.daemonsets < 1 || o.daemonsets > 999 || o.changes < 1 || o.idle_minutes < 1 || o.offline < 1 ||
        o.offline > o.daemonsets) {
        std::fputs(
            "bench_cluster: --daemonsets 1..999, --changes and --idle-minutes at least 1, "
            "--offline-daemonsets 1..--daemonsets\n",
            stderr);
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
            "idle %d min, boot with %d cached\n",
            o.daemonsets, o.changes, o.idle_minutes, o.offline);
        print_table(bench.rows());
    }
    curl_global_cleanup();
    return rc;
}
