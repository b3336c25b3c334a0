#include "core/pod_events.h"

#include <algorithm>
#include <cstdio>

#include "core/security_context.h"

namespace daemonlet {

namespace {

// Go's %q of a string that is printable ASCII (image references are).
std::string go_quote(const std::string& s) {
    std::string out = "\"";
    for (char ch : s) {
        if (ch == '"' || ch == '\\') out += '\\';
        out += ch;
    }
    return out + "\"";
}

PodEvent make(const ContainerRef& c, const char* type, const char* reason, std::string message,
              std::int64_t now_ms) {
    PodEvent ev;
    ev.field_path = container_field_path(c);
    ev.type = type;
    ev.reason = reason;
    ev.message = std::move(message);
    ev.time_ms = now_ms;
    return ev;
}

}  // namespace

std::string container_field_path(const ContainerRef& c) {
    return std::string(c.init ? "spec.initContainers{" : "spec.containers{") + c.name + "}";
}

std::string go_duration(std::int64_t ms) {
    if (ms <= 0) return "0s";
    if (ms < 1000) return std::to_string(ms) + "ms";
    std::string out;
    const std::int64_t h = ms / 3'600'000, m = ms / 60'000 % 60;
    if (h > 0) out += std::to_string(h) + "h";
    if (h > 0 || m > 0) out += std::to_string(m) + "m";
    out += std::to_string(ms / 1000 % 60);
    if (const std::int64_t frac = ms % 1000; frac != 0) {
        char buf[8];
        std::snprintf(buf, sizeof buf, ".%03lld", static_cast<long long>(frac));
        std::string f = buf;
        while (f.back() == '0') f.pop_back();
        out += f;
    }
    return out + "s";
}

PodEvent pulling_event(const ContainerRef& c, const std::string& image, std::int64_t now_ms) {
    return make(c, "Normal", "Pulling", "Pulling image " + go_quote(image), now_ms);
}

PodEvent pulled_event(const ContainerRef& c, const std::string& image, std::int64_t pull_ms,
                      std::int64_t total_ms, std::int64_t now_ms) {
    return make(c, "Normal", "Pulled",
                "Successfully pulled image " + go_quote(image) + " in " + go_duration(pull_ms) + " (" +
                    go_duration(total_ms) + " including waiting)",
                now_ms);
}

PodEvent pull_failed_event(const ContainerRef& c, const std::string& image, const std::string& error,
                           std::int64_t now_ms) {
    return make(c, "Warning", "Failed", "Failed to pull image " + go_quote(image) + ": " + error, now_ms);
}

PodEvent pull_backoff_event(const ContainerRef& c, const std::string& image, std::int64_t now_ms) {
    return make(c, "Normal", "BackOff", "Back-off pulling image " + go_quote(image), now_ms);
}

PodEvent never_pull_event(const ContainerRef& c, const std::string& image, std::int64_t now_ms) {
    return make(c, "Warning", "ErrImageNeverPull",
                "Container image " + go_quote(image) + " is not present with pull policy of Never", now_ms);
}

PodEvent failed_event(const ContainerRef& c, const std::string& what, std::int64_t now_ms) {
    return make(c, "Warning", "Failed", "Error: " + what, now_ms);
}

PodEvent warning_event(const ContainerRef* c, const char* reason, std::string message, std::int64_t now_ms) {
    PodEvent ev = make(c ? *c : ContainerRef{}, "Warning", reason, std::move(message), now_ms);
    if (!c) ev.field_path.clear();
    return ev;
}

PodEvent created_event(const ContainerRef& c, std::int64_t now_ms) {
    return make(c, "Normal", "Created", "Created container " + c.name, now_ms);
}

PodEvent started_event(const ContainerRef& c, std::int64_t now_ms) {
    return make(c, "Normal", "Started", "Started container " + c.name, now_ms);
}

PodEvent killing_event(const ContainerRef& c, const ProbeKind* probe, std::int64_t now_ms) {
    std::string message = "Stopping container " + c.name;
    if (probe && *probe != ProbeKind::Readiness)
        message = "Container " + c.name + " failed " +
                  (*probe == ProbeKind::Liveness ? "liveness" : "startup") + " probe, will be restarted";
    return make(c, "Normal", "Killing", std::move(message), now_ms);
}

PodEvent backoff_event(const ContainerRef& c, std::int64_t now_ms) {
    PodEvent ev = make(c, "Warning", "BackOff", "Back-off restarting failed container " + c.name, now_ms);
    ev.names_pod = true;
    return ev;
}

PodEvent unhealthy_event(const ContainerRef& c, ProbeKind kind, const std::string& output, bool errored,
                         std::int64_t now_ms) {
    return make(c, "Warning", "Unhealthy",
                std::string(to_string(kind)) + (errored ? " probe errored: " : " probe failed: ") + output,
                now_ms);
}

ClusterEvent pod_cluster_event(const PodEvent& ev, const ApiPodRef& pod) {
    ClusterEvent out;
    out.namespace_ = pod.namespace_;
    out.kind = "Pod";
    out.name = pod.name;
    out.uid = pod.uid;
    out.type = ev.type;
    out.reason = ev.reason;
    out.message =
        ev.names_pod ? ev.message + " in pod " + format_pod(pod.name, pod.namespace_, pod.uid) : ev.message;
    out.first_ms = out.last_ms = ev.time_ms;
    out.field_path = ev.field_path;
    return out;
}

void PodEventFilter::rebase(const WallStep& step) {
    for (auto& [pod, s] : pods_)
        for (auto& seen : s.seen) seen.first_ms = daemonlet::rebase(seen.first_ms, step);
}

void apply_send(const PodEventSend& how, ClusterEvent& ev) {
    ev.repeat = how.repeat;
    ev.count = how.count;
    ev.first_ms = how.first_ms;
    if (!how.name.empty()) ev.event_name = how.name;
    if (how.combined) ev.message = kCombinedPrefix + ev.message;
}

// events_cache.go EventAggregate: the messages of one object, type and
// reason (the aggregate key, without the message or the field path) within
// kAggregateIntervalMs of the last; from the kAggregateMaxEvents-th
// different one on, the Event is the combined one (one of the messages is
// dropped, PopAny, so the set stays below the bound).
bool PodEventFilter::aggregate(State& s, const PodEvent& ev, std::int64_t now_ms) {
    const std::string key = ev.type + "\n" + ev.reason;
    auto it =
        std::find_if(s.similar.begin(), s.similar.end(), [&](const Similar& x) { return x.key == key; });
    Similar rec{key, {}, now_ms};
    if (it != s.similar.end()) {
        if (now_ms - it->last_ms <= kAggregateIntervalMs) rec.messages = std::move(it->messages);
        s.similar.erase(it);
    } else if (s.similar.size() >= kSeenPerPod) {
        s.similar.erase(s.similar.begin());
    }
    if (std::find(rec.messages.begin(), rec.messages.end(), ev.message) == rec.messages.end())
        rec.messages.push_back(ev.message);
    const bool combined = rec.messages.size() >= kAggregateMaxEvents;
    if (combined) rec.messages.erase(rec.messages.begin());
    s.similar.push_back(std::move(rec));
    return combined;
}

PodEventSend PodEventFilter::decide(const std::string& pod, const PodEvent& ev, std::int64_t now_ms,
                                    std::string name) {
    auto it = pods_.find(pod);
    if (it == pods_.end()) {
        if (pods_.size() >= kMaxPods) {
            auto idle = std::min_element(pods_.begin(), pods_.end(), [](const auto& a, const auto& b) {
                return a.second.refilled_ms < b.second.refilled_ms;
            });
            pods_.erase(idle);
        }
        it = pods_.emplace(pod, State{kSpamBurst, now_ms, {}, {}}).first;
    }
    State& s = it->second;
    PodEventSend out;
    out.combined = aggregate(s, ev, now_ms);
    // eventObserve: a key seen before counts on its Event, the newest last;
    // a combined Event's key is the aggregate key (no message, no field path).
    std::string key = out.combined ? "\n\n" + ev.type + "\n" + ev.reason
                                   : ev.field_path + "\n" + ev.type + "\n" + ev.reason + "\n" + ev.message;
    auto seen = std::find_if(s.seen.begin(), s.seen.end(), [&](const Seen& x) { return x.key == key; });
    Seen entry{std::move(key), ev.time_ms, 0, std::move(name)};
    // An Event first seen before the clock was set (the link sends it under
    // the time it is sent at, core/wall_clock.h) starts a new one once it is.
    if (seen != s.seen.end() && !wall_time_known(seen->first_ms) && wall_time_known(ev.time_ms)) {
        s.seen.erase(seen);
        seen = s.seen.end();
    }
    if (seen != s.seen.end()) {
        entry = std::move(*seen);
        s.seen.erase(seen);
        out.repeat = true;
    } else if (s.seen.size() >= kSeenPerPod) {
        s.seen.erase(s.seen.begin());
    }
    entry.count += 1;
    out.count = entry.count;
    out.first_ms = entry.first_ms;
    out.name = entry.name;
    s.seen.push_back(std::move(entry));
    // golang.org/x/time/rate as the spam filter uses it: tokens refill with
    // the time passed, up to the burst.
    if (now_ms > s.refilled_ms) {
        s.tokens = std::min(kSpamBurst, s.tokens + static_cast<double>(now_ms - s.refilled_ms) /
                                                       static_cast<double>(kSpamRefillMs));
        s.refilled_ms = now_ms;
    }
    if (s.tokens < 1) return PodEventSend{};
    s.tokens -= 1;
    out.send = true;
    return out;
}

}  // namespace daemonlet
