#include "platform/operation_queue.h"

#include <memory>
#include <utility>

namespace daemonlet::platform {

void OperationQueue::set_limit(std::size_t limit) {
    limit_ = limit < 1 ? 1 : limit;
    pump();
}

void OperationQueue::submit(const std::string& key, Operation op) {
    queue_.push_back(Pending{key, std::move(op)});
    pump();
}

bool OperationQueue::busy(const std::string& key) const {
    if (running_keys_.count(key)) return true;
    for (const auto& p : queue_)
        if (p.key == key) return true;
    return false;
}

void OperationQueue::pump() {
    // An operation that finishes at once calls back into pump(): the outer
    // call goes on instead, so that the stack does not grow per operation.
    if (pumping_) return;
    pumping_ = true;
    for (auto it = queue_.begin(); it != queue_.end() && running_ < limit_;) {
        if (running_keys_.count(it->key)) {
            ++it;  // its key's earlier operation runs: it keeps its place
            continue;
        }
        Pending p = std::move(*it);
        queue_.erase(it);
        ++running_;
        ++running_keys_[p.key];
        auto done = std::make_shared<bool>(false);
        p.op([this, key = p.key, done] {
            if (std::exchange(*done, true)) return;  // once only
            --running_;
            if (--running_keys_[key] == 0) running_keys_.erase(key);
            pump();
        });
        it = queue_.begin();  // the queue may have changed under the operation
    }
    pumping_ = false;
}

}  // namespace daemonlet::platform
