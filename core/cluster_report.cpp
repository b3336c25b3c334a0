#include "core/cluster_report.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace daemonlet {

void EventQueue::rebase(const WallStep& step) {
    for (auto& q : q_) {
        q.first_ms = daemonlet::rebase(q.first_ms, step);
        q.last_ms = daemonlet::rebase(q.last_ms, step);
    }
}

void EventQueue::add(ClusterEvent ev) {
    for (auto it = q_.begin() + (front_in_flight_ && !q_.empty() ? 1 : 0); it != q_.end(); ++it) {
        ClusterEvent& q = *it;
        if (q.event_name == ev.event_name && q.namespace_ == ev.namespace_ && q.kind == ev.kind &&
            q.name == ev.name && q.reason == ev.reason && q.message == ev.message && q.type == ev.type &&
            q.field_path == ev.field_path) {
            q.count = ev.repeat ? std::max(q.count, ev.count) : q.count + ev.count;
            q.last_ms = ev.last_ms > ev.first_ms ? ev.last_ms : ev.first_ms;
            return;
        }
    }
    if (ev.last_ms < ev.first_ms) ev.last_ms = ev.first_ms;
    if (capacity_ == 0) return;
    if (ev.seq <= 0) ev.seq = next_seq_;
    next_seq_ = std::max(next_seq_, ev.seq + 1);
    const std::size_t keep = front_in_flight_ && !q_.empty() ? 1 : 0;  // the one being sent stays
    while (q_.size() >= capacity_ && q_.size() > keep) {
        q_.erase(q_.begin() + static_cast<std::ptrdiff_t>(keep));
        ++dropped_;
    }
    if (q_.size() < capacity_)
        q_.push_back(std::move(ev));
    else
        ++dropped_;  // a queue of one, being sent
}

std::string rfc3339(std::int64_t wall_ms, bool micro) {
    // A civil date from a count of milliseconds: calendar arithmetic, no clock.
    using namespace std::chrono;
    const milliseconds since_epoch{wall_ms};
    const sys_days day = floor<days>(sys_time<milliseconds>{since_epoch});
    const year_month_day ymd{day};
    const hh_mm_ss hms{since_epoch - day.time_since_epoch()};
    char buf[48];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02lld", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                  static_cast<long long>(hms.seconds().count()));
    std::string s = buf;
    if (micro) {
        std::snprintf(buf, sizeof buf, ".%06lld", static_cast<long long>(hms.subseconds().count()) * 1000);
        s += buf;
    }
    return s + "Z";
}

std::string new_event_name(const std::string& object, std::int64_t wall_ms, std::uint32_t unique) {
    char hex[24];
    std::snprintf(hex, sizeof hex, "%llx",
                  static_cast<unsigned long long>(wall_ms) * 1'000'000ULL + unique % 1'000'000U);
    return object + "." + hex;
}

std::string event_name(const ClusterEvent& ev) {
    return ev.event_name.empty() ? new_event_name(ev.name, ev.first_ms, 0) : ev.event_name;
}

EventAnswer event_answer(const ClusterEvent& ev, long status) {
    if (status >= 200 && status < 300) return EventAnswer::Sent;
    if (ev.repeat && status == 404) return EventAnswer::Create;
    // The name is the Event's own (given when it was queued): a POST that
    // finds it was sent before, its answer lost (a kill, a power cut, a
    // timeout). Its count then goes as a PATCH, which sets it whole.
    if (!ev.repeat && status == 409) return ev.count > 1 ? EventAnswer::PatchNext : EventAnswer::Sent;
    if (status >= 400 && status < 500 && status != 429) return EventAnswer::Refused;
    return EventAnswer::Retry;
}

Json event_patch(const ClusterEvent& ev) {
    return Json{{"count", ev.count}, {"lastTimestamp", rfc3339(ev.last_ms)}, {"message", ev.message}};
}

Json event_object(const ClusterEvent& ev, const std::string& node_name) {
    Json involved = Json::object();
    involved["kind"] = ev.kind;
    involved["namespace"] = ev.namespace_;
    involved["name"] = ev.name;
    if (!ev.uid.empty()) involved["uid"] = ev.uid;
    involved["apiVersion"] = ev.kind == "DaemonSet" ? "apps/v1" : "v1";
    if (!ev.field_path.empty()) involved["fieldPath"] = ev.field_path;
    Json e = Json::object();
    e["apiVersion"] = "v1";
    e["kind"] = "Event";
    e["metadata"] = Json::object();
    e["metadata"]["name"] = event_name(ev);
    e["metadata"]["namespace"] = ev.namespace_;
    e["involvedObject"] = involved;
    e["type"] = ev.type;
    e["reason"] = ev.reason;
    e["message"] = ev.message;
    e["firstTimestamp"] = rfc3339(ev.first_ms);
    e["lastTimestamp"] = rfc3339(ev.last_ms);
    e["count"] = ev.count;
    e["source"] = Json::object();
    e["source"]["component"] = "daemonlet";
    e["source"]["host"] = node_name;
    e["reportingComponent"] = "daemonlet";
    e["reportingInstance"] = node_name;
    return e;
}

Json lease_object(const std::string& node_name, const std::string& lease_namespace,
                  std::int32_t duration_seconds, std::int64_t now_wall_ms) {
    Json l = Json::object();
    l["apiVersion"] = "coordination.k8s.io/v1";
    l["kind"] = "Lease";
    l["metadata"] = Json::object();
    l["metadata"]["name"] = node_name;
    l["metadata"]["namespace"] = lease_namespace;
    l["spec"] = Json::object();
    l["spec"]["holderIdentity"] = node_name;
    l["spec"]["leaseDurationSeconds"] = duration_seconds;
    l["spec"]["renewTime"] = rfc3339(now_wall_ms, true);
    return l;
}

}  // namespace daemonlet
