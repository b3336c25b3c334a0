// The QueuedEvents component: the queue of cluster Events kept in the
// store, and the flush of what the agent reports. client-go's
// record.EventBroadcaster keeps its queue in memory; this is the board's
// durable version: the Events the cluster has not had yet survive a kill, a
// power cut and an offline reboot (one row per Event, store migration 6),
// and a reload's new ClusterLink takes over the closed link's queue.
//
// What it owns: the rows as last written (by seq), the queue carried to the
// next link and its next seq, the save's timer (a turn of the loop, or at
// most once a second after Events sent), and the flush (Store::flush_async,
// off the loop, one at a time, a write during it asking for one more).
#pragma once

#include <uv.h>

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "core/cluster_report.h"
#include "store/store.h"

namespace daemonlet::agent {

class ClusterLink;

class QueuedEvents {
  public:
    // What a save reaches, asked at each save: the agent opens its store
    // and its link after the component exists.
    class Host {
      public:
        virtual ~Host() = default;
        virtual store::Store& events_store() = 0;
        // The link's queue as it is now; null: no link.
        virtual const std::deque<ClusterEvent>* link_events() = 0;
    };

    QueuedEvents(uv_loop_t* loop, Host& host) : loop_(loop), host_(host) {}
    QueuedEvents(const QueuedEvents&) = delete;
    QueuedEvents& operator=(const QueuedEvents&) = delete;

    // The save's timer (the agent's init); before it, changes are noted
    // and kept with the first one after.
    void start();
    // The queue for a new link: the store's (read once, for the first link)
    // or the closed link's (carry_from), with its seqs and its next seq.
    void carry_into(ClusterLink& link);
    // A reload: the closed link's queue goes on in the next link, as is.
    void carry_from(const ClusterLink& link);
    // The link's queue changed (queued: an Event added, to be flushed).
    void changed(bool queued);
    // A write the agent reports (a revision recorded), made durable soon
    // (off the loop).
    void flush_reported();
    // The queue written now, if it changed (a reload, the shutdown).
    // True: written.
    bool save_now();
    // The agent stops: no more timer, no more flush; save_now() still
    // writes (the shutdown's last save comes after it).
    void stop() { stopping_ = true; }
    void close();

    // Flushes started (Store::flush_async asked), for tests.
    std::uint64_t flushes_started() const { return flushes_started_; }

    // Read from the store (once): the queue a first link gets. Public for
    // tests; carry_into calls it.
    void load();
    const std::vector<ClusterEvent>& carried() const { return carried_; }
    std::int64_t next_seq() const { return next_seq_; }

  private:
    void keep();

    uv_loop_t* loop_;
    Host& host_;
    // The queue of Events as last kept in the store, its save's timer (a
    // turn of the loop), and its flush.
    uv_timer_t* timer_ = nullptr;
    std::map<std::int64_t, std::string> saved_;  // the queued Events' rows, by seq
    // The queue for the next link: read from the store once (the first
    // link), then a closed link's (a reload), with its seqs and its next
    // seq. Never the store again: the writes a full or read-only stateDir
    // refuses are held in memory (Storage), not in what it lists.
    bool loaded_ = false;
    std::vector<ClusterEvent> carried_;
    std::int64_t next_seq_ = 1;
    // The flush of what the agent reported (an Event queued, a revision
    // recorded: keep, flush_reported), one at a time.
    bool flush_wanted_ = false;
    bool unflushed_ = false;  // reported writes since the last flush began
    bool flushing_ = false;
    bool stopping_ = false;
    std::uint64_t flushes_started_ = 0;
};

}  // namespace daemonlet::agent
