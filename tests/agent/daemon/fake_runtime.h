// A runtime in memory (platform/runtime.h), for unit tests of the agent's
// components without processes: start() hands out ids, the test decides
// when a container exits and with what, and any call can be made to fail,
// or (pulls) never to answer. Keeps the interface's contract, as libuv's: a
// call that fails synchronously never calls back; the exit handler is called
// once per container that started, when the test says it exited.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "platform/runtime.h"

namespace daemonlet::testing {

class FakeRuntime final : public platform::Runtime {
  public:
    // What start() was asked, in order (pod, container, restart count).
    struct Started {
        std::string id;
        std::string pod_uid;
        std::string container_name;
        std::uint32_t restart_count = 0;
    };

    const char* name() const override { return name_.c_str(); }
    void set_exit_handler(std::function<void(const std::string& id)> handler) override {
        on_exit_ = std::move(handler);
    }

    Result<std::string> start(const platform::ContainerLaunch& launch) override {
        ++calls_["start"];
        if (auto e = take_failure("start")) return *e;
        if (missing_images_.count(image_of(launch)))
            return Error{ErrorCode::ImageNotFound, "image \"" + image_of(launch) + "\" is not in the store"};
        const std::string id = launch.id.empty() ? "fake-" + std::to_string(++next_id_) : launch.id;
        platform::ContainerInfo info;
        info.id = id;
        info.pod_uid = launch.pod_uid;
        info.pod_name = launch.pod_name;
        info.pod_namespace = launch.pod_namespace;
        info.container_name = launch.container_name;
        info.running = true;
        info.pid = 1000 + static_cast<int>(next_id_);
        info.labels = launch.labels;
        containers_[id] = info;
        started_.push_back({id, launch.pod_uid, launch.container_name, launch.restart_count});
        return id;
    }

    Status stop(const std::string& id) override {
        ++calls_["stop"];
        if (auto e = take_failure("stop")) return *e;
        auto it = containers_.find(id);
        if (it == containers_.end()) return Error{ErrorCode::NotFound, "no container " + id};
        stopped_.push_back(id);
        // A stop ends in an exit the test delivers (exit()), as a shim's
        // SIGTERM does: the grace period is the test's to play out.
        return Ok{};
    }

    // The grace period the next stop of `id` has (stop_graces()).
    void set_stop_grace(const std::string& id, std::int64_t grace_seconds) override {
        stop_graces_[id] = grace_seconds;
    }

    Result<platform::ContainerInfo> inspect(const std::string& id) override {
        ++calls_["inspect"];
        if (auto e = take_failure("inspect")) return *e;
        auto it = containers_.find(id);
        if (it == containers_.end()) return Error{ErrorCode::NotFound, "no container " + id};
        return it->second;
    }

    Result<std::vector<platform::ContainerInfo>> adopt_all() override {
        ++calls_["adopt_all"];
        if (auto e = take_failure("adopt_all")) return *e;
        std::vector<platform::ContainerInfo> out;
        for (const auto& [id, info] : containers_) out.push_back(info);
        return out;
    }

    Status remove(const std::string& id) override {
        ++calls_["remove"];
        if (auto e = take_failure("remove")) return *e;
        if (containers_.erase(id) == 0) return Error{ErrorCode::NotFound, "no container " + id};
        return Ok{};
    }

    // The asynchronous calls do the call at once and answer on the test's
    // turn (settle()), never from inside the call: the loop's contract.
    void start_async(platform::ContainerLaunch launch,
                     std::function<void(Result<std::string>)> done) override {
        post(std::move(done), start(launch));
    }
    void stop_async(const std::string& id, std::function<void(Status)> done) override {
        post(std::move(done), stop(id));
    }
    void remove_async(const std::string& id, std::function<void(Status)> done) override {
        post(std::move(done), remove(id));
    }
    void inspect_async(const std::string& id,
                       std::function<void(Result<platform::ContainerInfo>)> done) override {
        post(std::move(done), inspect(id));
    }

    void pod_removed(const std::string& pod_uid) override { removed_pods_.push_back(pod_uid); }

    bool can_pull() const override { return can_pull_; }
    // Pulls wait for the test: answer_pull() calls `done`, on the test's
    // turn, never from inside pull_image().
    void pull_image(const std::string& image, std::function<void(Status)> done) override {
        ++calls_["pull_image"];
        pending_pulls_.emplace_back(image, std::move(done));
    }
    bool has_image(const std::string& image) const override { return !missing_images_.count(image); }

