// The test API server's controllers (fake_apiserver --controllers): a
// DaemonSet controller and a node lifecycle controller that behave as
// kube-controller-manager's for a fleet of boards, so that a test runs
// several agents against one server and watches rollouts paced across them.
//
// A module of fake_apiserver in its own file, run on its own thread: it
// reads and writes the server's objects under the server's mutex, each
// write recorded as an API write is (watch events, resourceVersions), so the
// agents and kubectl see what they would see of kube-controller-manager's
// writes. A separate process would need an HTTP/2-less Kubernetes client in
// the test tree (list, watch, retry) for no behaviour a test can observe.
//
// What it covers (the rules name the upstream function they follow):
//   DaemonSets with a plain nodeSelector (or none), RollingUpdate with
//   maxUnavailable and maxSurge as integers or percentages, OnDelete,
//   minReadySeconds: its ControllerRevisions, one Pod per matching Node,
//   the rolling update, the DaemonSet's status (kubectl rollout status);
//   Nodes whose Lease (kube-node-lease/<node>) is not renewed for the grace
//   (--node-grace-seconds, upstream's --node-monitor-grace-period, 40 s):
//   Ready Unknown and the unreachable taints, removed on renewal.
//   Failed daemon Pods deleted under failedPodsBackoff (per DaemonSet and
//   node: 1 s doubling to 15 min, flowcontrol.NewBackOff).
// Not covered: the garbage collector
// (a deleted DaemonSet's Pods stay), node affinity terms of the template,
// eviction of Pods from unreachable Nodes (DaemonSet Pods tolerate it).
// Included inside fake_apiserver.cpp's anonymous namespace, after its
// store and helpers (its own includes hold <algorithm>, <set>, <thread>).

struct Controllers {
    std::int64_t node_grace_s = 40;
    // Node name -> the Lease's renewTime last seen and when it was seen
    // (nodeHealthData's probeTimestamp).
    std::map<std::string, std::pair<std::string, Clock::time_point>> probes;
    // "ns/name resourceVersion" of DaemonSets whose bad maxUnavailable or
    // maxSurge was logged, so that it is logged once per version.
    std::set<std::string> invalid_logged;
    // daemon_controller.go failedPodsBackoff, by failedPodsBackoffKey
    // ("ns/name/node"): the last deletion of a failed Pod and the delay.
    std::map<std::string, std::pair<Clock::time_point, Clock::duration>> failed_backoff;
    Clock::duration failed_backoff_initial = std::chrono::seconds(1);  // --failed-pod-backoff-ms
};
Controllers C;

// Reads a field that may be absent or of another type, as a default.
template <class T>
T field(const json& o, const char* k, T def) {
    return o.is_object() && o.contains(k) && !o[k].is_null() ? o[k].get<T>() : def;
}

bool has_condition(const json& obj, const char* type, const char* status) {
    const json& st = obj.contains("status") ? obj["status"] : json();
    if (!st.is_object() || !st.contains("conditions") || !st["conditions"].is_array()) return false;
    for (const auto& c : st["conditions"])
        if (field<std::string>(c, "type", "") == type) return field<std::string>(c, "status", "") == status;
    return false;
}

// controller_history.go HashControllerRevision: FNV-32a of the template,
// rand.SafeEncodeString of its decimal digits.
std::string revision_hash(const json& tmpl) {
    std::uint32_t h = 2166136261u;
    for (unsigned char ch : tmpl.dump()) h = (h ^ ch) * 16777619u;
    static const char alphanums[] = "bcdfghjklmnpqrstvwxz2456789";
    std::string out;
    for (char d : std::to_string(h)) out += alphanums[static_cast<unsigned char>(d) % (sizeof alphanums - 1)];
    return out;
}

// update.go getPatch: the data a revision holds for a template.
json revision_data(const json& ds) {
    json t = ds["spec"]["template"];
    t["$patch"] = "replace";
    return {{"spec", {{"template", t}}}};
}

