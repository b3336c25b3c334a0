// The AgentMetrics component: the agent's metrics (core/metrics.h
// MetricRegistry, every family declared here once), the HTTP endpoint on
// metricsBindAddress that serves them (platform/http_server.h), and the
// loop-stall watch that /healthz and daemonlet_loop_stall_seconds read.
//
//   GET /metrics  -> the registry, after hooks.collect has set its gauges
//                    from the agent's state (Prometheus text format 0.0.4)
//   GET /healthz  -> 200 "ok" while the loop and the store work, else 500
//                    and the reason (as the kubelet's healthz: one line)
//
// Counters are counted where things happen (Agent calls count_* below);
// gauges are read from the agent's state only when scraped, so an agent
// nobody scrapes pays for the counters and the 500 ms stall timer alone,
// and one with metricsBindAddress "" for the counters alone. Label values are bounded:
// operation types, states, DaemonSet namespace/name and container names,
// never a pod uid or a pod name (a rollout makes new ones).
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/metrics.h"
#include "core/result.h"
#include "platform/clock.h"
#include "platform/http_server.h"

namespace daemonlet::agent {

class AgentMetrics {
  public:
    struct Hooks {
        // Sets the gauges (and the counters mirrored from a component's own
        // count) from the agent's state, just before a scrape renders.
        std::function<void(MetricRegistry&)> collect;
        // "" while the store works, else why not (/healthz).
        std::function<std::string()> store_problem;
    };

    // A loop turn held longer than this (or the stall watch's timer later
    // than this) makes /healthz fail for kStallMemoryMs afterwards.
    static constexpr std::int64_t kStallUnhealthyMs = 5'000;
    static constexpr std::int64_t kStallMemoryMs = 30'000;
    static constexpr std::uint64_t kStallTickMs = 500;

    AgentMetrics(uv_loop_t* loop, const platform::Clock& clock, Hooks hooks);
    AgentMetrics(const AgentMetrics&) = delete;
    AgentMetrics& operator=(const AgentMetrics&) = delete;
    ~AgentMetrics();

    // Serves on `address` ("host:port"; "" : not served, Ok). Fails
    // synchronously naming the address.
    Status start(const std::string& address);
    void close();
    // Where it serves ("" when not).
    std::string address() const { return server_ ? server_->address() : std::string(); }

    MetricRegistry& registry() { return registry_; }

    // kubelet_runtime_operations_{total,duration_seconds,errors_total}.
    void count_runtime_operation(const char* type, std::uint64_t started_ns, bool ok);
    // The /healthz answer: {200, "ok"} or {500, reason}.
    platform::HttpServer::Reply healthz();
    platform::HttpServer::Reply metrics();

  private:
    void declare();
    void on_tick();

    uv_loop_t* loop_;
    const platform::Clock& clock_;
    Hooks hooks_;
    MetricRegistry registry_;
    std::unique_ptr<platform::HttpServer> server_;
    uv_timer_t* tick_ = nullptr;
    std::int64_t last_tick_mono_ms_ = 0;
    std::int64_t last_bad_stall_mono_ms_ = -1;  // when a stall over kStallUnhealthyMs was seen
    std::int64_t last_bad_stall_ms_ = 0;
};

}  // namespace daemonlet::agent
