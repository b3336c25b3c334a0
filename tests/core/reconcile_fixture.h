// Shared rows and checks for the reconciler's table tests
// (test_reconcile.cpp, test_rolling_update.cpp): typed DaemonSets with their
// decisions passed in, pods built field by field, and one checker that
// reports every mismatch by row name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/pod.h"
#include "core/reconcile.h"

namespace daemonlet::testing {

// Seconds on the monotonic clock, in milliseconds (the upstream tests count
// in Unix seconds: time.Unix(50, 0) is s(50)).
constexpr std::int64_t s(std::int64_t seconds) { return seconds * 1000; }

inline IntOrString num(std::int64_t v) { return IntOrString::from_int(v); }
inline IntOrString pct(const char* v) { return IntOrString::from_string(v); }

// A defaulted DaemonSet: RollingUpdate, maxUnavailable 1, maxSurge 0
// (pkg/apis/apps/v1/defaults.go).
inline DaemonSet daemonset(const char* ns, const char* name) {
    DaemonSet ds;
    ds.metadata.namespace_ = ns;
    ds.metadata.name = name;
    ds.spec.update_strategy.type = "RollingUpdate";
    ds.spec.update_strategy.rolling_update = RollingUpdateDaemonSet{num(1), num(0)};
    return ds;
}
// update_test.go newUpdateUnavailable.
inline DaemonSet unavailable(IntOrString v, std::int32_t min_ready = 0) {
    DaemonSet ds = daemonset("default", "foo");
    ds.spec.update_strategy.rolling_update = RollingUpdateDaemonSet{v, std::nullopt};
    ds.spec.min_ready_seconds = min_ready;
    return ds;
}
// update_test.go newUpdateSurge: maxUnavailable 0.
inline DaemonSet surge(IntOrString v, std::int32_t min_ready = 0) {
    DaemonSet ds = daemonset("default", "foo");
    ds.spec.update_strategy.rolling_update = RollingUpdateDaemonSet{num(0), v};
    ds.spec.min_ready_seconds = min_ready;
    return ds;
}
inline DaemonSet on_delete() {
    DaemonSet ds = daemonset("default", "foo");
    ds.spec.update_strategy.type = "OnDelete";
    ds.spec.update_strategy.rolling_update.reset();
    return ds;
}

// Decisions as node_should_run_daemon_pod returns them.
inline Decision runs() { return Decision{true, true, {}}; }
inline Decision no_schedule() {
    return Decision{false, true, {"taint {example.com/maintenance: NoSchedule} is not tolerated"}};
}
inline Decision no_execute() {
    return Decision{false, false, {"taint {example.com/maintenance: NoExecute} is not tolerated"}};
}
inline Decision no_match() {
    return Decision{
        false,
        false,
        {"node(s) didn't match Pod's node affinity/selector", "nodeSelector disktype=ssd does not match"}};
}

// One desired DaemonSet; `ds` is owned by the row.
struct Desired {
    DaemonSet ds;
    std::string hash = "h2";  // the current revision
    std::int64_t revision = 2;
    Decision decision = runs();
};
inline Desired want(DaemonSet ds, Decision d = runs(), const char* hash = "h2", std::int64_t revision = 2) {
    return Desired{std::move(ds), hash, revision, std::move(d)};
}

// A pod, built up: pod("a").old().created(s(50)).ready_at(s(50)).
struct Pod {
    ObservedPod p;

    Pod& in(const char* ns, const char* ds) {
        p.pod.namespace_ = ns;
        p.pod.daemonset = ds;
        p.pod.name = std::string(ds) + "-" + p.pod.uid;
        return *this;
    }
    Pod& rev(const char* hash, std::int64_t revision) {
        p.pod.revision_hash = hash;
        p.pod.revision = revision;
        return *this;
    }
    Pod& old() { return rev("h1", 1); }  // the previous template
    Pod& created(std::int64_t ms) {
        p.pod.created_at_ms = ms;
        return *this;
    }
    Pod& ready_at(std::int64_t ms) {  // ready, since `ms`
        p.ready = true;
        p.ready_since_mono_ms = ms;
        return *this;
    }
    Pod& ready_no_time() {  // ready, transition time unknown
        p.ready = true;
        return *this;
    }
    Pod& terminating() {  // stop requested, containers still running
        p.terminating = true;
        p.pod.deleting = true;
        return *this;
    }
    Pod& stopped() {  // stop requested and every container exited
        p.pod.deleting = true;
        return *this;
    }
    Pod& user_deleted() {
        p.deleted_by_user = true;
        return *this;
    }
    Pod& phase(PodPhase ph) {
        p.pod.phase = ph;
        return *this;
    }
    operator ObservedPod() const { return p; }  // NOLINT: rows read better without a call
};
// A running pod of default/foo at the current revision (h2, 2), uid `uid`.
inline Pod pod(const char* uid) {
    Pod b;
    b.p.pod.uid = uid;
    b.p.pod.phase = PodPhase::Running;
    b.in("default", "foo");
    b.rev("h2", 2);
    return b;
}

struct Removed {
    const char* uid;
    const char* reason;  // a part of the reason that must appear in it
};

struct Row {
    const char* name;
    std::vector<Desired> desired;
    std::vector<ObservedPod> pods;
    std::int64_t now;
    std::vector<std::string> creates;  // "namespace/daemonset@hash#revision", in order
    std::vector<Removed> removes;      // in order
    std::optional<std::int64_t> wake;
};

// Runs one row and reports each mismatch with the row's name.
void check_row(const Row& row);

}  // namespace daemonlet::testing
