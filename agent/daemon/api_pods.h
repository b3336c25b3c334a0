// The board's DaemonSet pods as Pods of the API (issue 14 §2,
// apiServer.podStatus): for each pod the board runs for a cluster
// DaemonSet, exactly one Pod, the one the DaemonSet controller would have
// made (core/daemon_pod.h), its status kept as the kubelet's status manager
// keeps it (core/pod_api_status.h), deleted once the board's pod is gone
// and its last status says it finished.
//
//   a pod record changes (Agent::save_pod), the link connects, every 10 s
//     --> sync(): one request at a time, over ClusterLink::request
//   a pod of a cluster DaemonSet without its Pod:
//     GET controllerrevisions?labelSelector=<the DaemonSet's selector>
//       --> the revision of the template the pod runs (none yet: listed again
//           after 1 s, 2 s, 4 s ... 30 s)
//     GET pods?fieldSelector=spec.nodeName=<node>&labelSelector=...
//       --> the DaemonSet's Pod of that revision on this node: taken (its
//           name and uid), so a restarted agent or the controller's Pod
//           never makes a second one; else POST (generateName)
//   its status: PATCH pods/NAME/status (strategic merge, uid precondition)
//     when it differs from the one the server has
//   the pod gone: its terminal status patched, then DELETE (uid precondition)
//
// Kubelet counterparts: status.Manager (syncBatch every 10 s, syncPod,
// PatchPodStatus), the DaemonSet controller's syncNodes for the creation.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/daemon/cluster_link.h"
#include "core/daemon_pod.h"
#include "core/pod.h"
#include "core/pod_events.h"
#include "platform/clock.h"

namespace daemonlet::agent {

// A pod the board runs, as the agent sees it now.
struct BoardPod {
    PodRecord rec;
    // Its cluster DaemonSet (Sources::api()); null when the pod's DaemonSet
    // is not the cluster's (any more): such a pod only keeps a Pod it has.
    std::shared_ptr<const DaemonSet> ds;
    Json status;  // pod_api_status now
};

class ApiPods {
  public:
    struct Hooks {
        std::function<std::vector<BoardPod>()> pods;  // every pod the board runs but static pods
    };
    ApiPods(uv_loop_t* loop, ClusterLink& link, std::string node_name, const platform::Clock& clock,
            Hooks hooks);
    ApiPods(const ApiPods&) = delete;
    ApiPods& operator=(const ApiPods&) = delete;
    ~ApiPods();

    void start();
    void close();  // the timer; the link's close cancels the requests
    // A pod may have changed (or the link connected): a sync this loop turn.
    void changed();
    // The link connected again: every Pod's whole status is patched anew
    // (what the board posted may have been changed meanwhile, as the node
    // lifecycle controller's MarkPodsNotReady does; the kubelet's
    // syncBatch reconciles with the server's copy), and a Pod the server
    // lost is made again (the patch's 404).
    void reconnected();
    // The board's pod `uid` is gone; `final_status` is its terminal status
    // (pod_api_status with terminal), patched before the Pod is deleted.
    void pod_finished(const std::string& uid, Json final_status);
    // The board pod `uid`'s Pod, when the API has it (created or taken).
    std::optional<ApiPodRef> pod_of(const std::string& uid) const;
    // For `daemonlet status`: Pods kept, creations, adoptions, patches, deletions, the last error.
    Json status() const;

  private:
    struct Mirror {
        std::string ns, ds_name, ds_uid;
        std::string template_hash;         // the board's hash of the template the pod runs
        std::string name, uid;             // the Pod's; empty before it is created or taken
        bool looked_up = false;            // the node's Pods of its DaemonSet were listed
        Json posted;                       // the status the server has (as last written or read)
        std::optional<Json> final_status;  // the pod is gone: patched, then the Pod deleted
        // A request for it failed: it waits until then (monotonic), so that
        // one refused Pod or DaemonSet holds back no other.
        std::int64_t retry_at_ms = 0;
    };
    void arm(std::uint64_t delay_ms);
    void sync();
    bool send(const std::string& method, const std::string& target, Json body, const std::string& what,
              const std::string& key, std::function<void(const platform::HttpResponse&)> done);
    // `key`: the board pod whose request failed ("" for none).
    void failed(const std::string& what, const std::string& key);
    void list_revisions(const std::string& key, const DaemonSet& ds);
    void list_pods(const std::string& key, const DaemonSet& ds, const ClusterRevision& rev);
    void create(const std::string& key, const DaemonSet& ds, const ClusterRevision& rev);
    void patch_status(const std::string& key, Json status);
    void finish(const std::string& key);

    uv_loop_t* loop_;
    ClusterLink& link_;
    std::string node_name_;
    const platform::Clock& clock_;
    Hooks hooks_;
    uv_timer_t* timer_ = nullptr;
    bool busy_ = false;  // a request in flight
    bool closed_ = false;
    std::map<std::string, Mirror> mirrors_;  // by the board pod's uid
    // The DaemonSets' ControllerRevisions as last listed, by DaemonSet uid;
    // and for a template none matched, by "<DaemonSet uid>/<board hash>",
    // when they were listed for it (monotonic) and the wait before the next.
    std::map<std::string, std::vector<ClusterRevision>> revisions_;
    struct RevisionWait {
        std::int64_t listed_ms = 0;
        std::int64_t delay_ms = 0;
    };
    std::map<std::string, RevisionWait> revision_waits_;
    std::string error_;
    std::uint64_t created_ = 0, adopted_ = 0, patches_ = 0, deleted_ = 0;
};

}  // namespace daemonlet::agent
