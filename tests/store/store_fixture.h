// Shared by the store tests: a fresh temporary directory per test, sample
// records, a raw SQLite connection to look at what the store wrote, and the
// stamps (size, mtime) of the database files.
// No CppUTest here: the test files include it before CppUTest's headers.
#pragma once

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/pod.h"
#include "core/result.h"
#include "store/store.h"

namespace daemonlet::testing {

// mkdtemp under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
  public:
    TempDir() {
        const char* base = std::getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/daemonlet-store-XXXXXX";
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back('\0');
        if (::mkdtemp(buf.data()) == nullptr) std::abort();
        path_ = buf.data();
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    std::string file(const std::string& name) const { return path_ + "/" + name; }

  private:
    std::string path_;
};

// Unwraps a Result or fails the test with its error (`fail` is called with
// the message and does not return: CppUTest's FAIL).
template <class T, class Fail>
T must(Result<T>&& r, Fail&& fail) {
    if (!r.ok()) {
        fail(std::string(r.error().code_name()) + ": " + r.error().message);
        std::abort();
    }
    return std::move(r).value();
}
#define MUST(expr) ::daemonlet::testing::must((expr), [](const std::string& m_) { FAIL(m_.c_str()); })

// ---------------------------------------------------------------------------
// Samples.

inline store::StoredDaemonSet sample_daemonset(const std::string& name, std::int64_t generation = 1) {
    store::StoredDaemonSet ds;
    ds.namespace_ = "kube-system";
    ds.name = name;
    ds.source = "file:/etc/daemonlet/manifests/" + name + ".yaml";
    ds.generation = generation;
    ds.object_json = R"({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":")" + name +
                     R"("},"spec":{"x-unknown":true,"generation":)" + std::to_string(generation) + "}}";
    ds.template_hash = "hash-" + std::to_string(generation);
    ds.updated_at_ms = 1'700'000'000'000 + generation;
    return ds;
}

inline RevisionRecord sample_revision(const std::string& ds, std::int64_t revision) {
    RevisionRecord r;
    r.namespace_ = "kube-system";
    r.daemonset = ds;
    r.revision = revision;
    r.hash = "hash-" + std::to_string(revision);
    r.template_json = R"({"spec":{"containers":[{"image":"agent:)" + std::to_string(revision) + R"("}]}})";
    r.created_at_ms = 1'700'000'000'000 + revision;
    return r;
}

inline PodRecord sample_pod(const std::string& uid, const std::string& ds = "agent") {
    PodRecord p;
    p.uid = uid;
    p.name = ds + "-x7k2p";
    p.namespace_ = "kube-system";
    p.daemonset = ds;
    p.revision_hash = "hash-3";
    p.revision = 3;
    p.phase = PodPhase::Running;
    p.created_at_ms = 1'700'000'000'123;
    p.deleting = false;
    ContainerStatus main;
    main.name = "main";
    main.runtime_id = "c0ffee";
    main.state = ContainerState::Running;
    main.restart_count = 2;
    main.exit_code = 137;
    main.started_at_ms = 1'700'000'001'000;
    main.finished_at_ms = 1'700'000'000'900;
    main.termination_reason = "OOMKilled";
    main.termination_started_at_ms = 1'700'000'000'500;
    main.ready = true;
    main.started = true;
    ContainerStatus side;
    side.name = "sidecar";
    side.runtime_id = "beef";
    side.state = ContainerState::Waiting;
    side.reason = "CrashLoopBackOff";
    side.message = "back-off 20s restarting failed container \"sidecar\" — ünïcode \"quoted\"\n";
    side.restart_count = 5;
    side.exit_code = 1;
    p.containers = {main, side};
    return p;
}

inline store::StoredNode sample_node() {
    store::StoredNode n;
    n.labels = {{"kubernetes.io/hostname", "board-7"}, {"kubernetes.io/arch", "arm64"}, {"zone", ""}};
    n.taints = {Taint{"node.kubernetes.io/unschedulable", "", "NoSchedule", ""},
                Taint{"dedicated", "edge", "NoExecute", "2024-01-01T00:00:00Z"}};
    n.unschedulable = true;
    return n;
}

inline store::EventRecord sample_event(const std::string& object, int n) {
    store::EventRecord ev;
    ev.namespace_ = "kube-system";
    ev.object = object;
    ev.type = n % 2 ? "Warning" : "Normal";
    ev.reason = n % 2 ? "BackOff" : "SuccessfulCreate";
    ev.message = "event " + std::to_string(n) + " of " + object;
    ev.time_ms = 1'700'000'000'000 + n;
    return ev;
}

// Some of everything, written one put at a time.
inline Status seed_state(store::Store& s) {
    const Result<bool> puts[] = {
        s.put_daemonset(sample_daemonset("agent")),
        s.put_revision(sample_revision("agent", 1)),
        s.put_pod(sample_pod("uid-1")),
        s.put_node(sample_node()),
        s.add_event(sample_event("DaemonSet/agent", 1)),
        s.put_meta("resourceVersion", "1"),
    };
    for (const auto& r : puts)
        if (!r.ok()) return r.error();
    return Ok{};
}

