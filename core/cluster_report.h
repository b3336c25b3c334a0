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

#include <algorithm>
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
    // An Event sent before (named event_name) whose count this updates:
    // sent as event_patch (client-go's recorder PATCHes it, and creates it
    // when the PATCH finds none).
    bool repeat = false;
    // metadata.name, given once when the Event is first queued
    // (new_event_name) and kept with it, in the store too: a POST sent again
    // after a restart or a power cut names the same Event, and the server's
    // 409 AlreadyExists tells it was made (event_answer).
    std::string event_name = {};
    // Its place in the queue, given by EventQueue::add when 0 (kept when
    // not: an Event loaded from the store keeps its row): the key of its
    // row in the store, which an Event folded into it keeps.
    std::int64_t seq = 0;
};

class EventQueue {
  public:
    explicit EventQueue(std::size_t capacity = 1000) : capacity_(capacity) {}

    // Adds an event, folding it into a queued one of the same name, object,
    // reason and message (a repeat's count is its Event's total: it
    // replaces the queued count). Another Event of the same words (another
    // name: the recorder forgot the first, as after a restart) is queued on
    // its own, so that its repeats find it.
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
    // The front's POST found its Event made (by an earlier POST whose
    // answer was lost): its count is sent as a repeat's PATCH.
    void front_made() { q_.front().repeat = true; }
    std::uint64_t dropped() const { return dropped_; }
    const std::deque<ClusterEvent>& items() const { return q_; }
    // The seq the next Event gets, and (a new queue taking over another's
    // Events) never below `seq`: the seqs are the keys of the store's rows.
    std::int64_t next_seq() const { return next_seq_; }
    void continue_seqs(std::int64_t seq) { next_seq_ = std::max(next_seq_, seq); }
    // A step of the wall clock (wall_clock.h): the queued events' times move.
    void rebase(const WallStep& step);

  private:
    std::size_t capacity_;
    std::deque<ClusterEvent> q_;
    std::uint64_t dropped_ = 0;
    std::int64_t next_seq_ = 1;
    bool front_in_flight_ = false;
};

// RFC 3339 in UTC: seconds ("2026-11-21T15:04:05Z", metav1.Time) or
// microseconds ("...05.123456Z", metav1.MicroTime).
std::string rfc3339(std::int64_t wall_ms, bool micro = false);

// A core/v1 Event (POST /api/v1/namespaces/NS/events), named event_name.
Json event_object(const ClusterEvent& ev, const std::string& node_name);
// Its metadata.name: event_name, or (an Event queued by an older agent,
// which kept none) new_event_name of its first time.
std::string event_name(const ClusterEvent& ev);
// A new Event's name as client-go's recorder makes it (tools/record
// event.go makeEvent: "%v.%x" of the object's name and the time in
// nanoseconds): here the wall time in milliseconds with `unique` (below a
// million, a counter the caller starts at random) as its nanoseconds, so
// that two Events of one object in one millisecond, or of two agents
// around a restart, have two names.
std::string new_event_name(const std::string& object, std::int64_t wall_ms, std::uint32_t unique);

// What the answer to an Event's request means for the queued Event
// (client-go's recordToSink and isKeyNotFoundError/AlreadyExists handling).
enum class EventAnswer {
    Sent,       // 2xx, or a POST's 409 AlreadyExists with count 1: the Event is made
    PatchNext,  // a POST's 409 with a count above 1: made before, its count PATCHed next
    Create,     // a repeat's PATCH found none (404): POSTed instead
    Retry,      // no answer, 429, 5xx: kept and sent again
    Refused,    // other 4xx: a retry would be refused again; dropped (logged)
};
EventAnswer event_answer(const ClusterEvent& ev, long status);
// A repeat's strategic-merge patch, as eventObserve makes it: count,
// lastTimestamp and message.
Json event_patch(const ClusterEvent& ev);

// The agent's heartbeat (coordination.k8s.io/v1 Lease named after the node),
// as kubelet's node lease: holderIdentity the node, renewTime now.
Json lease_object(const std::string& node_name, const std::string& lease_namespace,
                  std::int32_t duration_seconds, std::int64_t now_wall_ms);

}  // namespace daemonlet