    // --- what the test does ---

    // Container `id` exits with `exit_code` at wall time `finished_at_ms`
    // (0: none reported, the agent takes its own clock), and the exit
    // handler hears of it.
    void exit(const std::string& id, int exit_code, std::int64_t finished_at_ms = 0,
              const std::string& reason = "") {
        auto it = containers_.find(id);
        if (it == containers_.end() || !it->second.running) return;
        it->second.running = false;
        it->second.exit_code = exit_code;
        it->second.reason = !reason.empty() ? reason : exit_code == 0 ? "Completed" : "Error";
        it->second.finished_at_ms = finished_at_ms;
        if (on_exit_) on_exit_(id);
    }
    // The next `times` calls of `call` ("start", "stop", "inspect",
    // "adopt_all", "remove") fail with `error` (code "unavailable": the
    // runtime is down).
    void fail_next(const std::string& call, Error error, int times = 1) {
        for (int i = 0; i < times; ++i) failures_[call].push_back(error);
    }
    // The image is absent: start() fails with image_not_found until it is
    // present again.
    void set_image_missing(const std::string& image, bool missing = true) {
        if (missing)
            missing_images_.insert(image);
        else
            missing_images_.erase(image);
    }
    void set_can_pull(bool can) { can_pull_ = can; }
    // Answers the oldest pull asked for; false when none waits. A pull the
    // test never answers is a registry that never answers.
    bool answer_pull(Status result) {
        if (pending_pulls_.empty()) return false;
        auto [image, done] = std::move(pending_pulls_.front());
        pending_pulls_.pop_front();
        if (result.ok()) missing_images_.erase(image);
        done(std::move(result));
        return true;
    }
    // Delivers the asynchronous calls' answers, and those their callbacks
    // ask for, until none is left: a turn of the loop, as long as it takes.
    void settle() {
        while (!posted_.empty()) {
            std::function<void()> answer = std::move(posted_.front());
            posted_.pop_front();
            answer();
        }
    }
    void set_name(std::string n) { name_ = std::move(n); }

    const std::vector<Started>& started() const { return started_; }
    const std::vector<std::string>& stopped() const { return stopped_; }
    // The grace periods set for a stop, by id (none: the launch's).
    const std::map<std::string, std::int64_t>& stop_graces() const { return stop_graces_; }
    const std::vector<std::string>& removed_pods() const { return removed_pods_; }
    std::size_t pending_pulls() const { return pending_pulls_.size(); }
    int calls(const std::string& call) const {
        auto it = calls_.find(call);
        return it == calls_.end() ? 0 : it->second;
    }
    std::vector<std::string> running() const {
        std::vector<std::string> out;
        for (const auto& [id, info] : containers_)
            if (info.running) out.push_back(id);
        return out;
    }

  private:
    template <class Done, class R>
    void post(Done done, R result) {
        posted_.emplace_back(
            [done = std::move(done), result = std::move(result)]() mutable { done(std::move(result)); });
    }
    static std::string image_of(const platform::ContainerLaunch& launch) {
        return launch.container ? launch.container->image : std::string();
    }
    std::optional<Error> take_failure(const std::string& call) {
        auto it = failures_.find(call);
        if (it == failures_.end() || it->second.empty()) return std::nullopt;
        Error e = it->second.front();
        it->second.pop_front();
        return e;
    }

    std::string name_ = "fake";
    std::function<void(const std::string&)> on_exit_;
    std::map<std::string, platform::ContainerInfo> containers_;
    std::uint64_t next_id_ = 0;
    std::vector<Started> started_;
    std::vector<std::string> stopped_;
    std::map<std::string, std::int64_t> stop_graces_;
    std::vector<std::string> removed_pods_;
    std::map<std::string, std::deque<Error>> failures_;
    std::map<std::string, int> calls_;
    std::set<std::string> missing_images_;
    bool can_pull_ = false;
    std::deque<std::pair<std::string, std::function<void(Status)>>> pending_pulls_;
    std::deque<std::function<void()>> posted_;  // the asynchronous calls' answers, for settle()
};

}  // namespace daemonlet::testing
