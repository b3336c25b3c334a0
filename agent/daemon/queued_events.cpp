// The queue of cluster Events kept in the store, and the flush of what the
// agent reports (queued_events.h).
#include "agent/daemon/queued_events.h"

#include <limits>

#include "agent/daemon/cluster_link.h"
#include "core/decode.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

constexpr std::uint64_t kEventsSentSaveMs = 1000;  // the queue kept after Events sent, at most this often

}  // namespace

void QueuedEvents::start() {
    if (timer_) return;
    timer_ = new uv_timer_t;
    uv_timer_init(loop_, timer_);
    timer_->data = this;
}

void QueuedEvents::close() {
    if (!timer_) return;
    uv_close(reinterpret_cast<uv_handle_t*>(timer_),
             [](uv_handle_t* p) { delete reinterpret_cast<uv_timer_t*>(p); });
    timer_ = nullptr;
}

// Events queued when the agent last stopped, was killed or lost power
// (an offline reboot): sent with their original times and names once
// connected; one the cluster has already is not made twice (its name
// finds it: event_answer). Read once; a reload's link takes over the
// closed link's queue (carry_from).
void QueuedEvents::carry_into(ClusterLink& link) {
    load();
    link.continue_event_seqs(next_seq_);
    for (auto& ev : carried_) link.add_event(std::move(ev));
    carried_.clear();
}

// Its queue goes on in the next link, as is (not as the store lists it:
// see carried_).
void QueuedEvents::carry_from(const ClusterLink& link) {
    carried_.assign(link.queued_events().begin(), link.queued_events().end());
    next_seq_ = link.next_event_seq();
}

void QueuedEvents::load() {
    if (loaded_) return;
    loaded_ = true;
    saved_.clear();
    auto saved = host_.events_store().list_queued_events();
    if (!saved.ok()) {
        log(Level::Warning, "store: queued events not read: " + saved.error().message);
        return;
    }
    for (auto& row : saved.value()) {
        Json e = Json::parse(row.json, nullptr, false);
        saved_[row.seq] = row.json;  // a row that is no Event goes with the next save
        if (!e.is_object()) continue;
        ClusterEvent ev{e.value("namespace", ""),
                        e.value("kind", ""),
                        e.value("name", ""),
                        e.value("uid", ""),
                        e.value("type", ""),
                        e.value("reason", ""),
                        e.value("message", ""),
                        e.value("first", std::int64_t{0}),
                        e.value("last", std::int64_t{0}),
                        e.value("count", 1),
                        e.value("fieldPath", ""),
                        (e.contains("repeat") && e["repeat"] == Json(true))};
        // Kept by an agent from before names were kept: the name it sent
        // it under (its first time's), never a new one.
        ev.event_name = e.value("eventName", "");
        if (ev.event_name.empty()) ev.event_name = event_name(ev);
        ev.seq = row.seq;
        carried_.push_back(std::move(ev));
    }
}

// The queue of Events in the store, whenever it changed (batched: once per
// turn of the loop), so that a kill or a power cut loses none and sends
// none twice. An Event queued is flushed too (Store::flush_async, off the
// loop, one at a time): queued is acknowledged. A removal need not be: one
// sent again after a cut finds its Event made (its name, event_answer).
void QueuedEvents::changed(bool queued) {
    flush_wanted_ = flush_wanted_ || queued;
    if (!timer_ || stopping_) return;
    // An Event queued is kept at the next turn; Events sent at most once a
    // second (a backlog of hundreds drained after a reconnect writes the
    // queue a few times, not once per Event): one sent again after a kill
    // finds its Event made.
    if (!queued && uv_is_active(reinterpret_cast<uv_handle_t*>(timer_))) return;
    uv_timer_start(
        timer_, [](uv_timer_t* t) { static_cast<QueuedEvents*>(t->data)->keep(); },
        queued ? 0 : kEventsSentSaveMs, 0);
}

// A write the agent reports (a revision recorded: `rollout history` shows
// it) is flushed as a queued Event is, with the same flush: off the loop,
// one at a time, a write during it asking for one more.
void QueuedEvents::flush_reported() {
    unflushed_ = true;
    changed(true);
}

void QueuedEvents::keep() {
    // Flushed when an Event was queued and the queue written since the
    // last flush began: not for a queue loaded as it was stored, nor for an
    // Event dropped from a full queue.
    if (save_now()) unflushed_ = true;
    if (!flush_wanted_ || !unflushed_ || flushing_ || stopping_) return;
    flush_wanted_ = false;
    unflushed_ = false;
    flushing_ = true;
    ++flushes_started_;
    auto done = [this](Status flushed) {
        flushing_ = false;
        if (!flushed.ok())
            log(Level::Warning, "store: queued events and revisions not flushed: " + flushed.error().message);
        // Queued while this flush ran: one more.
        if (flush_wanted_ && !stopping_) keep();
    };
    // No worker (a store that takes no writes): the write lands later and
    // is flushed with the next one; never an fdatasync on the loop.
    if (!host_.events_store().flush_async(done).ok()) flushing_ = false;
}

// The Events the cluster has not had yet, for the next start: one row per
// Event (store migration 6), so that flash sees the rows that changed only
// (a queued Event one INSERT, a folded count one UPDATE, the Events sent
// one DELETE of the rows below the queue's front), in one transaction.
bool QueuedEvents::save_now() {
    const std::deque<ClusterEvent>* queue = host_.link_events();
    if (!queue) return false;
    std::map<std::int64_t, std::string> now;
    for (const auto& ev : *queue)
        now[ev.seq] = Json{{"namespace", ev.namespace_},
                           {"kind", ev.kind},
                           {"name", ev.name},
                           {"uid", ev.uid},
                           {"type", ev.type},
                           {"reason", ev.reason},
                           {"message", ev.message},
                           {"first", ev.first_ms},
                           {"last", ev.last_ms},
                           {"count", ev.count},
                           {"fieldPath", ev.field_path},
                           {"repeat", ev.repeat},
                           {"eventName", ev.event_name}}
                          .dump(-1, ' ', false, Json::error_handler_t::replace);
    if (now == saved_) return false;
    store::Store& store = host_.events_store();
    const std::int64_t front = now.empty() ? std::numeric_limits<std::int64_t>::max() : now.begin()->first;
    auto write = [&]() -> Status {
        auto tx = store.begin();
        if (!tx.ok()) return tx.error();
        bool below = false;
        for (const auto& [seq, json] : saved_) {
            if (now.count(seq)) continue;
            if (seq < front) {
                below = true;
            } else if (auto d = store.delete_queued_event(seq); !d.ok()) {
                return d.error();  // dropped from the middle of a full queue
            }
        }
        if (below)
            if (auto d = store.delete_queued_events_below(front); !d.ok()) return d.error();
        for (const auto& [seq, json] : now) {
            auto was = saved_.find(seq);
            if (was != saved_.end() && was->second == json) continue;
            if (auto p = store.put_queued_event({seq, json}); !p.ok()) return p.error();
        }
        return tx.value()->commit();
    };
    if (auto st = write(); !st.ok()) {
        log(Level::Warning, "store: queued events not kept: " + st.error().message);
        return false;
    }
    saved_ = std::move(now);
    return true;
}

}  // namespace daemonlet::agent
