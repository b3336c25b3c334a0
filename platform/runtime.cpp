#include "platform/runtime.h"

#include <uv.h>

#include <cstdio>
#include <cstdlib>

namespace daemonlet::platform {

void post_to_loop(uv_loop_s* loop, std::function<void()> fn) {
    auto* t = new uv_timer_t;
    uv_timer_init(loop, t);
    t->data = new std::function<void()>(std::move(fn));
    uv_timer_start(
        t,
        [](uv_timer_t* timer) {
            auto* f = static_cast<std::function<void()>*>(timer->data);
            timer->data = nullptr;
            uv_close(reinterpret_cast<uv_handle_t*>(timer),
                     [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
            (*f)();
            delete f;
        },
        0, 0);
}

void Runtime::post(std::function<void()> fn) {
    if (!loop_for_done_) {
        // A broken invariant, not an error: the agent attaches its loop.
        std::fprintf(stderr, "daemonlet: the %s runtime has no loop attached for its callbacks\n", name());
        std::abort();
    }
    post_to_loop(loop_for_done_, std::move(fn));
}

void Runtime::start_async(ContainerLaunch launch, std::function<void(Result<std::string>)> done) {
    post([done = std::move(done), r = start(launch)]() mutable { done(std::move(r)); });
}

void Runtime::stop_async(const std::string& id, std::function<void(Status)> done) {
    post([done = std::move(done), s = stop(id)]() mutable { done(std::move(s)); });
}

void Runtime::remove_async(const std::string& id, std::function<void(Status)> done) {
    post([done = std::move(done), s = remove(id)]() mutable { done(std::move(s)); });
}

void Runtime::inspect_async(const std::string& id, std::function<void(Result<ContainerInfo>)> done) {
    post([done = std::move(done), r = inspect(id)]() mutable { done(std::move(r)); });
}

}  // namespace daemonlet::platform