// update.go constructHistory: the revision matching the template (Match),
// made when none does (name <ds>-<hash>, revision max+1, the template's
// labels and controller-revision-hash, owned by the DaemonSet), or raised
// to max+1 when an older one matches (a rollback). Returns its hash.
std::string current_revision(const std::string& ns, const json& ds) {
    const json data = revision_data(ds);
    const std::string name = ds["metadata"]["name"];
    std::int64_t max_rev = 0;
    json* match = nullptr;
    for (auto& [key, cr] : S.controllerrevisions) {
        if (key.rfind(ns + "/", 0) != 0 || !cr["metadata"].contains("ownerReferences") ||
            cr["metadata"]["ownerReferences"][0].value("uid", "") != ds["metadata"].value("uid", ""))
            continue;
        max_rev = std::max(max_rev, field<std::int64_t>(cr, "revision", 0));
        if (cr["data"] == data) match = &cr;
    }
    if (match) {
        if (field<std::int64_t>(*match, "revision", 0) < max_rev) {
            (*match)["revision"] = max_rev + 1;
            (*match)["metadata"]["resourceVersion"] = std::to_string(++S.rv);
        }
        return (*match)["metadata"]["labels"]["controller-revision-hash"];
    }
    const std::string hash = revision_hash(ds["spec"]["template"]);
    json labels = field<json>(ds["spec"]["template"]["metadata"], "labels", json::object());
    labels["controller-revision-hash"] = hash;
    json cr = {{"metadata",
                {{"name", name + "-" + hash},
                 {"namespace", ns},
                 {"labels", labels},
                 {"ownerReferences",
                  {{{"apiVersion", "apps/v1"},
                    {"kind", "DaemonSet"},
                    {"name", name},
                    {"uid", ds["metadata"]["uid"]},
                    {"controller", true},
                    {"blockOwnerDeletion", true}}}}}},
               {"data", data},
               {"revision", max_rev + 1}};
    cr = stamp(cr, nullptr, "apps/v1", "ControllerRevision");
    cr["metadata"]["resourceVersion"] = std::to_string(++S.rv);
    S.controllerrevisions[ns + "/" + name + "-" + hash] = cr;
    return hash;
}

// predicates: the template's nodeSelector matches the Node's labels, and
// its tolerations (with those the controller adds) tolerate the Node's
// NoSchedule and NoExecute taints (daemon_controller.go NodeShouldRunDaemonPod).
bool tolerated(const json& taint, const json& tolerations) {
    for (const auto& t : tolerations) {
        const std::string op = field<std::string>(t, "operator", "Equal"),
                          key = field<std::string>(t, "key", "");
        const std::string effect = field<std::string>(t, "effect", "");
        if (!effect.empty() && effect != field<std::string>(taint, "effect", "")) continue;
        if (key.empty() && op == "Exists") return true;
        if (key != field<std::string>(taint, "key", "")) continue;
        if (op == "Exists" || field<std::string>(t, "value", "") == field<std::string>(taint, "value", ""))
            return true;
    }
    return false;
}

// util.AddOrUpdateDaemonPodTolerations (hostNetwork's network-unavailable left out).
json daemon_tolerations(json tolerations) {
    if (!tolerations.is_array()) tolerations = json::array();
    for (auto [key, effect] : {std::pair{"node.kubernetes.io/not-ready", "NoExecute"},
                               {"node.kubernetes.io/unreachable", "NoExecute"},
                               {"node.kubernetes.io/disk-pressure", "NoSchedule"},
                               {"node.kubernetes.io/memory-pressure", "NoSchedule"},
                               {"node.kubernetes.io/pid-pressure", "NoSchedule"},
                               {"node.kubernetes.io/unschedulable", "NoSchedule"}}) {
        json t = {{"key", key}, {"operator", "Exists"}, {"effect", effect}};
        if (std::find(tolerations.begin(), tolerations.end(), t) == tolerations.end())
            tolerations.push_back(t);
    }
    return tolerations;
}

