// The board's DaemonSet pods as Pods of the API (issue 14 §2,
// apiServer.podStatus): for each pod the board runs for a cluster
// DaemonSet, exactly one Pod, the one the DaemonSet controller would have
// made (core/daemon_pod.h), its status kept as the kubelet's status manager
// keeps it (core/pod_api_status.h), deleted once the board's pod is gone
// and its last status says it finished.
//
//   a pod record changes (PodTable::save), the link connects, every 10 s
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
// The node's Pods (issue 14 §3/§4, core/node_pods.h) come from a watch,
// as the kubelet's pod source has them (config/apiserver.go): ClusterLink
// lists, then watches, /api/v1/pods?fieldSelector=spec.nodeName=<node>
// (on_pods). A watch, not a list in the 10 s sync: a deletion is seen at
// once, not up to 10 s later, and an idle board costs a bookmark now and
// then instead of a list of its Pods every 10 s (the link already keeps an
// HTTP/2 connection whose streams the watch shares). Only a summary of each
// Pod is kept (NodePod). Acted on in sync, so only while connected
// (api_node_pods.cpp):
//   a board pod's Pod gets a deletionTimestamp (kubectl delete pod, the
//     controller's rollout) --> hooks.restart: its containers stopped
//     within the Pod's deletionGracePeriodSeconds, then the terminal status
//     and the confirming DELETE (grace 0, uid precondition) above, and the
//     board's fresh pod of the DaemonSet gets a new Pod; a DELETED event
//     (removed outright) restarts it too. A Pod merely absent from a relist
//     does not: a server that lost its state would restart every pod (§4),
//     the Pod is made again instead (the status patch's 404)
//   a DaemonSet's Pod bound here that no board pod has:
//     being deleted --> confirmed (DELETE, grace 0); its DaemonSet gone
//     (GET daemonsets/NAME: 404 or another uid) or a left-over beside the
//     board pod's Pod --> terminal status, then DELETE; one the board's own
//     decision does not run (local labels, taints) --> phase Failed with
//     the kubelet's admission reason and message, left to the controller
//
// Mirror pods (registerNode; issue 14 §3): each static pod and each pod of
// a manifest file's DaemonSet has one Pod of its own name, a copy of the
// pod with the annotation kubernetes.io/config.mirror (its config hash, the
// pod's uid) and a controller ownerReference to the Node (core
// mirror_pod_object), its status patched as above. Made again when it is
// deleted (a deletionTimestamp: DELETE grace 0 with the uid precondition,
// then POST; a DELETED event: POST) or names another Node uid; deleted
// when its pod goes; an orphan of this Node no pod has is deleted. Deleting
// it never restarts the pod (kubelet.go syncPod, mirror_client.go).
//
// Kubelet counterparts: status.Manager (syncBatch every 10 s, syncPod,
// PatchPodStatus, canBeDeleted/deletePod), the DaemonSet controller's
// syncNodes for the creation.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/daemon/cluster_link.h"
#include "core/daemon_pod.h"
#include "core/node_pods.h"
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
    // A static pod's, or a manifest file's DaemonSet pod's: the pod its
    // mirror pod copies (core mirror_pod_object, the config hash its uid);
    // null for a cluster DaemonSet's pod, or without registerNode.
    Json mirror;
};

class ApiPods {
  public:
    // status.Manager's syncBatch period: every Pod's status is checked again.
    static constexpr std::uint64_t kSyncPeriodMs = 10'000;
    struct Hooks {
        std::function<std::vector<BoardPod>()> pods;  // every pod the board runs but static pods
        // The board's pod `uid` is to stop (its Pod is being deleted, or is
        // gone) and be replaced; `grace`: the Pod's deletionGracePeriodSeconds.
        std::function<void(const std::string& uid, std::optional<std::int64_t> grace, const std::string& why)>
            restart;
        // What the board knows of the DaemonSet NS/NAME whose uid a Pod names
        // (state and decision; the counts are ApiPods').
        std::function<OwnerView(const std::string& ns, const std::string& name, const std::string& uid)>
            owner;
        // registerNode: the board's static pods (and manifest files'
        // DaemonSet pods) have mirror pods, and orphaned ones are deleted.
        bool mirror_pods = false;
        // The pod watch brought a Pod no board pod has (of a DaemonSet the
        // board follows), or its first list came; a board pod's Pod was
        // looked for; a DaemonSet's revisions were listed.
        std::function<void()> node_pods_changed;
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
    // The pod watch's changes (ClusterLink hooks.pods).
    void on_pods(ReflectorChanges&& changes);
    // The board pod `uid`'s Pod, when the API has it (created or taken).
    std::optional<ApiPodRef> pod_of(const std::string& uid) const;
    // A live Pod of the DaemonSet `ds_uid` bound here that no board pod has,
    // of the controller's revision of the template `template_hash` (the
    // board's hash): the controller's surge Pod for this node, which the
    // board's new pod is to take (issue 14 §3). False while that revision
    // is not listed.
    bool has_unclaimed_pod(const std::string& ds_uid, const std::string& template_hash) const;
    // Whether the board pod `uid`'s Pod is known either way: the node's
    // Pods were listed and its Pod taken or made, or looked for and not
    // found. Until then (an agent that just started, a new link) a paced
    // rollout waits rather than taking "no Pod" for an answer.
    bool has_pod_known(const std::string& uid) const;
    // For `daemonlet status`: Pods kept, creations, adoptions, patches, deletions, the last error.
    Json status() const;

