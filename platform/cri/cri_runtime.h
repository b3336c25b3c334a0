// The CRI runtime (runtime.type cri): containers run by a CRI runtime,
// containerd's CRI plugin, through its runtime.v1 gRPC API
// (platform/cri/cri_client.h), one pod sandbox per pod as the kubelet does
// (kuberuntime_sandbox.go, kuberuntime_container.go; the configs are
// core/cri_config.h's). containerd's shims, not daemonlet-shim, watch the
// containers, so an agent restart, kill -9 included, restarts nothing:
// adopt_all() lists the containers labelled io.daemonlet.managed=true and
// rebuilds their records from their labels.
//
// Which calls block the loop, and for how long:
//   start_async(), inspect_async(), remove_async()   the agent's: worker
//                threads (kCallWorkers); `done` on the loop. A start's
//                calls: ImageStatus, ListPodSandbox, RunPodSandbox (the
//                pod's first container: up to kRunSandboxDeadlineMs),
//                CreateContainer, StartContainer, each with its deadline.
//   start()      the same calls, synchronously (tests).
//   inspect(), remove(), has_image(), pod_network()   synchronous, a few
//                seconds at most (has_image: imagePullPolicy Always;
//                pod_network: once per container, then kept).
//   adopt_all()  synchronous, a few round trips whatever the number of
//                containers (ContainerStatus all at once): waits up to
//                kAdoptDeadlineMs for the runtime, then two short deadlines.
//   stop()       a worker thread: StopContainer(timeout = grace period)
//                blocks for up to the grace period.
//   pull_image() a worker thread: PullImage can take minutes; `done` runs
//                on the loop. A start() that finds its image absent fails
//                with "image_not_found"; the agent then pulls as
//                imagePullPolicy says and starts again once the pull lands
//                (kubelet image_manager.go EnsureImageExists).
//   pod_removed() a worker thread: StopPodSandbox, RemovePodSandbox.
//   exits        containerd 1.6 has no GetContainerEvents: a uv timer
//                relists (ListContainers) every kRelistIntervalMs on a
//                worker thread, as the kubelet's generic PLEG does, and the
//                exit handler is called once per container gone from
//                RUNNING.
//
// Logs: containerd writes the CRI log format itself, into
// <runtime_dir>/logs/<namespace>_<pod>_<uid>/<container>/<attempt>.log,
// where `daemonlet logs` reads the exec and runc runtimes' logs.
// emptyDir volumes are <runtime_dir>/pods/<uid>/volumes/<name>, as for runc.
// Exec probes run `ctr tasks exec` in the container (containerd's
// namespace k8s.io, the CRI plugin's).
//
// The runtime lives in a module of its own, daemonlet-cri.so (installed
// next to the shim), loaded with dlopen only when runtime.type is cri:
// gRPC, protobuf and abseil cost an agent that maps them about 8 MiB of
// VmRSS (an idle agent: 17.7 MiB instead of 8.8), which an agent on the
// exec or runc runtime must not pay.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "platform/runtime.h"

struct uv_loop_s;

namespace daemonlet::platform {

inline constexpr const char* kDefaultCriEndpoint = "unix:///run/containerd/containerd.sock";
inline constexpr int kRelistIntervalMs = 1000;       // kubelet's genericPLEG relistPeriod
inline constexpr int kRunSandboxDeadlineMs = 20000;  // within the unit's WatchdogSec=30s
inline constexpr int kAdoptDeadlineMs = 5000;

struct CriRuntimeOptions {
    std::string endpoint = kDefaultCriEndpoint;
    std::string runtime_dir;  // absolute: stateDir/runtime
    std::string ctr = "ctr";  // containerd's CLI, for exec probes
    std::string module;       // the path of daemonlet-cri.so
    // config seccompProfileRoot: seccompProfile Localhost's localhost_ref
    // is <root>/<localhostProfile> (kubelet's getSeccompProfile).
    std::string seccomp_profile_root;
    // config clusterDNS, clusterDomain: the sandbox's DNS (core/pod_dns.h).
    std::vector<std::string> cluster_dns;
    std::string cluster_domain = "cluster.local";
};

inline constexpr const char* kCriModule = "daemonlet-cri.so";
// What the module exports, as daemonlet_cri_factory (extern "C"): its
// make_cri_runtime.
using CriRuntimeFactory = Result<std::unique_ptr<Runtime>> (*)(uv_loop_s* loop, CriRuntimeOptions options);

// Loads options.module and makes the runtime. Errors: the module cannot be
// loaded (dlerror's reason); an endpoint that is not unix:///<absolute
// path>; without DAEMONLET_CRI at build time, always (code "unsupported",
// "runtime.type cri: this daemonlet was built without CRI support"). A
// runtime that is not up yet is no error: its calls fail until it is.
Result<std::unique_ptr<Runtime>> make_cri_runtime(uv_loop_s* loop, CriRuntimeOptions options);

}  // namespace daemonlet::platform
