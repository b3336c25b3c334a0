// Blocking work off the loop: a few worker threads run jobs (the CRI's
// PullImage, StopContainer with its grace period, a relist), and each job's
// continuation runs back on the loop, handed over through one uv_async_t,
// in the order the jobs finished. libuv's own thread pool is not used: it
// is shared with the loop's file system work, and a pull holds a thread
// for minutes.
//
// close() (on the loop) drops continuations not yet run, joins the workers
// (the caller first makes their blocking calls return: CriClient's
// cancel_all) and closes the async handle; after it, post() does nothing.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

struct uv_loop_s;
struct uv_async_s;

namespace daemonlet::platform {

class LoopJobs {
  public:
    // What a job returns: its continuation, run on the loop (may be empty).
    using Continuation = std::function<void()>;
    using Job = std::function<Continuation()>;

    LoopJobs(uv_loop_s* loop, std::size_t threads);
    LoopJobs(const LoopJobs&) = delete;
    LoopJobs& operator=(const LoopJobs&) = delete;
    ~LoopJobs();

    void post(Job job);
    void close();
    // Jobs queued or running: the relist posts one at a time.
    std::size_t pending() const;

  private:
    void work();
    static void on_async(uv_async_s* h);

    uv_async_s* async_ = nullptr;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Job> queue_;
    std::vector<Continuation> done_;
    std::vector<std::thread> threads_;
    std::size_t running_ = 0;
    bool closing_ = false;
};

}  // namespace daemonlet::platform
