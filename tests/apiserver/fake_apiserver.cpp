// A test Kubernetes API server: enough of kube-apiserver for the agent's
// cluster source, on loopback with TLS, and able to misbehave on command.
//
//   fake_apiserver --cert FILE --key FILE [--port N] [--port-file FILE]
//                  [--token T] [--client-ca FILE] [--bookmark-ms N]
//                  [--fault JSON]   (a fault in force from the start, as below)
//                  [--max-token-expiration-seconds N]
//                  [--controllers] [--node-grace-seconds N]  (a DaemonSet and a
//                  node lifecycle controller: fake_controllers.h)
//                  [--failed-pod-backoff-ms N]  (the failed Pods' first back-off, 1000)
//
// Served as kube-apiserver serves them (the agent's dependencies only):
//   GET  /apis/apps/v1[/namespaces/NS]/daemonsets   list (limit/continue,
//        labelSelector, fieldSelector) and watch (watch=1, resourceVersion,
//        allowWatchBookmarks, timeoutSeconds), chunked JSON event lines;
//        a resourceVersion older than the last compaction gets an ERROR
//        event with a 410 Status, an expired continue token a 410.
//   GET  .../namespaces/NS/daemonsets/NAME: one, or 404
//   GET  /api/v1/nodes (the same, for the Node object)
//   GET/POST /api/v1/nodes[/NAME], PATCH /api/v1/nodes/NAME[/status]
//        (application/strategic-merge-patch+json with Node's merge keys:
//        conditions and addresses by type, "$patch": "replace"; or
//        application/merge-patch+json): the status subresource keeps the
//        spec, the main resource keeps the status, as kube-apiserver's
//        node strategies
//   GET  /api, /apis, /api/v1, /apis/GROUP/VERSION: legacy discovery, for kubectl
//   GET/POST /api/v1[/namespaces/NS]/pods (list: labelSelector, fieldSelector
//        spec.nodeName or metadata.name; watch=1 as for DaemonSets, the
//        kubelet's pod source and kubectl delete's wait; POST: generateName
//        gets 5 random characters, uid, status.phase Pending),
//        GET/DELETE .../pods/NAME (DeleteOptions preconditions.uid: 409
//        when it differs; graceful deletion as podStrategy's
//        CheckGracefulDelete: a Pod bound to a node and not terminal gets
//        metadata.deletionTimestamp and deletionGracePeriodSeconds
//        (gracePeriodSeconds, else spec.terminationGracePeriodSeconds, else
//        30; a later DELETE may shorten it), and is removed by a DELETE
//        with gracePeriodSeconds 0 (the kubelet's confirmation); an unbound
//        or terminal Pod, or grace 0, is removed at once),
//        PATCH .../pods/NAME/status (strategic merge: conditions by type,
//        podIPs and hostIPs by ip, other lists replaced; metadata.uid in the
//        patch is a precondition: 409 when it differs; the spec is kept)
//        A pods list asked for as a Table (kubectl get's Accept header) is
//        one, with printPod's columns (kubectl get pods [-o wide])
//   GET  /apis/apps/v1/namespaces/NS/controllerrevisions (list, labelSelector)
//   GET/POST/PUT /apis/coordination.k8s.io/v1/namespaces/NS/leases[/NAME]
//   POST         /api/v1/namespaces/NS/events (409 AlreadyExists for a name the namespace has);
//                PATCH .../events/NAME merges into the Event (404 if none)
//   GET          /api/v1[/namespaces/NS]/events: the Events posted (an EventList)
//   POST /api/v1/namespaces/NS/serviceaccounts/NAME/token: a TokenRequest
//        answered with a JWT-shaped token (header, claims as kube-apiserver
//        sets them, a fake signature) and expirationTimestamp = now +
//        spec.expirationSeconds (default 3600, at least 600 as upstream
//        validates), lowered to --max-token-expiration-seconds N when
//        given (kube-apiserver's --service-account-max-token-expiration;
//        a test sets a few seconds to see a refresh). spec.boundObjectRef
//        (kind Pod only) as TokenREST.Create checks it: a Pod that does
//        not exist gets 404 (pods "x" not found), one running as another
//        service account 400, another uid 409 (Conflict); the token's
//        claims then name it (kubernetes.io.pod.name and .uid)
//   GET/PUT /api/v1/namespaces/NS/{configmaps,secrets}/NAME (PUT: kubectl
//        replace; the objects /_control puts too),
//        and the collections: list (fieldSelector metadata.name, as the
//        kubelet's watch-based manager asks) and watch (watch=1 as for
//        DaemonSets); a /_control PUT or DELETE is an event of the watch
// Authentication: a bearer token (--token) or a client certificate signed
// by --client-ca; anything else gets 401.
//
// Controlled by the tests over the same port, without authentication:
//   PUT    /_control/daemonsets/NS/NAME   (body: the object) create or update
//   DELETE /_control/daemonsets/NS/NAME
//   PUT    /_control/nodes/NAME
//   PUT    /_control/controllerrevisions/NS/NAME  (body: the object, as the
//                                         DaemonSet controller writes it)
//   PUT    /_control/pods/NS/NAME, DELETE /_control/pods/NS/NAME (a Pod as
//                                         the controller or an admin makes it)
//   POST   /_control/events               (body: an Event) held as if posted before
//   POST   /_control/compact              forget the history (410s follow)
//   POST   /_control/end-watches {"gone": false}  end every open watch as its
//                                         timeoutSeconds would (gone: with an
//                                         ERROR 410 event first, as after a
//                                         compaction): the next request meets
//                                         the faults set before
//   POST   /_control/fault  {"match": "list|watch|continue|lease|event|node|any",
//                            "mode": "status|drop|stall|malformed|oversized",
//                            "status": 500, "retryAfter": 3, "count": 1,
//                            "afterEvents": 0, "bytes": 67108864}
//   DELETE /_control/fault                clear every fault (and stalls end)
//   GET    /_control/stats                requests, bytes, leases, events,
//          "requestsByVerb": {"pods/status patch": N, "leases update": N, ...}
//          (kube-apiserver's apiserver_request_total labels), and
//          "wire": per kind of request, the bytes on the TCP connections in
//          each direction (TLS and HTTP framing included, from TCP_INFO), a
//          connection's bytes counted to the kind of request it was serving,
//          "controllers": {"rounds": N, "seenResourceVersion": RV} (--controllers:
//          once RV >= a state's resourceVersion, they have acted on it)
//   GET    /_control/summary              the leases and events, one line each
//   PUT    /_control/{configmaps,secrets}/NS/NAME   (body: the object) create or update
//   DELETE /_control/{configmaps,secrets}/NS/NAME
//   GET    /_control/token-requests       the TokenRequests received (bodies,
//                                         with "namespace" and "serviceAccount")
// A created object keeps a metadata.uid given in the body, so that a test can
// restart the server with the same objects (as etcd keeps them).
//
// Threads: libmicrohttpd's thread per connection; one mutex guards the
// state and a condition variable wakes the watch streams.
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <linux/tcp.h>  // tcp_info with tcpi_bytes_acked and tcpi_bytes_received (Linux 4.1)
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Fault {
    std::string match = "any";
    std::string mode = "status";
    int status = 500;
    int retry_after = 0;
    int count = 1;  // -1: until cleared
    int after_events = 0;
    std::size_t bytes = 64u << 20;
};

struct HistoryEntry {
    std::int64_t rv;
    std::string type;      // ADDED, MODIFIED, DELETED
    std::string resource;  // daemonsets, nodes
    json object;
};

// Bytes on a TCP connection, both directions.
struct Wire {
    std::int64_t sent = 0;
    std::int64_t received = 0;
};

// An open connection: its socket and what it has been counted so far.
struct Conn {
    int fd = -1;
    std::string kind;  // of the request it serves; "" before the first
    Wire counted;
};

struct State {
    std::mutex mu;
    std::condition_variable changed;
    std::int64_t rv = 100;
    std::int64_t oldest_rv = 0;              // watches from before this get 410
    std::map<std::string, json> daemonsets;  // "ns/name"
    std::map<std::string, json> nodes;
    std::map<std::string, json> leases;               // "ns/name"
    std::map<std::string, json> pods;                 // "ns/name"
    std::map<std::string, json> controllerrevisions;  // "ns/name"
    std::map<std::string, std::int64_t> pod_writes;   // create, status, delete
    json last_pod_patch;                              // the body of the last Pod status PATCH
    std::vector<json> deleted_pods;                   // as they were when deleted through the API
    json last_pod_delete;                             // the DeleteOptions of the last Pod DELETE
    std::vector<json> events;
    std::uint64_t event_patches = 0;    // PATCHes of an Event's count
    std::uint64_t event_conflicts = 0;  // POSTs of an Event name already made (409)
    std::vector<HistoryEntry> history;
    std::map<std::string, std::vector<json>> snapshots;  // continue token -> remaining items
    std::int64_t next_token = 1;
    std::vector<Fault> faults;
    std::int64_t fault_generation = 0;
    std::size_t history_base = 0;  // events dropped by compactions
    std::int64_t watch_epoch = 0;  // /_control/end-watches
    bool watch_end_gone = false;
    std::map<std::string, std::int64_t> requests;
    // "RESOURCE[/SUBRESOURCE] VERB", as kube-apiserver's apiserver_request_total
    // labels a request (get, list, watch, create, update, patch, delete).
    std::map<std::string, std::int64_t> requests_by_verb;
    std::int64_t bytes_sent = 0;
    std::map<MHD_Connection*, Conn> conns;
    std::map<std::string, Wire> wire;  // per kind: "list", "watch", "lease", ..., "control"
    std::int64_t uid = 1;
    std::map<std::string, std::int64_t> node_writes;  // create, status, patch
    json last_node_patch;                             // the body of the last Node PATCH
    // --controllers: the rounds completed, and the resourceVersion the last
    // one started from. A round runs under the lock, so once
    // controller_seen_rv >= R the controllers have seen every write up to R
    // and made (and recorded) what they decided about it.
    std::int64_t controller_rounds = 0;
    std::int64_t controller_seen_rv = 0;
    std::atomic<bool> stopping{false};
    std::string token;
    int bookmark_ms = 1000;
    bool client_ca = false;
    std::map<std::string, json> core_objects;  // "configmaps/ns/name", "secrets/ns/name"
    std::int64_t max_token_seconds = 0;        // 0: no maximum
    std::vector<json> token_requests;
};
State S;

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