// A rollout step as the agent would write it on top of seed_state: every
// kind of row, in one transaction. Stops at the first error (dropping the
// transaction, which rolls it back).
inline Status roll_out(store::Store& s) {
    auto tx = s.begin();
    if (!tx) return tx.error();
    auto step = [](auto&& r) -> Status {
        if (!r.ok()) return r.error();
        return Ok{};
    };
    if (auto st = step(s.put_daemonset(sample_daemonset("agent", 2))); !st) return st;
    if (auto st = step(s.put_revision(sample_revision("agent", 2))); !st) return st;
    PodRecord old = sample_pod("uid-1");
    old.deleting = true;
    old.containers[0].state = ContainerState::Terminated;
    if (auto st = step(s.put_pod(old)); !st) return st;
    PodRecord fresh = sample_pod("uid-2");
    fresh.revision = 2;
    fresh.revision_hash = "hash-2";
    if (auto st = step(s.put_pod(fresh)); !st) return st;
    store::StoredNode node = sample_node();
    node.taints.pop_back();
    if (auto st = step(s.put_node(node)); !st) return st;
    if (auto st = step(s.add_event(sample_event("DaemonSet/agent", 2))); !st) return st;
    if (auto st = step(s.add_event(sample_event("Pod/agent-x7k2p", 3))); !st) return st;
    if (auto st = step(s.put_meta("resourceVersion", "2")); !st) return st;
    if (auto st = step(s.prune_revisions("kube-system", "agent", 0, {2})); !st) return st;
    if (auto st = step(s.delete_pod("uid-1")); !st) return st;
    return tx.value()->commit();
}

// The first difference between two pods, or "" when equal.
inline std::string pod_difference(const PodRecord& a, const PodRecord& b) {
    auto scalar = [](const PodRecord& p) {
        return std::make_tuple(p.uid, p.name, p.namespace_, p.daemonset, p.revision_hash, p.revision, p.phase,
                               p.created_at_ms, p.deleting, p.containers.size(), p.init_containers.size(),
                               p.pod_ips, p.source, p.reason, p.message, p.deletion_grace_seconds);
    };
    if (scalar(a) != scalar(b)) return "pod " + a.uid + ": a scalar field differs";
    auto differ = [](const ContainerStatus& x, const ContainerStatus& y) {
        return std::tie(x.name, x.runtime_id, x.state, x.reason, x.message, x.restart_count, x.exit_code,
                        x.started_at_ms, x.finished_at_ms, x.termination_reason, x.termination_started_at_ms,
                        x.ready, x.started, x.sidecar, x.stop_record) !=
               std::tie(y.name, y.runtime_id, y.state, y.reason, y.message, y.restart_count, y.exit_code,
                        y.started_at_ms, y.finished_at_ms, y.termination_reason, y.termination_started_at_ms,
                        y.ready, y.started, y.sidecar, y.stop_record);
    };
    for (std::size_t i = 0; i < a.containers.size(); ++i)
        if (differ(a.containers[i], b.containers[i]))
            return "pod " + a.uid + ": container " + a.containers[i].name + " differs";
    for (std::size_t i = 0; i < a.init_containers.size(); ++i)
        if (differ(a.init_containers[i], b.init_containers[i]))
            return "pod " + a.uid + ": init container " + a.init_containers[i].name + " differs";
    return "";
}

// ---------------------------------------------------------------------------
// A connection of the test's own, to look at the file as SQLite sees it.

class RawDb {
  public:
    explicit RawDb(const std::string& path, int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) {
        if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) error_ = sqlite3_errmsg(db_);
        sqlite3_busy_timeout(db_, 5000);
    }
    ~RawDb() { sqlite3_close(db_); }
    RawDb(const RawDb&) = delete;
    RawDb& operator=(const RawDb&) = delete;

    sqlite3* get() const { return db_; }
    const std::string& error() const { return error_; }

    // Runs SQL; returns "" or the error.
    std::string exec(const std::string& sql) {
        char* msg = nullptr;
        int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg);
        std::string out = rc == SQLITE_OK ? "" : (msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        return out;
    }
    // Every row, columns joined by '|', rows by '\n'; "error: ..." on failure.
    std::string rows(const std::string& sql) {
        sqlite3_stmt* stmt = nullptr;
        if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK)
            return std::string("error: ") + sqlite3_errmsg(db_);
        std::string out;
        int rc;
        while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
            if (!out.empty()) out += '\n';
            for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
                if (i) out += '|';
                const unsigned char* t = sqlite3_column_text(stmt, i);
                out += t ? reinterpret_cast<const char*>(t) : "NULL";
            }
        }
        if (rc != SQLITE_DONE) out = std::string("error: ") + sqlite3_errmsg(db_);
        sqlite3_finalize(stmt);
        return out;
    }
    std::int64_t scalar(const std::string& sql) { return std::strtoll(rows(sql).c_str(), nullptr, 10); }

  private:
    sqlite3* db_ = nullptr;
    std::string error_;
};

// Everything the store keeps, as text (meta key "probe" left out: the fault
// tests write it to show the store still works).
inline std::string dump_state(const std::string& path) {
    RawDb raw(path, SQLITE_OPEN_READONLY);
    return raw.rows("SELECT * FROM daemonsets ORDER BY namespace, name") + "\n--\n" +
           raw.rows("SELECT * FROM revisions ORDER BY namespace, daemonset, revision") + "\n--\n" +
           raw.rows("SELECT * FROM pods ORDER BY uid") + "\n--\n" + raw.rows("SELECT * FROM node") +
           "\n--\n" + raw.rows("SELECT * FROM events ORDER BY id") + "\n--\n" +
           raw.rows("SELECT * FROM meta WHERE key <> 'probe' ORDER BY key");
}

// ---------------------------------------------------------------------------
// Files.

struct FileStamp {
    bool exists = false;
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
    unsigned mode = 0;
    bool operator==(const FileStamp&) const = default;
};

inline FileStamp stamp(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return {};
    return FileStamp{true, static_cast<std::int64_t>(st.st_size),
                     static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                     static_cast<unsigned>(st.st_mode & 07777)};
}

inline std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
}

}  // namespace daemonlet::testing
