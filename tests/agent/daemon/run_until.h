// A test's real loop run until a predicate holds, with a deadline in real
// time (no sleeps): for components whose work ends on the loop.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstdint>
#include <functional>

namespace daemonlet::testing {

// The loop runs until `done` holds (or, `done` never holding, until nothing
// is left on it), at most `deadline_ms` of real time; a 10 ms guard timer
// wakes it to look. False when the deadline passed.
inline bool run_until(uv_loop_t* loop, const std::function<bool()>& done, std::int64_t deadline_ms = 10'000) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(deadline_ms);
    while (!done()) {
        if (!uv_loop_alive(loop)) return true;
        if (std::chrono::steady_clock::now() >= end) return false;
        uv_timer_t guard;
        uv_timer_init(loop, &guard);
        uv_timer_start(
            &guard, [](uv_timer_t*) {}, 10, 0);
        uv_run(loop, UV_RUN_ONCE);
        uv_close(reinterpret_cast<uv_handle_t*>(&guard), nullptr);
        uv_run(loop, UV_RUN_NOWAIT);
    }
    return true;
}

}  // namespace daemonlet::testing