// `running`: shouldContinueRunning, for a node that has the Pod already:
// only NoExecute taints count (a Node tainted unreachable NoSchedule keeps
// its daemon Pods).
bool should_run(const json& ds, const json& node, bool running = false) {
    const json& spec = ds["spec"]["template"]["spec"];
    const json labels = field<json>(node["metadata"], "labels", json::object());
    const json selector = field<json>(spec, "nodeSelector", json::object());
    for (const auto& [k, v] : selector.items())
        if (!labels.contains(k) || labels[k] != v) return false;
    const json tolerations = daemon_tolerations(field<json>(spec, "tolerations", json::array()));
    for (const auto& taint :
         field<json>(field<json>(node, "spec", json::object()), "taints", json::array())) {
        const std::string effect = field<std::string>(taint, "effect", "");
        const bool counts = running ? effect == "NoExecute" : effect != "PreferNoSchedule";
        if (counts && !tolerated(taint, tolerations)) return false;
    }
    return true;
}

// util.CreatePodTemplate and ReplaceDaemonSetPodNodeNameNodeAffinity: the
// template, its labels and controller-revision-hash, the controller's
// tolerations, a required affinity to the node by name, owned by the
// DaemonSet. spec.nodeName is set too: the scheduler's binding, which
// no scheduler runs here to make.
void create_daemon_pod(const std::string& ns, const json& ds, const std::string& node,
                       const std::string& hash) {
    const json& tmpl = ds["spec"]["template"];
    json md = field<json>(tmpl, "metadata", json::object());
    md["labels"]["controller-revision-hash"] = hash;
    md["name"] = generate_name(ns, ds["metadata"].value("name", "") + "-");
    md["generateName"] = ds["metadata"].value("name", "") + "-";
    md["namespace"] = ns;
    md["ownerReferences"] = {{{"apiVersion", "apps/v1"},
                              {"kind", "DaemonSet"},
                              {"name", ds["metadata"]["name"]},
                              {"uid", ds["metadata"]["uid"]},
                              {"controller", true},
                              {"blockOwnerDeletion", true}}};
    json spec = tmpl["spec"];
    spec["tolerations"] = daemon_tolerations(field<json>(spec, "tolerations", json::array()));
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
        {"nodeSelectorTerms",
         {{{"matchFields", {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {node}}}}}}}}};
    spec["nodeName"] = node;
    if (field<std::string>(spec, "serviceAccountName", "").empty()) spec["serviceAccountName"] = "default";
    std::fprintf(stderr, "controllers: creating Pod %s/%s for node %s, revision %s\n", ns.c_str(),
                 md.value("name", "").c_str(), node.c_str(), hash.c_str());
    create_pod({{"metadata", md}, {"spec", spec}});
}

// Deletes the Pod at `key` with its own grace, as the controller deletes
// (logged for a test's post-mortem, with `why`).
void delete_daemon_pod(const std::string& key, const char* why) {
    auto it = S.pods.find(key);
    if (it == S.pods.end()) return;
    std::fprintf(stderr, "controllers: deleting Pod %s (%s)\n", key.c_str(), why);
    delete_pod(it, json::object());
}

bool controlled_by(const json& pod, const json& ds) {
    for (const auto& ref : field<json>(pod["metadata"], "ownerReferences", json::array()))
        if (field<bool>(ref, "controller", false) && ref.value("uid", "") == ds["metadata"].value("uid", ""))
            return true;
    return false;
}