json status_object(int code, const std::string& reason, const std::string& message) {
    return {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
            {"status", "Failure"}, {"message", message}, {"reason", reason},
            {"code", code}};
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    out.push_back(cur);
    return out;
}

// Equality-based selectors: "k=v", "k==v", "k!=v", "k", "!k", comma-separated.
bool selector_matches(const std::string& sel, const json& labels) {
    if (sel.empty()) return true;
    for (const auto& req : split(sel, ',')) {
        if (req.empty()) continue;
        auto ne = req.find("!=");
        auto eq = req.find('=');
        auto has = [&](const std::string& k) { return labels.is_object() && labels.contains(k); };
        auto val = [&](const std::string& k) {
            return has(k) ? labels[k].get<std::string>() : std::string();
        };
        if (ne != std::string::npos) {
            std::string k = req.substr(0, ne), v = req.substr(ne + 2);
            if (has(k) && val(k) == v) return false;
        } else if (eq != std::string::npos) {
            std::string k = req.substr(0, eq), v = req.substr(req[eq + 1] == '=' ? eq + 2 : eq + 1);
            if (!has(k) || val(k) != v) return false;
        } else if (req[0] == '!') {
            if (has(req.substr(1))) return false;
        } else if (!has(req)) {
            return false;
        }
    }
    return true;
}

bool field_matches(const std::string& sel, const json& obj) {
    for (const auto& req : split(sel, ',')) {
        if (req.empty()) continue;
        auto eq = req.find('=');
        if (eq == std::string::npos) return false;
        std::string k = req.substr(0, eq), v = req.substr(req[eq + 1] == '=' ? eq + 2 : eq + 1);
        const json& md = obj["metadata"];
        if (k == "metadata.name" && md.value("name", "") != v) return false;
        if (k == "metadata.namespace" && md.value("namespace", "") != v) return false;
        if (k == "spec.nodeName" &&
            (!obj.contains("spec") || !obj["spec"].is_object() || obj["spec"].value("nodeName", "") != v))
            return false;
    }
    return true;
}

struct Query {
    std::string resource;    // daemonsets, nodes
    std::string namespace_;  // "" for all
    std::string label_selector, field_selector;
    bool matches(const std::string& res, const json& obj) const {
        if (res != resource) return false;
        const json& md = obj["metadata"];
        if (!namespace_.empty() && md.value("namespace", "") != namespace_) return false;
        return selector_matches(label_selector, md.contains("labels") ? md["labels"] : json::object()) &&
               field_matches(field_selector, obj);
    }
};

// Counts what connection `c` carried since it was last counted, when it
// starts serving a request of `kind` (its headers and body received): what
// it received since is that request's (with the TLS handshake of a new
// connection), what it sent since is the previous request's response (or,
// on a new connection, the handshake: this request's).
void count_wire(MHD_Connection* c, const std::string& kind) {
    auto it = S.conns.find(c);
    if (it == S.conns.end()) return;
    Conn& conn = it->second;
    tcp_info ti{};
    socklen_t len = sizeof ti;
    if (::getsockopt(conn.fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) return;
    const Wire now{static_cast<std::int64_t>(ti.tcpi_bytes_acked),
                   static_cast<std::int64_t>(ti.tcpi_bytes_received)};
    S.wire[conn.kind.empty() ? kind : conn.kind].sent += now.sent - conn.counted.sent;
    S.wire[kind].received += now.received - conn.counted.received;
    conn.counted = now;
    conn.kind = kind;
}

void on_connection(void*, MHD_Connection* c, void**, MHD_ConnectionNotificationCode code) {
    std::lock_guard<std::mutex> l(S.mu);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const auto* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (info) S.conns[c].fd = info->connect_fd;
        return;
    }
    auto it = S.conns.find(c);
    if (it == S.conns.end()) return;
    count_wire(c, it->second.kind);
    S.conns.erase(it);
}

// The first fault matching `what`, consumed; nullptr when none.
std::unique_ptr<Fault> take_fault(const std::string& what) {
    for (auto it = S.faults.begin(); it != S.faults.end(); ++it) {
        if (it->match != what && it->match != "any") continue;
        Fault f = *it;
        if (it->count > 0 && --it->count == 0) S.faults.erase(it);
        return std::make_unique<Fault>(f);
    }
    return nullptr;
}

MHD_Result send(MHD_Connection* c, int code, const std::string& body,
                const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    S.bytes_sent += static_cast<std::int64_t>(body.size());
    MHD_Response* r =
        MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "application/json");
    for (const auto& [k, v] : headers) MHD_add_response_header(r, k.c_str(), v.c_str());
    MHD_Result ret = MHD_queue_response(c, static_cast<unsigned>(code), r);
    MHD_destroy_response(r);
    return ret;
}

MHD_Result send_json(MHD_Connection* c, int code, const json& j) { return send(c, code, j.dump()); }

// A streamed response: produce() fills `out` (or says end/error); it runs on
// the connection's own thread and may block on the condition variable.
struct Stream {
    std::string pending;
    std::size_t offset = 0;
    std::function<ssize_t(std::string& out)> produce;  // 0: data in out; <0: MHD end codes
};

ssize_t stream_reader(void* cls, uint64_t, char* buf, size_t max) {
    auto* s = static_cast<Stream*>(cls);
    while (s->offset >= s->pending.size()) {
        s->pending.clear();
        s->offset = 0;
        ssize_t r = s->produce(s->pending);
        if (r < 0) return r;
    }
    size_t n = std::min(max, s->pending.size() - s->offset);
    std::memcpy(buf, s->pending.data() + s->offset, n);
    s->offset += n;
    {
        std::lock_guard<std::mutex> l(S.mu);
        S.bytes_sent += static_cast<std::int64_t>(n);
    }
    return static_cast<ssize_t>(n);
}

MHD_Result send_stream(MHD_Connection* c, std::function<ssize_t(std::string&)> produce) {
    auto* s = new Stream;
    s->produce = std::move(produce);
    MHD_Response* r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_reader, s,
                                                        [](void* p) { delete static_cast<Stream*>(p); });
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

