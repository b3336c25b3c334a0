// Runtime operations (container starts and stops) run asynchronously, and
// this bounds them: at most `limit` at once, and those of one key (a pod's
// uid) one at a time, in the order asked. kubelet runs one pod worker per
// pod, so a pod's containers are handled in order while different pods
// proceed in parallel; a board also bounds how many run at once, so that a
// boot with a hundred pods does not fork a hundred runtimes together.
//
// An operation is called with its `finished`, which it calls exactly once,
// at once or later (on the loop). Single-threaded: everything on the loop.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <string>

namespace daemonlet::platform {

class OperationQueue {
  public:
    using Finished = std::function<void()>;
    using Operation = std::function<void(Finished)>;

    explicit OperationQueue(std::size_t limit) : limit_(limit < 1 ? 1 : limit) {}
    OperationQueue(const OperationQueue&) = delete;
    OperationQueue& operator=(const OperationQueue&) = delete;

    // Takes effect as operations finish (a SIGHUP's new bound).
    void set_limit(std::size_t limit);
    void submit(const std::string& key, Operation op);
    // Drops the operations not started yet (the agent is stopping); those
    // running finish as they will.
    void drop_queued() { queue_.clear(); }

    std::size_t running() const { return running_; }
    std::size_t queued() const { return queue_.size(); }
    // Whether an operation of `key` runs or waits.
    bool busy(const std::string& key) const;

  private:
    struct Pending {
        std::string key;
        Operation op;
    };
    void pump();

    std::size_t limit_;
    std::size_t running_ = 0;
    std::map<std::string, std::size_t> running_keys_;
    std::deque<Pending> queue_;
    bool pumping_ = false;
};

}  // namespace daemonlet::platform
