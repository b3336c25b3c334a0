// The agent's side of Images (images.h): the pods' containers that wait for
// an image, started again when an import or a pull brings it, and what
// image GC must keep. Images owns the images; this only reaches the pods.
#include "agent/daemon/agent.h"
#include "core/decision.h"
#include "core/image_wait.h"

namespace daemonlet::agent {

namespace {

void add_spec_images(const PodSpec& spec, std::set<std::string>& out) {
    for (const Container& c : spec.init_containers) out.insert(image_key(c.image));
    for (const Container& c : spec.containers) out.insert(image_key(c.image));
}

}  // namespace

void Agent::images_arrived() { retry_image_waits(); }

void Agent::retry_image_waits() {
    bool started = false;
    for (auto& [uid, p] : pods_) {
        for (std::size_t i = 0; i < p.containers.size(); ++i) {
            WorkerContainer& lc = p.containers[i];
            const ContainerStatus& cs = p.status(i);
            if (!lc.id.empty() || !is_image_wait(cs.reason)) continue;
            workers_->cancel_restart(lc);
            lc.backoff = {};
            workers_->start(uid, i);
            refresh_readiness(p);
            pods_.save(p);
            started = true;
        }
    }
    if (started) schedule_reconcile();
}

Images::Host::Waiting Agent::waiting_for_image(const ImageWaiter& w, const std::string& image) {
    Waiting out;
    LivePod* found = pods_.find(w.uid);
    if (!found || w.index >= found->containers.size()) return out;
    LivePod& p = *found;
    out.pod = &p.rec;
    const Container* spec = container_spec(p, w.index);
    if (!p.containers[w.index].id.empty() || !spec || spec->image != image || p.rec.deleting) return out;
    out.spec = spec;
    out.status = &p.status(w.index);
    return out;
}

void Agent::start_pulled(const ImageWaiter& w) {
    LivePod& p = pods_.at(w.uid);
    WorkerContainer& lc = p.containers[w.index];
    workers_->cancel_restart(lc);
    lc.backoff = {};
    workers_->start(w.uid, w.index);
    refresh_readiness(p);
    pods_.save(p);
}

void Agent::retry_image_after(const ImageWaiter& w, std::int64_t delay_ms, bool save) {
    workers_->schedule_restart(w.uid, w.index, delay_ms);
    if (save) pods_.save(pods_.at(w.uid));
}

void Agent::pulls_changed() { schedule_reconcile(); }

void Agent::record_container_event(const ImageWaiter& w,
                                   const std::function<PodEvent(const ContainerRef&)>& make) {
    LivePod* found = pods_.find(w.uid);
    if (!found || w.index >= found->containers.size()) return;
    record_pod_event(*found, make(container_ref(*found, w.index)));
}

void Agent::record_image_event(const PodRecord& pod, const char* type, const char* reason,
                               const std::string& message) {
    ds_events_.record(pod.namespace_, pod.daemonset, type, reason, message);
}

// A pod's container is taken by its own revision's spec (probed_spec). One
// whose spec is gone (its DaemonSet deleted, the pod stopping) is not
// counted: what it has mounted stays anyway (a mounted layer is never
// deleted, image_store.h), and a copied rootfs does not need the store.
// And, the edge deviation from kubelet, the images of every DaemonSet this
// node should run, running or not (image_gc.cpp).
std::set<std::string> Agent::images_in_use() {
    std::set<std::string> out;
    for (const auto& [uid, p] : pods_)
        for (std::size_t i = 0; i < p.containers.size(); ++i)
            if (const Container* c = probed_spec(p, i)) out.insert(image_key(c->image));
    for (const auto& [key, d] : desired_)
        if (node_should_run_daemon_pod(node_state_->node(), d.ds()).should_run)
            add_spec_images(d.ds().spec.template_.spec, out);
    return out;
}

}  // namespace daemonlet::agent