  private:
    struct Mirror {
        // A mirror pod (kubernetes.io/config.mirror, owned by the Node) of
        // a static pod or a manifest file's DaemonSet pod, not a DaemonSet
        // Pod: made with the pod's name, never taken by a list, and its
        // deletion through the API makes it again, never restarts the pod
        // (mirror_client.go, syncPod).
        bool mirror_pod = false;
        std::string node_uid;  // the Node uid its ownerReference names
        std::string ns, ds_name, ds_uid;
        std::string template_hash;         // the board's hash of the template the pod runs
        std::string name, uid;             // the Pod's; empty before it is created or taken
        bool looked_up = false;            // the node's Pods of its DaemonSet were listed
        bool restarting = false;           // its Pod is being deleted: the board's pod stops
        bool pod_deleted = false;          // its Pod was removed outright (a DELETED event)
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
    // `retry_ms`: when the key's request goes again (a sync period; a
    // mirror pod the server refuses for good, longer).
    void failed(const std::string& what, const std::string& key, std::uint64_t retry_ms = kSyncPeriodMs);
    void list_revisions(const std::string& key, const DaemonSet& ds);
    void list_pods(const std::string& key, const DaemonSet& ds, const ClusterRevision& rev);
    void create(const std::string& key, const DaemonSet& ds, const ClusterRevision& rev);
    void patch_status(const std::string& key, Json status);
    void finish(const std::string& key);
    // mirror_client.go CreateMirrorPod (409: taken when IsMirrorPodOf,
    // else the outdated one deleted) and DeleteMirrorPod (grace 0, uid).
    void create_mirror(const std::string& key, const BoardPod& pod);
    void adopt_mirror(const std::string& key, const std::string& name, const std::string& hash);
    void delete_mirror(const std::string& key, const std::string& name, const std::string& uid,
                       const std::string& why);
    // The node's Pods no board pod has (core judge_node_pod): one step,
    // true when a request went.
    bool tend_node_pods(const std::vector<BoardPod>& pods, std::int64_t now);
    bool take_twin(Mirror& m, const DaemonSet& ds, const NodePod& deleting);
    bool unclaimed_followed(const NodePod& pod) const;
    std::set<std::string> claimed_uids() const;
    bool unlisted_revision_pod(const std::string& ds_uid, const std::vector<ClusterRevision>& revs) const;
    void restart_deleted(const std::map<std::string, const BoardPod*>& by_uid);
    void refuse(const NodePod& pod, const NodePodVerdict& v);
    void finish_node_pod(const NodePod& pod, const std::string& why, bool status_first = true);
    void check_owner(const NodePod& pod);
    // The requests about a Pod of the node no board pod has are keyed apart
    // from the board pods' (by Pod uid), for their retry.
    static constexpr const char* kNodeKey = "node/";
    static std::string pod_path(const std::string& ns, const std::string& name);
    static Json confirm_delete_options(const std::string& uid);
    static bool terminal_phase(const std::string& phase);

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
    // The Pods bound to this node as the watch has them, by uid; synced
    // once a complete list came. Their status is kept too, for a finished
    // Pod's terminal status.
    struct WatchedPod {
        NodePod pod;
        Json status;
    };
    std::map<std::string, WatchedPod> node_pods_;
    bool node_pods_synced_ = false;
    std::map<std::string, bool> owner_present_;          // DaemonSet uid -> in the cluster (GET)
    std::map<std::string, std::int64_t> node_retry_at_;  // Pod uid -> after a failed request (monotonic)
    std::string error_;
    std::uint64_t created_ = 0, adopted_ = 0, patches_ = 0, deleted_ = 0, restarted_ = 0, refused_ = 0;
    std::uint64_t mirrors_created_ = 0, mirrors_deleted_ = 0;
};

}  // namespace daemonlet::agent
