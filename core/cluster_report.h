// What the agent tells the cluster: its heartbeat Lease and the Events on
// the DaemonSets it runs (so `kubectl describe ds` shows what happened on
// the boards). Pure: objects are built from values and times passed in.
//
// Events are queued, bounded, while disconnected and sent on reconnect with
// their original times (core/v1 Event firstTimestamp / lastTimestamp /
// count); repeats of the same event are folded into one with a count, as
// client-go's EventCorrelator does, and when the queue is full the oldest
// are dropped and counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include "core/json.h"
#include "core/wall_clock.h"

namespace daemonlet {

struct ClusterEvent {
    std::string namespace_;
    std::string kind;  // of the involved object: DaemonSet, Pod
    std::string name;
    std::string uid;   // of the involved object, when known
    std::string type;  // Normal, Warning
    std::string reason;
    std::string message;
    std::int64_t first_ms = 0;  // wall clock
    std::int64_t last_ms = 0;
    std::int32_t count = 1;
    // involvedObject.fieldPath: the container an Event of a Pod is about
    // ("spec.containers{main}"), as the kubelet's container references;
    // empty for the object itself.
    std::string field_path = {};
    // An Event sent before (its name from first_ms) whose count this
    // updates: sent as event_patch (client-go's recorder PATCHes it, and
    // creates it when the PATCH finds none).
    bool repeat = false;
};

class EventQueue {
  public:
    explicit EventQueue(std::size_t capacity = 1000) : capacity_(capacity) {}

    // Adds an event, folding it into a queued one for the same object,
    // reason and message (a repeat's count is its Event's total: it
    // replaces the queued count).
    void add(ClusterEvent ev);
    bool empty() const { return q_.empty(); }
    std::size_t size() const { return q_.size(); }
    const ClusterEvent& front() const { return q_.front(); }
    void pop() {
        q_.pop_front();
        front_in_flight_ = false;
    }
    // The front is being sent: until its answer, add() neither folds into
    // it (the count would be lost with its pop) nor drops it (the answer
    // would pop another).
    void set_front_in_flight(bool in_flight) { front_in_flight_ = in_flight; }
    // The front repeat's Event was not found: it is created instead.
    void front_repeat_created() { q_.front().repeat = false; }
    std::uint64_t dropped() const { return dropped_; }
    const std::deque<ClusterEvent>& items() const { return q_; }
    // A step of the wall clock (wall_clock.h): the queued events' times move.
    void rebase(const WallStep& step);

  private:
    std::size_t capacity_;
    std::deque<ClusterEvent> q_;
    std::uint64_t dropped_ = 0;
    bool front_in_flight_ = false;
};

// RFC 3339 in UTC: seconds ("2026-11-21T15:04:05Z", metav1.Time) or
// microseconds ("...05.123456Z", metav1.MicroTime).
std::string rfc3339(std::int64_t wall_ms, bool micro = false);

// A core/v1 Event (POST /api/v1/namespaces/NS/events), named as client-go's
// recorder names them: <object>.<hex of the first time in nanoseconds>.
Json event_object(const ClusterEvent& ev, const std::string& node_name);
std::string event_name(const ClusterEvent& ev);
// A repeat's strategic-merge patch, as eventObserve makes it: count,
// lastTimestamp and message.
Json event_patch(const ClusterEvent& ev);

// The agent's heartbeat (coordination.k8s.io/v1 Lease named after the node),
// as kubelet's node lease: holderIdentity the node, renewTime now.
Json lease_object(const std::string& node_name, const std::string& lease_namespace,
                  std::int32_t duration_seconds, std::int64_t now_wall_ms);

}  // namespace daemonlet
