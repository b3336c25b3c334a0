// LoopJobs (platform/cri/cri_jobs.h): the CRI runtime's blocking calls on
// worker threads, their continuations on the loop. A real libuv loop and
// real threads; the loop runs until the test's predicate holds or its
// deadline passes (a uv timer), never a sleep.
#include <uv.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "platform/cri/cri_jobs.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet::platform;

namespace {

// Runs `loop` until `done()` or 10 s: false on the deadline.
template <typename F>
bool run_until(uv_loop_t* loop, F done) {
    uv_timer_t deadline;
    uv_timer_init(loop, &deadline);
    bool expired = false;
    deadline.data = &expired;
    uv_timer_start(
        &deadline, [](uv_timer_t* t) { *static_cast<bool*>(t->data) = true; }, 10000, 0);
    while (!done() && !expired) uv_run(loop, UV_RUN_ONCE);
    uv_close(reinterpret_cast<uv_handle_t*>(&deadline), nullptr);
    uv_run(loop, UV_RUN_NOWAIT);
    return !expired;
}

}  // namespace

TEST_GROUP(CriJobs) {
    uv_loop_t loop;
    void setup() override { uv_loop_init(&loop); }
    void teardown() override {
        uv_run(&loop, UV_RUN_DEFAULT);  // the closes
        LONGS_EQUAL(0, uv_loop_close(&loop));
    }
};

TEST(CriJobs, JobsRunOffTheLoopAndTheirContinuationsOnIt) {
    LoopJobs jobs(&loop, 2);
    const auto loop_thread = std::this_thread::get_id();
    std::atomic<int> off_loop{0};
    int on_loop = 0;
    for (int i = 0; i < 5; ++i)
        jobs.post([&]() -> LoopJobs::Continuation {
            if (std::this_thread::get_id() != loop_thread) ++off_loop;
            return [&] {
                if (std::this_thread::get_id() == loop_thread) ++on_loop;
            };
        });
    CHECK_TRUE(run_until(&loop, [&] { return on_loop == 5; }));
    LONGS_EQUAL(5, off_loop.load());
    LONGS_EQUAL(0, static_cast<long>(jobs.pending()));
    jobs.close();
}

TEST(CriJobs, ABlockedJobDoesNotHoldTheOthersUp) {
    // A pull that takes minutes must not delay a stop: with two workers the
    // second job finishes while the first still blocks.
    LoopJobs jobs(&loop, 2);
    std::mutex mu;
    std::condition_variable cv;
    bool release = false;
    bool first_done = false, second_done = false;
    jobs.post([&]() -> LoopJobs::Continuation {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return release; });
        return [&] { first_done = true; };
    });
    jobs.post([&]() -> LoopJobs::Continuation { return [&] { second_done = true; }; });
    CHECK_TRUE(run_until(&loop, [&] { return second_done; }));
    CHECK_FALSE(first_done);
    {
        std::lock_guard<std::mutex> lock(mu);
        release = true;
    }
    cv.notify_all();
    CHECK_TRUE(run_until(&loop, [&] { return first_done; }));
    jobs.close();
}

TEST(CriJobs, CloseJoinsTheWorkersAndDropsWhatIsLeft) {
    LoopJobs jobs(&loop, 1);
    std::atomic<bool> started{false};
    std::atomic<bool> finished{false};
    bool continued = false;
    jobs.post([&]() -> LoopJobs::Continuation {
        started = true;
        // As a CRI call returns once cancel_all() cancelled it.
        while (!finished) std::this_thread::yield();
        return [&] { continued = true; };
    });
    jobs.post([&]() -> LoopJobs::Continuation { return [&] { continued = true; }; });
    while (!started) std::this_thread::yield();
    std::thread canceller([&] { finished = true; });
    jobs.close();  // joins the worker: returns only once the job returned
    canceller.join();
    CHECK_TRUE(finished.load());
    jobs.post([&]() -> LoopJobs::Continuation { return [&] { continued = true; }; });  // ignored
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_FALSE(continued);
}