std::string hash_of(const json& pod) {
    return field<std::string>(field<json>(pod["metadata"], "labels", json::object()),
                              "controller-revision-hash", "");
}
bool deleting(const json& pod) { return pod["metadata"].contains("deletionTimestamp"); }
// podutil.IsPodAvailable: Ready for at least minReadySeconds (its Ready
// condition's lastTransitionTime, in seconds).
bool available(const json& pod, std::int64_t min_ready_s) {
    if (!has_condition(pod, "Ready", "True")) return false;
    if (min_ready_s == 0) return true;
    for (const auto& c : pod["status"]["conditions"]) {
        if (field<std::string>(c, "type", "") != "Ready") continue;
        std::tm tm{};
        const std::string t = field<std::string>(c, "lastTransitionTime", "");
        if (!strptime(t.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return false;
        return timegm(&tm) + min_ready_s <= std::time(nullptr);
    }
    return false;
}

// The DaemonSet's Pods by node (getNodesToDaemonPods), oldest first: the
// fake's creationTimestamp is in seconds, its uids count up.
std::map<std::string, std::vector<std::string>> daemon_pods(const json& ds) {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& [key, pod] : S.pods)
        if (controlled_by(pod, ds)) out[field<std::string>(pod["spec"], "nodeName", "")].push_back(key);
    for (auto& [n, keys] : out)
        std::sort(keys.begin(), keys.end(), [](const std::string& a, const std::string& b) {
            const json &pa = S.pods[a]["metadata"], &pb = S.pods[b]["metadata"];
            return std::pair(pa.value("creationTimestamp", ""), pa.value("uid", "")) <
                   std::pair(pb.value("creationTimestamp", ""), pb.value("uid", ""));
        });
    return out;
}

// update.go findUpdatedPodsOnNode: the node's new and old Pod, not being
// deleted; false when there are two of either.
bool updated_pods_on_node(const std::vector<std::string>& keys, const std::string& hash, std::string& new_pod,
                          std::string& old_pod) {
    new_pod.clear();
    old_pod.clear();
    for (const auto& k : keys) {
        if (deleting(S.pods[k])) continue;
        std::string& slot = hash_of(S.pods[k]) == hash ? new_pod : old_pod;
        if (!slot.empty()) return false;
        slot = k;
    }
    return true;
}

// intstr.GetScaledValueFromIntOrPercent(value, total, roundUp true), as
// util.UnavailableCount and util.SurgeCount both call it: an integer as it
// is, "N%" as ceil(N * total / 100) (34% of 3 Nodes is 2), absent as `def`;
// -1 for anything else (a string without %, a negative number), which
// kube-apiserver's validation refuses before a controller sees it.
std::int64_t scaled_count(const json& ru, const char* k, std::int64_t total, std::int64_t def) {
    if (!ru.is_object() || !ru.contains(k) || ru[k].is_null()) return def;
    const json& v = ru[k];
    if (v.is_number_integer()) return std::max<std::int64_t>(-1, v.get<std::int64_t>());
    if (!v.is_string()) return -1;
    const std::string str = v.get<std::string>();
    if (str.size() < 2 || str.size() > 4 || str.back() != '%') return -1;
    std::int64_t pct = 0;
    for (std::size_t i = 0; i + 1 < str.size(); ++i) {
        if (str[i] < '0' || str[i] > '9') return -1;
        pct = pct * 10 + (str[i] - '0');
    }
    return (pct * total + 99) / 100;
}

// podsShouldBeOnNode's back-off for a failed Pod (flowcontrol.Backoff,
// 1 s to 15 min): false while the key is in back-off since its last
// deletion (IsInBackOffSinceUpdate); else the delay steps (Next: doubled,
// back to 1 s after 2 x 15 min without one) and the Pod may go.
bool failed_backoff_next(const std::string& key) {
    using std::chrono::minutes;
    const auto now = Clock::now();
    auto it = C.failed_backoff.find(key);
    if (it == C.failed_backoff.end() || now - it->second.first > 2 * minutes(15)) {
        C.failed_backoff[key] = {now, C.failed_backoff_initial};
        return true;
    }
    auto& [last, delay] = it->second;
    if (now - last < delay) return false;
    last = now;
    delay = std::min<Clock::duration>(2 * delay, minutes(15));
    return true;
}

void sync_daemonset(json& ds, const std::vector<std::string>& nodes) {
    const std::string ns = ds["metadata"].value("namespace", "");
    const std::string hash = current_revision(ns, ds);
    const std::int64_t min_ready = field<std::int64_t>(ds["spec"], "minReadySeconds", 0);
    auto by_node = daemon_pods(ds);
    std::vector<std::string> run_nodes;
    for (const auto& n : nodes)
        if (should_run(ds, S.nodes[n])) run_nodes.push_back(n);
    const auto desired_count = static_cast<std::int64_t>(run_nodes.size());

    // update.go updatedDesiredNodeCounts: util.UnavailableCount and
    // util.SurgeCount of the Nodes that should run it; both 0 -> 1
    // unavailable. OnDelete has neither: syncDaemonSet runs no
    // rollingUpdate for it, manage replaces only the Pods someone deletes.
    const bool rolling = field<std::string>(field<json>(ds["spec"], "updateStrategy", json::object()), "type",
                                            "RollingUpdate") == "RollingUpdate";
    const json ru = field<json>(field<json>(ds["spec"], "updateStrategy", json::object()), "rollingUpdate",
                                json::object());
    const std::int64_t max_surge = rolling ? scaled_count(ru, "maxSurge", desired_count, 0) : 0;
    std::int64_t max_unavailable = scaled_count(ru, "maxUnavailable", desired_count, 1);
    const bool valid = max_surge >= 0 && max_unavailable >= 0;
    if (!valid && C.invalid_logged
                      .insert(ns + "/" + ds["metadata"].value("name", "") + " " +
                              ds["metadata"].value("resourceVersion", ""))
                      .second)
        std::fprintf(stderr,
                     "controllers: DaemonSet %s/%s: invalid maxUnavailable or maxSurge %s, not rolling\n",
                     ns.c_str(), ds["metadata"].value("name", "").c_str(), ru.dump().c_str());
    if (desired_count > 0 && max_surge == 0 && max_unavailable == 0) max_unavailable = 1;
    // util.AllowsSurge: SurgeCount(ds, 1) > 0.
    const bool allows_surge = rolling && scaled_count(ru, "maxSurge", 1, 0) > 0;

    // daemon_controller.go podsShouldBeOnNode (manage): a Pod for a node
    // that has none alive, failed Pods deleted, duplicates beyond the oldest
    // deleted (with surge: beyond the oldest of each revision, and the old
    // one too once it is not Ready or the new one is available); Pods on
    // nodes that should not run it deleted.
    for (auto& [node, keys] : by_node) {
        if (std::find(run_nodes.begin(), run_nodes.end(), node) != run_nodes.end()) continue;
        if (S.nodes.count(node) && should_run(ds, S.nodes[node], true)) continue;  // shouldContinueRunning
        for (const auto& k : keys)
            if (!deleting(S.pods[k])) delete_daemon_pod(k, "its node should not run it");
    }
    for (const auto& node : run_nodes) {
        std::vector<std::string> alive;
        // getNodesToDaemonPods leaves out only a Pod both terminal and being
        // deleted: a node whose Pod is still terminating has its Pod, and
        // podsShouldBeOnNode makes none until the kubelet confirms the
        // deletion (with surge, rollingUpdate skips a deleting Pod too).
        bool exists = false;
        for (const auto& k : by_node[node]) {
            const std::string phase = field<std::string>(S.pods[k]["status"], "phase", "");
            const bool terminal = phase == "Failed" || phase == "Succeeded";
            if (deleting(S.pods[k])) {
                exists = exists || !terminal;
                continue;
            }
            exists = true;
            if (phase == "Failed") {
                // failedPodsBackoffKey: the DaemonSet's uid, its observed
                // generation and the node, so a new template or a re-created
                // DaemonSet starts from the first delay again.
                const json st = ds.contains("status") ? ds["status"] : json::object();
                if (!failed_backoff_next(field<std::string>(ds["metadata"], "uid", "") + "/" +
                                         std::to_string(field<std::int64_t>(st, "observedGeneration", 0)) +
                                         "/" + node))
                    continue;  // in back-off: the failed Pod stays, and counts as the node's
                delete_daemon_pod(k, "failed");
            } else {
                alive.push_back(k);
            }
        }
        if (!exists) {
            create_daemon_pod(ns, ds, node, hash);
            continue;
        }
        if (alive.empty()) continue;
        std::string oldest_new, oldest_old;
        for (const auto& k : alive) {  // oldest first
            std::string& slot = !allows_surge || hash_of(S.pods[k]) != hash ? oldest_old : oldest_new;
            if (slot.empty())
                slot = k;
            else
                delete_daemon_pod(k, "a duplicate");
        }
        if (allows_surge && !oldest_new.empty() && !oldest_old.empty()) {
            if (!has_condition(S.pods[oldest_old], "Ready", "True"))
                delete_daemon_pod(oldest_old, "old and not Ready, a new one is there");
            else if (available(S.pods[oldest_new], min_ready))
                delete_daemon_pod(oldest_old, "old, the new one is available");
        }
    }
    by_node = daemon_pods(ds);

    // update.go rollingUpdate, only RollingUpdate.
    if (rolling && valid) {
        std::vector<std::string> to_delete, new_nodes;
        if (max_surge == 0) {
            std::int64_t unavailable = 0;
            std::vector<std::string> allowed, candidates;
            for (const auto& node : run_nodes) {
                std::string np, op;
                if (!updated_pods_on_node(by_node[node], hash, np, op)) {
                    ++unavailable;
                    continue;
                }
                if ((np.empty() && op.empty()) || (!np.empty() && !op.empty()))
                    ++unavailable;  // manage creates or deletes
                else if (!np.empty()) {
                    if (!available(S.pods[np], min_ready)) ++unavailable;
                } else if (!available(S.pods[op], min_ready)) {
                    allowed.push_back(op);  // an unavailable old Pod is replaced at once
                    ++unavailable;
                } else if (unavailable < max_unavailable)
                    candidates.push_back(op);
            }
            const auto room =
                static_cast<std::size_t>(std::max<std::int64_t>(0, max_unavailable - unavailable));
            to_delete = allowed;
            for (std::size_t i = 0; i < std::min(room, candidates.size()); ++i)
                to_delete.push_back(candidates[i]);
        } else {
            std::int64_t surged = 0;
            std::vector<std::string> allowed, candidates;
            for (const auto& node : run_nodes) {
                std::string np, op;
                if (!updated_pods_on_node(by_node[node], hash, np, op) || op.empty()) continue;
                if (np.empty()) {
                    if (!available(S.pods[op], min_ready))
                        allowed.push_back(node);
                    else if (surged < max_surge)
                        candidates.push_back(node);
                } else if (!available(S.pods[np], min_ready)) {
                    ++surged;  // waiting for the new Pod to become available
                } else {
                    to_delete.push_back(op);  // the new one is available: the old goes
                }
            }
            const auto room = static_cast<std::size_t>(std::max<std::int64_t>(0, max_surge - surged));
            new_nodes = allowed;
            for (std::size_t i = 0; i < std::min(room, candidates.size()); ++i)
                new_nodes.push_back(candidates[i]);
        }
        for (const auto& k : to_delete) delete_daemon_pod(k, "rolling update");
        for (const auto& node : new_nodes) create_daemon_pod(ns, ds, node, hash);
        by_node = daemon_pods(ds);
    }

    // daemon_controller.go updateDaemonSetStatus: of each node that should
    // run the DaemonSet, its oldest Pod.
    std::int64_t desired = 0, current = 0, ready = 0, avail = 0, updated = 0, misscheduled = 0;
    for (const auto& [node, keys] : by_node)
        if (!keys.empty() && std::find(run_nodes.begin(), run_nodes.end(), node) == run_nodes.end())
            ++misscheduled;
    for (const auto& node : run_nodes) {
        ++desired;
        const auto& keys = by_node[node];
        if (keys.empty()) continue;
        ++current;
        const json& pod = S.pods[keys.front()];
        if (has_condition(pod, "Ready", "True")) {
            ++ready;
            if (available(pod, min_ready)) ++avail;
        }
        if (hash_of(pod) == hash) ++updated;
    }
    json status = {{"currentNumberScheduled", current},
                   {"desiredNumberScheduled", desired},
                   {"numberMisscheduled", misscheduled},
                   {"numberReady", ready},
                   {"numberAvailable", avail},
                   {"updatedNumberScheduled", updated},
                   {"observedGeneration", ds["metadata"].value("generation", 1)}};
    if (desired - avail > 0) status["numberUnavailable"] = desired - avail;
    if (ds.contains("status") && ds["status"] == status) return;
    ds["status"] = status;  // the status subresource: the generation stays
    record("daemonsets", "MODIFIED", ds);
    ds["metadata"]["resourceVersion"] = std::to_string(S.rv);
}

// node_lifecycle_controller.go tryUpdateNodeHealth: a Node whose Lease was
// not renewed within the grace gets its conditions Unknown (reason
// NodeStatusUnknown); doNoExecuteTaintingPass and doNoScheduleTaintingPass:
// Ready Unknown -> the unreachable taints NoSchedule and NoExecute, Ready
// True -> none (markNodeAsReachable).
void node_health(const std::string& name, json& node, Clock::time_point now) {
    auto lease = S.leases.find("kube-node-lease/" + name);
    const std::string renew =
        lease == S.leases.end() ? "" : field<std::string>(lease->second["spec"], "renewTime", "");
    auto probe = C.probes.find(name);
    if (probe == C.probes.end() || probe->second.first != renew) C.probes[name] = {renew, now};
    const bool stale = now - C.probes[name].second > std::chrono::seconds(C.node_grace_s);
    bool changed = false;
    json& st = node["status"];
    if (stale && !has_condition(node, "Ready", "Unknown") && st.is_object() && st.contains("conditions")) {
        for (auto& c : st["conditions"]) {
            if (field<std::string>(c, "status", "") == "Unknown") continue;
            c["status"] = "Unknown";
            c["reason"] = "NodeStatusUnknown";
            c["message"] = "Kubelet stopped posting node status.";
            c["lastTransitionTime"] = rfc3339_utc(std::time(nullptr));
        }
        changed = true;
    }
    const bool unreachable = has_condition(node, "Ready", "Unknown");
    json taints = json::array();
    for (const auto& t : field<json>(field<json>(node, "spec", json::object()), "taints", json::array()))
        if (field<std::string>(t, "key", "") != "node.kubernetes.io/unreachable") taints.push_back(t);
    if (unreachable)
        for (const char* effect : {"NoSchedule", "NoExecute"})
            taints.push_back({{"key", "node.kubernetes.io/unreachable"},
                              {"effect", effect},
                              {"timeAdded", rfc3339_utc(std::time(nullptr))}});
    const json old = field<json>(field<json>(node, "spec", json::object()), "taints", json::array());
    auto keys = [](const json& ts) {
        std::vector<std::string> out;
        for (const auto& t : ts)
            out.push_back(field<std::string>(t, "key", "") + field<std::string>(t, "effect", ""));
        return out;
    };
    if (keys(old) != keys(taints)) {
        if (taints.empty())
            node["spec"].erase("taints");
        else
            node["spec"]["taints"] = taints;
        changed = true;
    }
    if (!changed) return;
    record("nodes", "MODIFIED", node);
    node["metadata"]["resourceVersion"] = std::to_string(S.rv);
}

void run_controllers() {
    std::unique_lock<std::mutex> l(S.mu);
    while (!S.stopping) {
        const auto now = Clock::now();
        const std::int64_t seen = S.rv;
        std::vector<std::string> nodes;
        for (auto& [name, node] : S.nodes) {
            if (!node.contains("spec") || !node["spec"].is_object()) node["spec"] = json::object();
            node_health(name, node, now);
            nodes.push_back(name);
        }
        for (auto& [key, ds] : S.daemonsets) sync_daemonset(ds, nodes);
        ++S.controller_rounds;
        S.controller_seen_rv = seen;
        // Woken by any write (its own too: a second pass finds nothing to
        // do), at least every 100 ms for the Leases' grace.
        S.changed.wait_for(l, std::chrono::milliseconds(100));
    }
}