// Blocks (the connection's thread) until the faults change or the server stops.
ssize_t stall(std::int64_t generation) {
    std::unique_lock<std::mutex> l(S.mu);
    S.changed.wait(l, [&] { return S.fault_generation != generation || S.stopping.load(); });
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

// Applies a fault to a request; returns true when the fault answered it.
bool apply_fault(MHD_Connection* c, const Fault& f, MHD_Result& ret) {
    if (f.mode == "status") {
        std::vector<std::pair<std::string, std::string>> h;
        if (f.retry_after > 0) h.emplace_back("Retry-After", std::to_string(f.retry_after));
        std::string reason = f.status == 403   ? "Forbidden"
                             : f.status == 429 ? "TooManyRequests"
                                               : "InternalError";
        ret = send(c, f.status, status_object(f.status, reason, "injected by the test").dump(), h);
        return true;
    }
    if (f.mode == "malformed") {
        ret = send(c, 200, "{\"kind\": \"DaemonSetList\", \"items\": [{\"metadata\": ");
        return true;
    }
    if (f.mode == "oversized") {
        auto left = std::make_shared<std::size_t>(f.bytes);
        auto first = std::make_shared<bool>(true);
        ret = send_stream(c, [left, first](std::string& out) -> ssize_t {
            if (*left == 0) return MHD_CONTENT_READER_END_OF_STREAM;
            std::size_t n = std::min<std::size_t>(*left, 64 * 1024);
            out.assign(n, ' ');
            if (*first) out.replace(0, 27, "{\"kind\":\"DaemonSetList\",\"x\"");
            *first = false;
            *left -= n;
            return 0;
        });
        return true;
    }
    if (f.mode == "stall") {
        std::int64_t gen = S.fault_generation;
        ret = send_stream(c, [gen](std::string&) -> ssize_t { return stall(gen); });
        return true;
    }
    if (f.mode == "drop") {
        // Half a response, then the connection is cut.
        ret = send_stream(c, [sent = false](std::string& out) mutable -> ssize_t {
            if (sent) return MHD_CONTENT_READER_END_WITH_ERROR;
            sent = true;
            out = "{\"kind\": \"DaemonSetList\", \"metadata\": {\"resourceVersion\": \"1\"}, \"items\": [";
            return 0;
        });
        return true;
    }
    return false;
}

// Strategic merge patch (apimachinery strategicpatch) for the Node fields
// the agent and kubectl patch: maps merged, null deletes, lists of
// conditions and addresses merged by type ("$patch": "replace" replaces,
// "$patch": "delete" removes an element), other lists replaced.
void strategic_merge(json& target, const json& patch) {
    if (!patch.is_object()) {
        target = patch;
        return;
    }
    if (!target.is_object()) target = json::object();
    for (auto it = patch.begin(); it != patch.end(); ++it) {
        const std::string& k = it.key();
        if (k.rfind("$setElementOrder/", 0) == 0 || k == "$patch" || k.rfind("$retainKeys", 0) == 0) continue;
        const json& v = it.value();
        if (v.is_null()) {
            target.erase(k);
        } else if (v.is_object()) {
            strategic_merge(target[k], v);
        } else if (v.is_array() &&
                   (k == "conditions" || k == "addresses" || k == "podIPs" || k == "hostIPs")) {
            // The merge key: type for conditions and addresses, ip for podIPs and hostIPs.
            const char* mk = k == "podIPs" || k == "hostIPs" ? "ip" : "type";
            bool replace = false;
            for (const json& e : v)
                if (e.is_object() && e.value("$patch", "") == "replace") replace = true;
            json& list = target[k];
            if (replace || !list.is_array()) list = json::array();
            for (const json& e : v) {
                if (!e.is_object() || e.value("$patch", "") == "replace") continue;
                if (replace) {  // the list as sent, two InternalIPs included
                    list.push_back(e);
                    continue;
                }
                bool found = false;
                for (auto li = list.begin(); li != list.end(); ++li) {
                    if (!li->is_object() || li->value(mk, "") != e.value(mk, "")) continue;
                    found = true;
                    if (e.value("$patch", "") == "delete")
                        list.erase(li);
                    else
                        strategic_merge(*li, e);
                    break;
                }
                if (!found && e.value("$patch", "") != "delete") list.push_back(e);
            }
        } else {
            target[k] = v;
        }
    }
}

// Applies a PATCH body to `obj` by the request's Content-Type (strategic
// merge or JSON merge patch); false for another type (then 415).
bool apply_patch(MHD_Connection* c, json& obj, const json& patch, std::string& type) {
    const char* ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    type = ct ? ct : "";
    if (type.rfind("application/strategic-merge-patch+json", 0) == 0)
        strategic_merge(obj, patch);
    else if (type.rfind("application/merge-patch+json", 0) == 0)
        obj.merge_patch(patch);
    else
        return false;
    return true;
}

// Legacy discovery, enough for kubectl to find its resources.
json discovery(const std::vector<std::string>& p) {
    auto resource = [](const char* name, const char* kind, bool namespaced, std::vector<std::string> verbs) {
        return json{{"name", name},
                    {"singularName", ""},
                    {"namespaced", namespaced},
                    {"kind", kind},
                    {"verbs", verbs}};
    };
    const std::vector<std::string> all = {"create", "delete", "get", "list", "patch", "update", "watch"};
    if (p.size() == 2 && p[1] == "api")
        return {{"kind", "APIVersions"},
                {"versions", {"v1"}},
                {"serverAddressByClientCIDRs", {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", ""}}}}};
    if (p.size() == 2 && p[1] == "apis") {
        json groups = json::array();
        for (const char* g : {"apps", "coordination.k8s.io"})
            groups.push_back(
                {{"name", g},
                 {"versions", {{{"groupVersion", std::string(g) + "/v1"}, {"version", "v1"}}}},
                 {"preferredVersion", {{"groupVersion", std::string(g) + "/v1"}, {"version", "v1"}}}});
        return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
    }
    json resources = json::array();
    std::string gv;
    if (p.size() == 3 && p[1] == "api" && p[2] == "v1") {
        gv = "v1";
        resources = {resource("nodes", "Node", false, all),
                     resource("nodes/status", "Node", false, {"get", "patch"}),
                     resource("pods", "Pod", true, all),
                     resource("pods/status", "Pod", true, {"get", "patch"}),
                     resource("events", "Event", true, all),
                     resource("configmaps", "ConfigMap", true, all),
                     resource("secrets", "Secret", true, all)};
    } else if (p.size() == 4 && p[1] == "apis" && p[2] == "apps" && p[3] == "v1") {
        gv = "apps/v1";
        resources = {resource("daemonsets", "DaemonSet", true, all),
                     resource("controllerrevisions", "ControllerRevision", true, all)};
        resources[0]["shortNames"] = {"ds"};  // kubectl rollout status ds/NAME
    } else if (p.size() == 4 && p[1] == "apis" && p[2] == "coordination.k8s.io" && p[3] == "v1") {
        gv = "coordination.k8s.io/v1";
        resources = {resource("leases", "Lease", true, all)};
    } else {
        return nullptr;
    }
    return {
        {"kind", "APIResourceList"}, {"apiVersion", "v1"}, {"groupVersion", gv}, {"resources", resources}};
}

json list_items(const Query& q) {
    json items = json::array();
    const bool core_object = q.resource == "configmaps" || q.resource == "secrets";
    const auto& src = q.resource == "nodes"  ? S.nodes
                      : q.resource == "pods" ? S.pods
                      : core_object          ? S.core_objects
                                             : S.daemonsets;
    for (const auto& [key, obj] : src)
        if ((!core_object || key.rfind(q.resource + "/", 0) == 0) && q.matches(q.resource, obj)) {
            json o = obj;
            o.erase("kind");  // as kube-apiserver: list items carry no kind/apiVersion
            o.erase("apiVersion");
            items.push_back(o);
        }
    return items;
}

MHD_Result serve_list(MHD_Connection* c, const Query& q, std::int64_t limit, const std::string& cont) {
    std::vector<json> items;
    if (!cont.empty()) {
        auto it = S.snapshots.find(cont);
        if (it == S.snapshots.end())
            return send_json(
                c, 410,
                status_object(410, "Expired",
                              "The provided continue parameter is too old to display a consistent "
                              "list result. You can start a new list without the continue parameter."));
        items = std::move(it->second);
        S.snapshots.erase(it);
    } else {
        for (auto& i : list_items(q)) items.push_back(i);
    }
    const bool core = q.resource != "daemonsets";
    json list = {{"kind", q.resource == "nodes"        ? "NodeList"
                          : q.resource == "configmaps" ? "ConfigMapList"
                          : q.resource == "secrets"    ? "SecretList"
                                                       : "DaemonSetList"},
                 {"apiVersion", core ? "v1" : "apps/v1"},
                 {"metadata", {{"resourceVersion", std::to_string(S.rv)}}},
                 {"items", json::array()}};
    std::size_t n =
        limit > 0 ? std::min<std::size_t>(static_cast<std::size_t>(limit), items.size()) : items.size();
    for (std::size_t i = 0; i < n; ++i) list["items"].push_back(items[i]);
    if (n < items.size()) {
        std::string token = "t" + std::to_string(S.next_token++);
        S.snapshots[token] = std::vector<json>(items.begin() + static_cast<std::ptrdiff_t>(n), items.end());
        list["metadata"]["continue"] = token;
        list["metadata"]["remainingItemCount"] = items.size() - n;
    }
    return send_json(c, 200, list);
}

json bookmark(const Query& q) {
    const bool core = q.resource != "daemonsets";
    return {{"type", "BOOKMARK"},
            {"object",
             {{"kind", q.resource == "nodes"        ? "Node"
                       : q.resource == "pods"       ? "Pod"
                       : q.resource == "configmaps" ? "ConfigMap"
                       : q.resource == "secrets"    ? "Secret"
                                                    : "DaemonSet"},
              {"apiVersion", core ? "v1" : "apps/v1"},
              {"metadata", {{"resourceVersion", std::to_string(S.rv)}}}}}};
}

MHD_Result serve_watch(MHD_Connection* c, const Query& q, const std::string& rv_param, bool bookmarks,
                       std::int64_t timeout_s, std::unique_ptr<Fault> fault) {
    struct W {
        Query q;
        std::int64_t from = 0;
        std::size_t next = 0;  // index into history
        std::vector<json> initial;
        Clock::time_point deadline, next_bookmark;
        bool bookmarks = false;
        bool gone = false;
        int sent = 0;
        int drop_after = -1;
        std::int64_t epoch = 0;
    };
    auto w = std::make_shared<W>();
    w->q = q;
    w->bookmarks = bookmarks;
    w->epoch = S.watch_epoch;
    w->deadline = Clock::now() + std::chrono::seconds(timeout_s > 0 ? timeout_s : 1800);
    w->next_bookmark = Clock::now() + std::chrono::milliseconds(S.bookmark_ms);
    if (fault && fault->mode == "drop") w->drop_after = fault->after_events;
    if (rv_param.empty() || rv_param == "0") {
        // "Any": the current state as ADDED events, then changes.
        for (auto& o : list_items(q)) w->initial.push_back({{"type", "ADDED"}, {"object", o}});
        w->from = S.rv;
    } else {
        w->from = std::atoll(rv_param.c_str());
        if (w->from < S.oldest_rv) w->gone = true;
    }
    // w->next counts from the first event ever recorded (S.history_base is
    // how many a compaction dropped), so that an open watch goes on after a
    // compaction, as kube-apiserver's do: compaction only refuses new ones.
    w->next = S.history_base + S.history.size();
    for (std::size_t i = 0; i < S.history.size(); ++i)
        if (S.history[i].rv > w->from) {
            w->next = S.history_base + i;
            break;
        }
    return send_stream(c, [w](std::string& out) -> ssize_t {
        std::unique_lock<std::mutex> l(S.mu);
        for (;;) {
            if (S.stopping) return MHD_CONTENT_READER_END_OF_STREAM;
            if (w->drop_after >= 0 && w->sent >= w->drop_after) return MHD_CONTENT_READER_END_WITH_ERROR;
            if (w->epoch != S.watch_epoch) {
                w->epoch = S.watch_epoch;
                if (!S.watch_end_gone) return MHD_CONTENT_READER_END_OF_STREAM;
                w->gone = true;
            }
            if (w->gone) {
                w->gone = false;
                w->deadline = Clock::now();  // the stream ends after this event
                out = json{{"type", "ERROR"},
                           {"object", status_object(410, "Expired",
                                                    "too old resource version: " + std::to_string(w->from) +
                                                        " (" + std::to_string(S.oldest_rv) + ")")}}
                          .dump() +
                      "\n";
                return 0;
            }
            if (!w->initial.empty()) {
                out = w->initial.front().dump() + "\n";
                w->initial.erase(w->initial.begin());
                ++w->sent;
                return 0;
            }
            w->next = std::max(w->next, S.history_base);
            while (w->next < S.history_base + S.history.size()) {
                const HistoryEntry& h = S.history[w->next++ - S.history_base];
                if (!w->q.matches(h.resource, h.object)) continue;
                out = json{{"type", h.type}, {"object", h.object}}.dump() + "\n";
                ++w->sent;
                return 0;
            }
            auto now = Clock::now();
            if (now >= w->deadline) return MHD_CONTENT_READER_END_OF_STREAM;
            if (w->bookmarks && now >= w->next_bookmark) {
                w->next_bookmark = now + std::chrono::milliseconds(S.bookmark_ms);
                out = bookmark(w->q).dump() + "\n";
                return 0;
            }
            auto until = w->bookmarks ? std::min(w->deadline, w->next_bookmark) : w->deadline;
            S.changed.wait_until(l, until);
        }
    });
}

void record(const std::string& resource, const std::string& type, json obj) {
    ++S.rv;
    obj["metadata"]["resourceVersion"] = std::to_string(S.rv);
    S.history.push_back({S.rv, type, resource, obj});
    S.changed.notify_all();
}

json stamp(json obj, const json* old, const char* api_version, const char* kind) {
    obj["apiVersion"] = api_version;
    obj["kind"] = kind;
    auto& md = obj["metadata"];
    if (old) {
        md["uid"] = (*old)["metadata"]["uid"];
        md["creationTimestamp"] = (*old)["metadata"]["creationTimestamp"];
        std::int64_t gen = (*old)["metadata"].value("generation", 1);
        md["generation"] = (*old)["spec"] == obj["spec"] ? gen : gen + 1;
    } else {
        if (!md.contains("uid") || !md["uid"].is_string())
            md["uid"] = "00000000-0000-4000-8000-" + std::to_string(100000000000 + S.uid++);
        md["creationTimestamp"] = "2026-01-01T00:00:00Z";
        md["generation"] = 1;
    }
    return obj;
}

Fault parse_fault(const json& in) {
    Fault f;
    f.match = in.value("match", f.match);
    f.mode = in.value("mode", f.mode);
    f.status = in.value("status", f.status);
    f.retry_after = in.value("retryAfter", f.retry_after);
    f.count = in.value("count", f.count);
    f.after_events = in.value("afterEvents", f.after_events);
    f.bytes = in.value("bytes", f.bytes);
    return f;
}

// base64url without padding, as a JWT's parts are.
std::string base64url(const std::string& in) {
    static const char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8 | (unsigned char)in[i + 2];
        out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], k[v & 63]};
    }
    if (i + 1 == in.size()) {
        unsigned v = (unsigned char)in[i] << 16;
        out += {k[v >> 18], k[(v >> 12) & 63]};
    } else if (i + 2 == in.size()) {
        unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8;
        out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63]};
    }
    return out;
}

