#include "platform/cri/cri_jobs.h"

#include <uv.h>

namespace daemonlet::platform {

LoopJobs::LoopJobs(uv_loop_s* loop, std::size_t threads) {
    async_ = new uv_async_t;
    uv_async_init(loop, async_, on_async);
    async_->data = this;
    for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

LoopJobs::~LoopJobs() { close(); }

void LoopJobs::post(Job job) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    queue_.push_back(std::move(job));
    cv_.notify_one();
}

std::size_t LoopJobs::pending() const {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.size() + running_;
}

void LoopJobs::work() {
    for (;;) {
        Job job;
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [this] { return closing_ || !queue_.empty(); });
            if (closing_) return;
            job = std::move(queue_.front());
            queue_.pop_front();
            ++running_;
        }
        Continuation next = job();
        std::lock_guard<std::mutex> lock(mu_);
        --running_;
        if (closing_) return;
        done_.push_back(std::move(next));
        uv_async_send(async_);
    }
}

void LoopJobs::on_async(uv_async_s* h) {
    auto* self = static_cast<LoopJobs*>(h->data);
    if (!self) return;
    std::vector<Continuation> done;
    {
        std::lock_guard<std::mutex> lock(self->mu_);
        done.swap(self->done_);
    }
    // A continuation may post more jobs, or close() the runtime.
    for (auto& c : done)
        if (c && !self->closing_) c();
}

void LoopJobs::close() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (closing_ && threads_.empty()) return;
        closing_ = true;
        queue_.clear();
        done_.clear();
        cv_.notify_all();
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
    if (async_) {
        async_->data = nullptr;
        uv_close(reinterpret_cast<uv_handle_t*>(async_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_async_t*>(h); });
        async_ = nullptr;
    }
}

}  // namespace daemonlet::platform