std::string rfc3339_utc(std::time_t t) {
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// POST .../serviceaccounts/NAME/token (kube-apiserver's TokenREST.Create).
MHD_Result serve_token_request(MHD_Connection* c, const std::string& ns, const std::string& sa, json in) {
    ++S.requests["token"];
    if (!in.contains("spec") || !in["spec"].is_object()) in["spec"] = json::object();
    json& spec = in["spec"];
    std::int64_t exp = spec.value("expirationSeconds", std::int64_t{3600});
    if (exp < 600)
        return send_json(
            c, 422,
            status_object(422, "Invalid",
                          "TokenRequest.authentication.k8s.io \"" + sa +
                              "\" is invalid: spec.expirationSeconds: Invalid value: " + std::to_string(exp) +
                              ": may not specify a duration less than 10 minutes"));
    // TokenREST.Create's boundObjectRef: a Pod of the namespace, running as
    // that service account, of that uid when one is given (the kubelet
    // gives it); put into the token's private claims (serviceaccount.Claims).
    json pod_claim;
    if (spec.contains("boundObjectRef") && spec["boundObjectRef"].is_object()) {
        const json& ref = spec["boundObjectRef"];
        const std::string kind = ref.value("kind", ""), api_version = ref.value("apiVersion", "");
        const std::string ref_name = ref.value("name", ""), ref_uid = ref.value("uid", "");
        if (kind != "Pod" || api_version != "v1")
            // The fake binds Pods only (kube-apiserver: Secrets and Nodes too).
            return send_json(
                c, 400,
                status_object(400, "BadRequest",
                              "cannot bind token to object of type " +
                                  (api_version.empty() ? std::string("/, Kind=") : api_version + ", Kind=") +
                                  kind));
        auto pod = S.pods.find(ns + "/" + ref_name);
        if (pod == S.pods.end())
            return send_json(c, 404, status_object(404, "NotFound", "pods \"" + ref_name + "\" not found"));
        const json& pod_spec = pod->second.contains("spec") ? pod->second["spec"] : json::object();
        if (pod_spec.value("serviceAccountName", "") != sa)
            return send_json(c, 400,
                             status_object(400, "BadRequest",
                                           "cannot bind token for serviceaccount \"" + sa +
                                               "\" to pod running with different serviceaccount name."));
        const std::string uid = pod->second["metadata"].value("uid", "");
        if (!ref_uid.empty() && ref_uid != uid)
            return send_json(c, 409,
                             status_object(409, "Conflict",
                                           "Operation cannot be fulfilled on Pod \"" + ref_name +
                                               "\": the UID in the bound object reference (" + ref_uid +
                                               ") does not match the UID in record. The object might have "
                                               "been deleted and then recreated"));
        pod_claim = {{"name", ref_name}, {"uid", uid}};
    }
    if (S.max_token_seconds > 0 && exp > S.max_token_seconds) exp = S.max_token_seconds;
    spec["expirationSeconds"] = exp;
    if (!spec.contains("audiences") || !spec["audiences"].is_array() || spec["audiences"].empty())
        spec["audiences"] = json::array({"https://kubernetes.default.svc.cluster.local"});
    json logged = in;
    logged["namespace"] = ns;
    logged["serviceAccount"] = sa;
    S.token_requests.push_back(logged);
    const std::time_t now = std::time(nullptr);
    json claims = {{"aud", spec["audiences"]},
                   {"exp", now + exp},
                   {"iat", now},
                   {"nbf", now},
                   {"iss", "https://kubernetes.default.svc.cluster.local"},
                   {"jti", std::to_string(S.token_requests.size())},
                   {"sub", "system:serviceaccount:" + ns + ":" + sa},
                   {"kubernetes.io", {{"namespace", ns}, {"serviceaccount", {{"name", sa}}}}}};
    if (!pod_claim.is_null()) claims["kubernetes.io"]["pod"] = pod_claim;
    const std::string token = base64url(json{{"alg", "RS256"}, {"kid", "fake"}}.dump()) + "." +
                              base64url(claims.dump()) + "." +
                              base64url("fake-signature-" + std::to_string(S.token_requests.size()));
    json out = {{"apiVersion", "authentication.k8s.io/v1"},
                {"kind", "TokenRequest"},
                {"metadata", {{"name", sa}, {"namespace", ns}, {"creationTimestamp", rfc3339_utc(now)}}},
                {"spec", spec},
                {"status", {{"token", token}, {"expirationTimestamp", rfc3339_utc(now + exp)}}}};
    return send_json(c, 201, out);
}

// Creates or updates a ConfigMap or Secret (the /_control PUT, and the
// API's PUT that kubectl replace sends): an event of their watches.
json put_core_object(const std::string& resource, const std::string& ns, const std::string& name, json in) {
    const std::string key = resource + "/" + ns + "/" + name;
    auto it = S.core_objects.find(key);
    if (!in["metadata"].is_object()) in["metadata"] = json::object();
    in["metadata"]["namespace"] = ns;
    in["metadata"]["name"] = name;
    in["metadata"].erase("resourceVersion");
    // An update keeps the object's uid, as kube-apiserver's does.
    if (it != S.core_objects.end() && !in["metadata"].contains("uid"))
        in["metadata"]["uid"] = it->second["metadata"]["uid"];
    json obj = stamp(in, nullptr, "v1", resource == "secrets" ? "Secret" : "ConfigMap");
    record(resource, it == S.core_objects.end() ? "ADDED" : "MODIFIED", obj);
    obj["metadata"]["resourceVersion"] = std::to_string(S.rv);
    S.core_objects[key] = obj;
    return obj;
}

MHD_Result control(MHD_Connection* c, const std::string& method, const std::vector<std::string>& p,
                   const std::string& body) {
    json in = body.empty() ? json::object() : json::parse(body, nullptr, false);
    if (in.is_discarded()) return send_json(c, 400, status_object(400, "BadRequest", "body is not JSON"));
    if (p.size() == 5 && (p[2] == "configmaps" || p[2] == "secrets") &&
        (method == "PUT" || method == "DELETE")) {
        const std::string key = p[2] + "/" + p[3] + "/" + p[4];
        auto it = S.core_objects.find(key);
        if (method == "DELETE") {
            if (it != S.core_objects.end()) {
                record(p[2], "DELETED", it->second);
                S.core_objects.erase(it);
            }
            return send_json(c, 200, json::object());
        }
        return send_json(c, 200, put_core_object(p[2], p[3], p[4], std::move(in)));
    }
    if (p.size() == 3 && p[2] == "token-requests") return send_json(c, 200, S.token_requests);
    if (((p.size() == 5 && p[2] == "daemonsets") || (p.size() == 4 && p[2] == "nodes")) &&
        (method == "PUT" || method == "DELETE")) {
        bool ds = p[2] == "daemonsets";
        std::string key = ds ? p[3] + "/" + p[4] : p[3];
        auto& map = ds ? S.daemonsets : S.nodes;
        auto it = map.find(key);
        if (method == "DELETE") {
            if (it == map.end()) return send_json(c, 404, status_object(404, "NotFound", key));
            json obj = it->second;
            map.erase(it);
            record(p[2], "DELETED", obj);
            return send_json(c, 200, obj);
        }
        if (ds) {
            in["metadata"]["namespace"] = p[3];
            in["metadata"]["name"] = p[4];
        } else {
            in["metadata"]["name"] = p[3];
        }
        json obj = stamp(in, it == map.end() ? nullptr : &it->second, ds ? "apps/v1" : "v1",
                         ds ? "DaemonSet" : "Node");
        bool created = it == map.end();
        record(p[2], created ? "ADDED" : "MODIFIED", obj);
        obj["metadata"]["resourceVersion"] = std::to_string(S.rv);
        map[key] = obj;
        return send_json(c, created ? 201 : 200, obj);
    }
    if (p.size() == 5 && (p[2] == "controllerrevisions" || p[2] == "pods") &&
        (method == "PUT" || method == "DELETE")) {
        auto& map = p[2] == "pods" ? S.pods : S.controllerrevisions;
        const std::string key = p[3] + "/" + p[4];
        auto it = map.find(key);
        if (method == "DELETE") {
            if (it == map.end()) return send_json(c, 404, status_object(404, "NotFound", key));
            json obj = it->second;
            map.erase(it);
            if (p[2] == "pods") record("pods", "DELETED", obj);
            return send_json(c, 200, obj);
        }
        in["metadata"]["namespace"] = p[3];
        in["metadata"]["name"] = p[4];
        json obj = stamp(in, it == map.end() ? nullptr : &it->second, p[2] == "pods" ? "v1" : "apps/v1",
                         p[2] == "pods" ? "Pod" : "ControllerRevision");
        const bool created = it == map.end();
        if (p[2] == "pods") {
            record("pods", created ? "ADDED" : "MODIFIED", obj);
            obj["metadata"]["resourceVersion"] = std::to_string(S.rv);
        } else {
            obj["metadata"]["resourceVersion"] = std::to_string(++S.rv);
        }
        map[key] = obj;
        return send_json(c, created ? 201 : 200, obj);
    }
    if (p.size() == 3 && p[2] == "events" && method == "POST") {
        // An Event the server holds already (as if posted before a restart
        // of the agent, its answer lost).
        in["_method"] = "control";
        S.events.push_back(std::move(in));
        return send_json(c, 201, json::object());
    }
    if (p.size() == 3 && p[2] == "compact" && method == "POST") {
        S.history_base += S.history.size();
        S.history.clear();
        S.snapshots.clear();
        S.oldest_rv = S.rv + 1;
        S.changed.notify_all();
        return send_json(c, 200, {{"oldestResourceVersion", S.oldest_rv}});
    }
    if (p.size() == 3 && p[2] == "end-watches" && method == "POST") {
        ++S.watch_epoch;
        S.watch_end_gone = in.value("gone", false);
        S.changed.notify_all();
        return send_json(c, 200, json::object());
    }
    if (p.size() == 3 && p[2] == "fault") {
        if (method == "DELETE") {
            S.faults.clear();
        } else {
            S.faults.push_back(parse_fault(in));
        }
        ++S.fault_generation;
        S.changed.notify_all();
        return send_json(c, 200, {{"faults", S.faults.size()}});
    }
    if (p.size() == 3 && p[2] == "stats") {
        json leases = json::object();
        for (const auto& [k, v] : S.leases) leases[k] = v;
        for (auto& [conn, state] : S.conns)
            if (!state.kind.empty()) count_wire(conn, state.kind);
        json wire = json::object();
        for (const auto& [kind, w] : S.wire) wire[kind] = {{"sent", w.sent}, {"received", w.received}};
        const json controllers = {{"rounds", S.controller_rounds},
                                  {"seenResourceVersion", S.controller_seen_rv}};
        return send_json(c, 200,
                         {{"requests", S.requests},
                          {"requestsByVerb", S.requests_by_verb},
                          {"bytesSent", S.bytes_sent},
                          {"wire", wire},
                          {"resourceVersion", S.rv},
                          {"leases", leases},
                          {"nodeWrites", S.node_writes},
                          {"lastNodePatch", S.last_node_patch},
                          {"podWrites", S.pod_writes},
                          {"lastPodPatch", S.last_pod_patch},
                          {"deletedPods", S.deleted_pods},
                          {"lastPodDelete", S.last_pod_delete},
                          {"events", S.events},
                          {"eventPatches", S.event_patches},
                          {"eventConflicts", S.event_conflicts},
                          {"controllers", controllers}});
    }
    if (p.size() == 3 && p[2] == "summary") {
        // What the agent told the cluster, one line each, for people (the demo).
        std::string out;
        auto str = [](const json& j, const char* k) {
            return j.is_object() ? j.value(k, std::string()) : "";
        };
        for (const auto& [k, v] : S.leases)
            out += "Lease " + k + ": holder " + str(v["spec"], "holderIdentity") + ", renewTime " +
                   str(v["spec"], "renewTime") + "\n";
        for (const auto& e : S.events)
            out += "Event " + str(e, "type") + " " + str(e, "reason") + " on " +
                   str(e["involvedObject"], "kind") + " " + str(e["involvedObject"], "namespace") + "/" +
                   str(e["involvedObject"], "name") + " (" + str(e, "firstTimestamp") +
                   "): " + str(e, "message") + "\n";
        return send(c, 200, out);
    }
    return send_json(c, 404, status_object(404, "NotFound", "no such control endpoint"));
}

bool authenticated(MHD_Connection* c) {
    if (!S.token.empty()) {
        const char* auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        if (auth && std::string(auth) == "Bearer " + S.token) return true;
    }
    if (S.client_ca) {
        const auto* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        if (info && info->tls_session) {
            auto session = static_cast<gnutls_session_t>(info->tls_session);
            unsigned int status = 0;
            unsigned int n = 0;
            if (gnutls_certificate_get_peers(session, &n) && n > 0 &&
                gnutls_certificate_verify_peers2(session, &status) == 0 && status == 0)
                return true;
        }
    }
    return S.token.empty() && !S.client_ca;
}

std::string arg(MHD_Connection* c, const char* name) {
    const char* v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
    return v ? v : "";
}

// Pods as kube-apiserver's table convertor prints them for `kubectl get pods`
// (pkg/printers/internalversion printPod, the columns of -o wide): READY
// ready/total containers, STATUS the phase or the reason of the last
// container that waits or terminated ("Terminating" while being deleted),
// RESTARTS the sum with "(Xs ago)" of the last termination, AGE, IP, NODE.
std::string since(const std::string& rfc3339) {
    std::tm tm{};
    if (!strptime(rfc3339.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm)) return "<unknown>";
    const std::int64_t s =
        static_cast<std::int64_t>(std::time(nullptr)) - static_cast<std::int64_t>(timegm(&tm));
    if (s < 0) return "<invalid>";
    if (s < 120) return std::to_string(s) + "s";
    if (s < 3600) return std::to_string(s / 60) + "m";
    if (s < 86400) return std::to_string(s / 3600) + "h";
    return std::to_string(s / 86400) + "d";
}

json pod_table(const json& items) {
    auto col = [](const char* name, const char* type, int priority) {
        return json{
            {"name", name}, {"type", type}, {"format", ""}, {"description", ""}, {"priority", priority}};
    };
    json cols = {col("Name", "string", 0),
                 col("Ready", "string", 0),
                 col("Status", "string", 0),
                 col("Restarts", "string", 0),
                 col("Age", "string", 0),
                 col("IP", "string", 1),
                 col("Node", "string", 1),
                 col("Nominated Node", "string", 1),
                 col("Readiness Gates", "string", 1)};
    cols[0]["format"] = "name";
    json rows = json::array();
    for (const json& pod : items) {
        const json& st = pod.contains("status") ? pod["status"] : json::object();
        std::string reason = st.value("reason", st.value("phase", ""));
        int ready = 0, total = 0, restarts = 0;
        std::string last_finished;
        bool running = false;
        const json statuses = st.contains("containerStatuses") ? st["containerStatuses"] : json::array();
        for (auto it = statuses.rbegin(); it != statuses.rend(); ++it) {
            const json& cs = *it;
            ++total;
            restarts += cs.value("restartCount", 0);
            const json& state = cs.contains("state") ? cs["state"] : json::object();
            if (cs.contains("lastState") && cs["lastState"].contains("terminated"))
                last_finished =
                    std::max(last_finished, cs["lastState"]["terminated"].value("finishedAt", ""));
            if (state.contains("waiting") && state["waiting"].value("reason", "") != "") {
                reason = state["waiting"]["reason"];
            } else if (state.contains("terminated")) {
                reason = state["terminated"].value("reason", "");
                if (reason.empty())
                    reason = "ExitCode:" + std::to_string(state["terminated"].value("exitCode", 0));
            } else if (state.contains("running") && cs.value("ready", false)) {
                running = true;
                ++ready;
            }
        }
        if (reason == "Completed" && running) reason = "Running";
        if (pod["metadata"].contains("deletionTimestamp")) reason = "Terminating";
        std::string restart_cell = std::to_string(restarts);
        if (restarts > 0 && !last_finished.empty()) restart_cell += " (" + since(last_finished) + " ago)";
        auto or_none = [](const std::string& v) { return v.empty() ? std::string("<none>") : v; };
        json meta = pod["metadata"];
        rows.push_back(
            {{"cells",
              {meta.value("name", ""), std::to_string(ready) + "/" + std::to_string(total), reason,
               restart_cell, since(meta.value("creationTimestamp", "")), or_none(st.value("podIP", "")),
               or_none(pod.contains("spec") ? pod["spec"].value("nodeName", "") : ""), "<none>", "<none>"}},
             {"object",
              {{"kind", "PartialObjectMetadata"}, {"apiVersion", "meta.k8s.io/v1"}, {"metadata", meta}}}});
    }
    return {{"kind", "Table"},
            {"apiVersion", "meta.k8s.io/v1"},
            {"metadata", {{"resourceVersion", std::to_string(S.rv)}}},
            {"columnDefinitions", cols},
            {"rows", rows}};
}

// podStrategy.CheckGracefulDelete: the grace a DELETE gives a Pod (0:
// removed at once). An unbound Pod or a terminal one goes at once; else the
// options' gracePeriodSeconds, else the spec's terminationGracePeriodSeconds
// (default 30).
std::int64_t pod_delete_grace(const json& pod, const json& options) {
    const json& spec = pod.contains("spec") && pod["spec"].is_object() ? pod["spec"] : json::object();
    const json& st = pod.contains("status") && pod["status"].is_object() ? pod["status"] : json::object();
    if (spec.value("nodeName", "").empty()) return 0;
    const std::string phase = st.value("phase", "");
    if (phase == "Failed" || phase == "Succeeded") return 0;
    if (options.contains("gracePeriodSeconds") && options["gracePeriodSeconds"].is_number_integer())
        return std::max<std::int64_t>(0, options["gracePeriodSeconds"].get<std::int64_t>());
    if (spec.contains("terminationGracePeriodSeconds") && spec["terminationGracePeriodSeconds"].is_number())
        return spec["terminationGracePeriodSeconds"].get<std::int64_t>();
    return 30;
}

// Pods and ControllerRevisions, as kube-apiserver serves what the agent's
// Pods need (Pods with watch and graceful deletion, tests/apiserver header).
// names.SimpleNameGenerator: PREFIX and 5 random characters of
// "bcdfghjklmnpqrstvwxz2456789", a name no Pod of NS has.
std::string generate_name(const std::string& ns, const std::string& prefix) {
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    static unsigned seed = static_cast<unsigned>(Clock::now().time_since_epoch().count());
    std::string n;
    do {
        n = prefix;
        for (int k = 0; k < 5; ++k) n += alphabet[rand_r(&seed) % (sizeof alphabet - 1)];
    } while (S.pods.count(ns + "/" + n));
    return n;
}

// Stores a new Pod `in` (metadata.name and namespace set, the request
// checked): stamped, created now, Pending (podStrategy.PrepareForCreate).
json create_pod(json in) {
    json obj = stamp(std::move(in), nullptr, "v1", "Pod");
    obj["metadata"]["creationTimestamp"] = rfc3339_utc(std::time(nullptr));  // AGE in kubectl's table
    obj["status"] = {{"phase", "Pending"}};
    record("pods", "ADDED", obj);
    obj["metadata"]["resourceVersion"] = std::to_string(S.rv);
    S.pods[obj["metadata"].value("namespace", "") + "/" + obj["metadata"].value("name", "")] = obj;
    ++S.pod_writes["create"];
    return obj;
}

// Deletes the Pod at `it` with DeleteOptions `options` (preconditions
// checked), as podStrategy's CheckGracefulDelete: marked when graceful,
// else removed. Returns the Pod as the DELETE answers it.
json delete_pod(std::map<std::string, json>::iterator it, const json& options) {
    json obj = it->second;
    const std::int64_t grace = pod_delete_grace(obj, options);
    json& md = obj["metadata"];
    if (grace > 0 && (!md.contains("deletionGracePeriodSeconds") ||
                      grace < md["deletionGracePeriodSeconds"].get<std::int64_t>())) {
        // Graceful: marked, the kubelet stops its containers and confirms.
        md["deletionTimestamp"] = rfc3339_utc(std::time(nullptr) + grace);
        md["deletionGracePeriodSeconds"] = grace;
        record("pods", "MODIFIED", obj);
        obj["metadata"]["resourceVersion"] = std::to_string(S.rv);
        it->second = obj;
        ++S.pod_writes["graceful"];
        return obj;
    }
    if (grace > 0) return obj;  // being deleted already, with a shorter grace
    S.pods.erase(it);
    record("pods", "DELETED", obj);
    ++S.pod_writes["delete"];
    S.deleted_pods.push_back(obj);
    return obj;
}

MHD_Result serve_pods(MHD_Connection* c, const std::string& method, const Query& q, const std::string& name,
                      const std::string& sub, const std::string& body) {
    const bool pods = q.resource == "pods";
    auto& map = pods ? S.pods : S.controllerrevisions;
    const char* kind = pods ? "Pod" : "ControllerRevision";
    const char* api_version = pods ? "v1" : "apps/v1";
    auto not_found = [&](const std::string& n) {
        return send_json(c, 404, status_object(404, "NotFound", q.resource + " \"" + n + "\" not found"));
    };
    if (method == "GET" && name.empty()) {
        Query lq = q;
        lq.label_selector = arg(c, "labelSelector");
        lq.field_selector = arg(c, "fieldSelector");
        if (pods && (arg(c, "watch") == "1" || arg(c, "watch") == "true"))
            return serve_watch(c, lq, arg(c, "resourceVersion"), arg(c, "allowWatchBookmarks") == "true",
                               std::atoll(arg(c, "timeoutSeconds").c_str()), nullptr);
        json items = json::array();
        for (const auto& [key, obj] : map)
            if (lq.matches(q.resource, obj)) {
                json o = obj;
                o.erase("kind");
                o.erase("apiVersion");
                items.push_back(o);
            }
        const char* accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
        if (pods && accept && std::string(accept).find("as=Table") != std::string::npos)
            return send_json(c, 200, pod_table(items));
        return send_json(c, 200,
                         {{"kind", std::string(kind) + "List"},
                          {"apiVersion", api_version},
                          {"metadata", {{"resourceVersion", std::to_string(S.rv)}}},
                          {"items", items}});
    }
    if (!pods)
        return send_json(c, 405, status_object(405, "MethodNotAllowed", method + " is not supported here"));
    const std::string key = q.namespace_ + "/" + name;
    auto it = map.find(key);
    if (method == "GET") return it == map.end() ? not_found(name) : send_json(c, 200, it->second);
    json in = body.empty() ? json::object() : json::parse(body, nullptr, false);
    if (in.is_discarded() || !in.is_object())
        return send_json(c, 400, status_object(400, "BadRequest", "the body is not a JSON object"));
    if (method == "POST" && name.empty()) {
        if (q.namespace_.empty()) return send_json(c, 404, status_object(404, "NotFound", "no namespace"));
        json& md = in["metadata"];
        std::string n = md.value("name", "");
        if (n.empty() && md.value("generateName", "") != "")
            n = generate_name(q.namespace_, md["generateName"].get<std::string>());
        if (n.empty())
            return send_json(
                c, 422,
                status_object(422, "Invalid",
                              "metadata.name: Required value: name or generateName is required"));
        if (map.count(q.namespace_ + "/" + n))
            return send_json(c, 409,
                             status_object(409, "AlreadyExists", "pods \"" + n + "\" already exists"));
        md["name"] = n;
        md["namespace"] = q.namespace_;
        md.erase("uid");
        // The ServiceAccount admission plugin's default; a mirror pod may
        // not name one and gets none.
        if (pods && !(md.contains("annotations") && md["annotations"].is_object() &&
                      md["annotations"].contains("kubernetes.io/config.mirror"))) {
            json& pod_spec = in["spec"];
            if (!pod_spec.is_object()) pod_spec = json::object();
            if (pod_spec.value("serviceAccountName", "").empty()) pod_spec["serviceAccountName"] = "default";
        }
        return send_json(c, 201, create_pod(std::move(in)));
    }
    if (it == map.end()) return not_found(name);
    const std::string uid = it->second["metadata"].value("uid", "");
    if (method == "PATCH" && sub == "status") {
        if (in.contains("metadata") && in["metadata"].is_object() && in["metadata"].contains("uid") &&
            in["metadata"]["uid"] != uid)
            return send_json(
                c, 409,
                status_object(409, "Conflict",
                              "Precondition failed: UID in precondition: " + in["metadata"]["uid"].dump() +
                                  ", UID in object meta: " + uid));
        json obj = it->second;
        std::string type;
        if (!apply_patch(c, obj, in, type))
            return send_json(c, 415,
                             status_object(415, "UnsupportedMediaType", "unknown patch type: " + type));
        // podStatusStrategy: only the status changes.
        json out = it->second;
        out["status"] = obj.contains("status") ? obj["status"] : json::object();
        record("pods", "MODIFIED", out);
        out["metadata"]["resourceVersion"] = std::to_string(S.rv);
        it->second = out;
        ++S.pod_writes["status"];
        S.last_pod_patch = in;
        return send_json(c, 200, out);
    }
    if (method == "DELETE") {
        if (in.contains("preconditions") && in["preconditions"].is_object() &&
            in["preconditions"].contains("uid") && in["preconditions"]["uid"] != uid)
            return send_json(
                c, 409,
                status_object(409, "Conflict",
                              "Precondition failed: UID in precondition: " +
                                  in["preconditions"]["uid"].dump() + ", UID in object meta: " + uid));
        S.last_pod_delete = in;
        return send_json(c, 200, delete_pod(it, in));
    }
    return send_json(c, 405, status_object(405, "MethodNotAllowed", method + " is not supported here"));
}

MHD_Result api(MHD_Connection* c, const std::string& method, const std::vector<std::string>& p,
               const std::string& body) {
    // p: "", "apis", "apps", "v1", ["namespaces", NS], "daemonsets"
    Query q;
    std::size_t i = 0;
    if (p.size() >= 4 && p[1] == "apis" && p[2] == "apps" && p[3] == "v1")
        i = 4;
    else if (p.size() >= 3 && p[1] == "api" && p[2] == "v1")
        i = 3;
    else if (p.size() >= 4 && p[1] == "apis" && p[2] == "coordination.k8s.io" && p[3] == "v1")
        i = 4;
    else if (p.size() >= 4 && p[1] == "apis" && p[2] == "events.k8s.io" && p[3] == "v1")
        i = 4;
    else
        return send_json(c, 404,
                         status_object(404, "NotFound", "the server could not find the requested resource"));
    if (i + 1 < p.size() && p[i] == "namespaces") {
        q.namespace_ = p[i + 1];
        i += 2;
    }
    if (i >= p.size()) return send_json(c, 404, status_object(404, "NotFound", "no resource"));
    q.resource = p[i];
    std::string name = i + 1 < p.size() ? p[i + 1] : "";
    std::string what = q.resource == "daemonsets"
                           ? (arg(c, "watch") == "1" || arg(c, "watch") == "true" ? "watch"
                              : !arg(c, "continue").empty()                       ? "continue"
                                                                                  : "list")
                       : q.resource == "nodes"               ? "node"
                       : q.resource == "leases"              ? "lease"
                       : q.resource == "events"              ? "event"
                       : q.resource == "pods"                ? "pod"
                       : q.resource == "controllerrevisions" ? "revision"
                                                             : "other";
    ++S.requests[what];
    ++S.requests["total"];
    {
        const bool watch = arg(c, "watch") == "1" || arg(c, "watch") == "true";
        const std::string verb = method == "GET"      ? (watch          ? "watch"
                                                         : name.empty() ? "list"
                                                                        : "get")
                                 : method == "POST"   ? "create"
                                 : method == "PUT"    ? "update"
                                 : method == "PATCH"  ? "patch"
                                 : method == "DELETE" ? "delete"
                                                      : method;
        const std::string sub = i + 2 < p.size() ? "/" + p[i + 2] : "";
        ++S.requests_by_verb[q.resource + sub + " " + verb];
    }
    count_wire(c, what);
    auto fault = take_fault(what);
    MHD_Result ret;
    if (fault && !(fault->mode == "drop" && what == "watch") && apply_fault(c, *fault, ret)) return ret;

    if (q.resource == "pods" || q.resource == "controllerrevisions")
        return serve_pods(c, method, q, name, i + 2 < p.size() ? p[i + 2] : "", body);
    if (q.resource == "nodes" && !name.empty() && method == "GET") {
        auto it = S.nodes.find(name);
        if (it == S.nodes.end())
            return send_json(c, 404, status_object(404, "NotFound", "nodes \"" + name + "\" not found"));
        return send_json(c, 200, it->second);
    }
    if (q.resource == "daemonsets" && !name.empty() && method == "GET") {
        auto it = S.daemonsets.find(q.namespace_ + "/" + name);
        if (it == S.daemonsets.end())
            return send_json(c, 404,
                             status_object(404, "NotFound", "daemonsets.apps \"" + name + "\" not found"));
        return send_json(c, 200, it->second);
    }
    if ((q.resource == "daemonsets" || q.resource == "nodes" ||
         ((q.resource == "configmaps" || q.resource == "secrets") && name.empty())) &&
        method == "GET") {
        q.label_selector = arg(c, "labelSelector");
        q.field_selector = arg(c, "fieldSelector");
        if (arg(c, "watch") == "1" || arg(c, "watch") == "true")
            return serve_watch(c, q, arg(c, "resourceVersion"), arg(c, "allowWatchBookmarks") == "true",
                               std::atoll(arg(c, "timeoutSeconds").c_str()), std::move(fault));
        return serve_list(c, q, std::atoll(arg(c, "limit").c_str()), arg(c, "continue"));
    }
    if (q.resource == "events" && method == "GET" && name.empty()) {
        // The Events posted, as `kubectl get events -o json` lists them.
        json list = {{"kind", "EventList"},
                     {"apiVersion", "v1"},
                     {"metadata", {{"resourceVersion", std::to_string(S.rv)}}},
                     {"items", json::array()}};
        for (const auto& e : S.events) {
            if (!e.is_object() || !e.contains("metadata") || !e["metadata"].is_object() ||
                (!q.namespace_.empty() && e["metadata"].value("namespace", "") != q.namespace_))
                continue;
            json o = e;
            o.erase("_method");
            o.erase("kind");
            o.erase("apiVersion");
            list["items"].push_back(o);
        }
        return send_json(c, 200, list);
    }
    json in = body.empty() ? json::object() : json::parse(body, nullptr, false);
    if (in.is_discarded() || !in.is_object())
        return send_json(c, 400, status_object(400, "BadRequest", "the body is not a JSON object"));
    if (q.resource == "serviceaccounts" && method == "POST" && !name.empty() && i + 2 < p.size() &&
        p[i + 2] == "token")
        return serve_token_request(c, q.namespace_, name, in);
    if ((q.resource == "configmaps" || q.resource == "secrets") && method == "PUT" && !name.empty() &&
        !q.namespace_.empty() && i + 2 == p.size())
        return send_json(c, 200, put_core_object(q.resource, q.namespace_, name, std::move(in)));
    if ((q.resource == "configmaps" || q.resource == "secrets") && method == "GET" && !name.empty()) {
        ++S.requests[q.resource];
        auto it = S.core_objects.find(q.resource + "/" + q.namespace_ + "/" + name);
        if (it == S.core_objects.end())
            return send_json(c, 404,
                             status_object(404, "NotFound", q.resource + " \"" + name + "\" not found"));
        return send_json(c, 200, it->second);
    }
    if (q.resource == "nodes" && method == "POST" && name.empty()) {
        const std::string n = in["metadata"].value("name", "");
        if (n.empty())
            return send_json(c, 422, status_object(422, "Invalid", "metadata.name: Required value"));
        if (S.nodes.count(n))
            return send_json(c, 409,
                             status_object(409, "AlreadyExists", "nodes \"" + n + "\" already exists"));
        json obj = stamp(in, nullptr, "v1", "Node");
        record("nodes", "ADDED", obj);
        obj["metadata"]["resourceVersion"] = std::to_string(S.rv);
        S.nodes[n] = obj;
        ++S.node_writes["create"];
        return send_json(c, 201, obj);
    }
    if (q.resource == "nodes" && method == "PATCH" && !name.empty()) {
        const bool status = i + 2 < p.size() && p[i + 2] == "status";
        auto it = S.nodes.find(name);
        if (it == S.nodes.end())
            return send_json(c, 404, status_object(404, "NotFound", "nodes \"" + name + "\" not found"));
        json obj = it->second;
        std::string type;
        if (!apply_patch(c, obj, in, type))
            return send_json(c, 415,
                             status_object(415, "UnsupportedMediaType",
                                           "the body of the request was in an unknown format: " + type));
        // nodeStatusStrategy keeps the spec; nodeStrategy keeps the status.
        if (status)
            obj["spec"] = it->second.contains("spec") ? it->second["spec"] : json::object();
        else if (it->second.contains("status"))
            obj["status"] = it->second["status"];
        obj["metadata"]["name"] = name;
        obj["metadata"]["uid"] = it->second["metadata"]["uid"];
        record("nodes", "MODIFIED", obj);
        obj["metadata"]["resourceVersion"] = std::to_string(S.rv);
        it->second = obj;
        ++S.node_writes[status ? "status" : "patch"];
        S.last_node_patch = in;
        return send_json(c, 200, obj);
    }
    if (q.resource == "leases") {
        std::string key = q.namespace_ + "/" + (name.empty() ? in["metadata"].value("name", "") : name);
        auto it = S.leases.find(key);
        if (method == "GET") {
            if (it == S.leases.end())
                return send_json(c, 404, status_object(404, "NotFound", "leases \"" + name + "\" not found"));
            return send_json(c, 200, it->second);
        }
        if (method == "POST" && it != S.leases.end())
            return send_json(c, 409,
                             status_object(409, "AlreadyExists", "leases \"" + key + "\" already exists"));
        if (method == "PUT" && it == S.leases.end())
            return send_json(c, 404, status_object(404, "NotFound", "leases \"" + name + "\" not found"));
        ++S.rv;
        in["metadata"]["resourceVersion"] = std::to_string(S.rv);
        S.leases[key] = in;
        return send_json(c, method == "POST" ? 201 : 200, in);
    }
    if (q.resource == "events" && method == "PATCH" && !name.empty()) {
        // The recorder's count update: merged into the Event of that name
        // (a strategic-merge patch of scalars is a merge), 404 when none.
        for (auto& e : S.events) {
            if (!e.is_object() || !e.contains("metadata") || !e["metadata"].is_object() ||
                e["metadata"].value("name", "") != name ||
                e["metadata"].value("namespace", "") != q.namespace_)
                continue;
            if (!in.is_object()) return send_json(c, 400, status_object(400, "BadRequest", "not an object"));
            for (auto& [k, v] : in.items())
                if (k != "metadata") e[k] = v;
            ++S.rv;
            e["metadata"]["resourceVersion"] = std::to_string(S.rv);
            ++S.event_patches;
            return send_json(c, 200, e);
        }
        return send_json(c, 404, status_object(404, "NotFound", "events \"" + name + "\" not found"));
    }
    if (q.resource == "events" && (method == "POST" || method == "PUT")) {
        // A POST of a name the namespace has: 409 AlreadyExists, as the
        // registry's create answers (what tells an agent that an Event it
        // sends again after a restart was made before).
        const std::string n = in.is_object() && in.contains("metadata") && in["metadata"].is_object()
                                  ? in["metadata"].value("name", "")
                                  : "";
        if (method == "POST" && !n.empty())
            for (const auto& e : S.events)
                if (e.is_object() && e.contains("metadata") && e["metadata"].is_object() &&
                    e["metadata"].value("name", "") == n &&
                    e["metadata"].value("namespace", "") == q.namespace_) {
                    ++S.event_conflicts;
                    return send_json(
                        c, 409, status_object(409, "AlreadyExists", "events \"" + n + "\" already exists"));
                }
        in["_method"] = method;
        S.events.push_back(in);
        return send_json(c, method == "POST" ? 201 : 200, in);
    }
    return send_json(c, 405, status_object(405, "MethodNotAllowed", method + " is not supported here"));
}

struct Upload {
    std::string body;
};

MHD_Result handler(void*, MHD_Connection* c, const char* url, const char* method, const char*,
                   const char* upload, size_t* upload_size, void** con_cls) {
    if (!*con_cls) {
        *con_cls = new Upload;
        return MHD_YES;
    }
    auto* up = static_cast<Upload*>(*con_cls);
    if (*upload_size) {
        if (up->body.size() + *upload_size > (8u << 20)) return MHD_NO;
        up->body.append(upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    std::vector<std::string> p = split(url, '/');
    std::unique_lock<std::mutex> l(S.mu);
    if (p.size() >= 2 && p[1] == "_control") {
        count_wire(c, "control");
        return control(c, method, p, up->body);
    }
    if (!authenticated(c)) return send_json(c, 401, status_object(401, "Unauthorized", "Unauthorized"));
    if (std::string(method) == "GET")
        if (json d = discovery(p); !d.is_null()) return send_json(c, 200, d);
    return api(c, method, p, up->body);
}

#include "fake_controllers.h"

}  // namespace

int main(int argc, char** argv) {
    std::string cert, key, client_ca, port_file;
    int port = 0;
    bool controllers = false;
    for (int i = 1; i < argc; i += 2) {
        std::string a = argv[i];
        if (a == "--controllers") {
            controllers = true;
            --i;
            continue;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "fake_apiserver: %s needs a value\n", a.c_str());
            return 2;
        }
        std::string v = argv[i + 1];
        if (a == "--node-grace-seconds")
            C.node_grace_s = std::atoll(v.c_str());
        else if (a == "--failed-pod-backoff-ms")
            C.failed_backoff_initial = std::chrono::milliseconds(std::atoll(v.c_str()));
        else if (a == "--cert")
            cert = read_file(v);
        else if (a == "--key")
            key = read_file(v);
        else if (a == "--client-ca")
            client_ca = read_file(v);
        else if (a == "--port")
            port = std::atoi(v.c_str());
        else if (a == "--port-file")
            port_file = v;
        else if (a == "--token")
            S.token = v;
        else if (a == "--max-token-expiration-seconds")
            S.max_token_seconds = std::atoll(v.c_str());
        else if (a == "--bookmark-ms")
            S.bookmark_ms = std::atoi(v.c_str());
        else if (a == "--fault") {
            json f = json::parse(v, nullptr, false);
            if (!f.is_object()) {
                std::fprintf(stderr, "fake_apiserver: --fault: not a JSON object: %s\n", v.c_str());
                return 2;
            }
            S.faults.push_back(parse_fault(f));
        } else {
            std::fprintf(stderr, "fake_apiserver: unknown argument %s\n", a.c_str());
            return 2;
        }
    }
    if (cert.empty() || key.empty()) {
        std::fprintf(stderr, "fake_apiserver: --cert and --key are required\n");
        return 2;
    }
    S.client_ca = !client_ca.empty();
    std::signal(SIGPIPE, SIG_IGN);
    // Blocked before any thread starts, so that only sigwait() sees them.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, nullptr);
    unsigned flags =
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS | MHD_USE_ERROR_LOG;
    MHD_Daemon* d;
    if (S.client_ca)
        d = MHD_start_daemon(
            flags, static_cast<uint16_t>(port), nullptr, nullptr, handler, nullptr, MHD_OPTION_HTTPS_MEM_KEY,
            key.c_str(), MHD_OPTION_HTTPS_MEM_CERT, cert.c_str(), MHD_OPTION_HTTPS_MEM_TRUST,
            client_ca.c_str(), MHD_OPTION_NOTIFY_COMPLETED,
            +[](void*, MHD_Connection*, void** cls, MHD_RequestTerminationCode) {
                delete static_cast<Upload*>(*cls);
                *cls = nullptr;
            },
            nullptr, MHD_OPTION_NOTIFY_CONNECTION, on_connection, nullptr, MHD_OPTION_END);
    else
        d = MHD_start_daemon(
            flags, static_cast<uint16_t>(port), nullptr, nullptr, handler, nullptr, MHD_OPTION_HTTPS_MEM_KEY,
            key.c_str(), MHD_OPTION_HTTPS_MEM_CERT, cert.c_str(), MHD_OPTION_NOTIFY_COMPLETED,
            +[](void*, MHD_Connection*, void** cls, MHD_RequestTerminationCode) {
                delete static_cast<Upload*>(*cls);
                *cls = nullptr;
            },
            nullptr, MHD_OPTION_NOTIFY_CONNECTION, on_connection, nullptr, MHD_OPTION_END);
    if (!d) {
        std::fprintf(stderr, "fake_apiserver: cannot listen on port %d\n", port);
        return 1;
    }
    const auto* info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    int bound = info ? info->port : port;
    if (!port_file.empty()) {
        std::ofstream(port_file + ".tmp") << bound << "\n";
        std::rename((port_file + ".tmp").c_str(), port_file.c_str());
    }
    std::printf("fake_apiserver listening on https://127.0.0.1:%d\n", bound);
    std::fflush(stdout);
    std::thread controller_thread;
    if (controllers) controller_thread = std::thread(run_controllers);
    int sig = 0;
    sigwait(&set, &sig);
    S.stopping = true;
    {
        std::lock_guard<std::mutex> l(S.mu);
        ++S.fault_generation;
        S.changed.notify_all();
    }
    if (controller_thread.joinable()) controller_thread.join();
    MHD_stop_daemon(d);
    return 0;
}
