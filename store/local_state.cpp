// The local state: pods, this node's labels and taints, recent events.
#include "store/codec.h"
#include "store/sqlite_store.h"

namespace daemonlet::store {
namespace {

// Events kept: per object (kubectl describe shows the recent ones) and in
// all, since pods come and go under new names and each may leave some.
constexpr std::int64_t kEventsPerObject = 50;
constexpr std::int64_t kEventsTotal = 2000;

}  // namespace

Result<bool> SqliteStore::put_pod(const PodRecord& pod) {
    Row row{{pod.uid},
            {pod.name, pod.namespace_, pod.daemonset, pod.revision_hash, pod.revision,
             std::string(to_string(pod.phase)), pod.created_at_ms, std::int64_t{pod.deleting ? 1 : 0},
             codec::encode_containers(pod.containers, pod.init_containers, pod.deletion_grace_seconds),
             codec::encode_strings(pod.pod_ips), pod.source, pod.reason, pod.message},
            {}};
    return put_row("put_pod", s_.pod_compare, s_.pod_upsert, row);
}

Result<bool> SqliteStore::delete_pod(const std::string& uid) {
    return change("delete_pod", s_.pod_delete, {uid});
}

Result<std::vector<PodRecord>> SqliteStore::list_pods() {
    sqlite::Query q(s_.pod_list);
    std::vector<PodRecord> out;
    for (;;) {
        auto row = q.step();
        if (!row) return fail("list_pods", row.error());
        if (!row.value()) return out;
        PodRecord p;
        p.uid = q.text(0);
        p.name = q.text(1);
        p.namespace_ = q.text(2);
        p.daemonset = q.text(3);
        p.revision_hash = q.text(4);
        p.revision = q.int64(5);
        auto phase = codec::decode_phase(q.text(6));
        p.created_at_ms = q.int64(7);
        p.deleting = q.int64(8) != 0;
        p.source = q.text(11);
        p.reason = q.text(12);
        p.message = q.text(13);
        auto containers = codec::decode_containers(q.text(9), &p.init_containers, &p.deletion_grace_seconds);
        auto ips = codec::decode_strings("pod_ips_json", q.text(10));
        if (!phase)
            return fail("list_pods",
                        Error{ErrorCode::Corrupt, "pod " + p.uid + ": " + phase.error().message});
        if (!containers)
            return fail("list_pods",
                        Error{ErrorCode::Corrupt, "pod " + p.uid + ": " + containers.error().message});
        if (!ips)
            return fail("list_pods", Error{ErrorCode::Corrupt, "pod " + p.uid + ": " + ips.error().message});
        p.phase = phase.value();
        p.pod_ips = std::move(ips).value();
        p.containers = std::move(containers).value();
        out.push_back(std::move(p));
    }
}

Result<bool> SqliteStore::put_node(const StoredNode& node) {
    Row row{{},
            {codec::encode_labels(node.labels), codec::encode_taints(node.taints),
             std::int64_t{node.unschedulable ? 1 : 0}},
            {}};
    return put_row("put_node", s_.node_compare, s_.node_upsert, row);
}

Result<std::optional<StoredNode>> SqliteStore::get_node() {
    sqlite::Query q(s_.node_compare);
    auto found = q.step();
    if (!found) return fail("get_node", found.error());
    if (!found.value()) return std::optional<StoredNode>();
    auto labels = codec::decode_labels(q.text(0));
    if (!labels) return fail("get_node", labels.error());
    auto taints = codec::decode_taints(q.text(1));
    if (!taints) return fail("get_node", taints.error());
    StoredNode node;
    node.labels = std::move(labels).value();
    node.taints = std::move(taints).value();
    node.unschedulable = q.int64(2) != 0;
    return std::optional<StoredNode>(std::move(node));
}

// Always writes (an event is news): the insert and the trimming in one
// transaction. ev.id is ignored; the store assigns ids in order.
Result<bool> SqliteStore::add_event(const EventRecord& ev) {
    const char* op = "add_event";
    auto st = atomically(op, [&]() -> Status {
        auto added = change(op, s_.event_insert,
                            {ev.namespace_, ev.object, ev.type, ev.reason, ev.message, ev.time_ms});
        if (!added) return added.error();
        auto trimmed = change(op, s_.event_trim_object, {ev.namespace_, ev.object, kEventsPerObject});
        if (!trimmed) return trimmed.error();
        auto capped = change(op, s_.event_trim_all, {kEventsTotal});
        if (!capped) return capped.error();
        return Ok{};
    });
    if (!st) return st.error();
    return true;
}

// The newest `limit` events (all kept when limit <= 0), oldest first as
// kubectl describe lists them. An empty namespace or object matches any.
Result<std::vector<EventRecord>> SqliteStore::list_events(const std::string& ns, const std::string& object,
                                                          int limit) {
    sqlite::Query q(s_.event_list);
    q.bind(1, ns).bind(2, object).bind(3, std::int64_t{limit > 0 ? limit : -1});
    std::vector<EventRecord> out;
    auto st = q.each_row([&](const sqlite::Query& row) {
        EventRecord ev;
        ev.id = row.int64(0);
        ev.namespace_ = row.text(1);
        ev.object = row.text(2);
        ev.type = row.text(3);
        ev.reason = row.text(4);
        ev.message = row.text(5);
        ev.time_ms = row.int64(6);
        out.push_back(std::move(ev));
    });
    if (!st) return fail("list_events", st.error());
    return std::vector<EventRecord>(out.rbegin(), out.rend());
}

Result<bool> SqliteStore::rebase_wall_times(std::int64_t from_ms, std::int64_t to_ms, std::int64_t delta_ms) {
    const char* op = "rebase_wall_times";
    bool any = false;
    auto st = atomically(op, [&]() -> Status {
        any = false;
        for (sqlite::Statement* s :
             {&s_.rebase_ds, &s_.rebase_rev, &s_.rebase_rb, &s_.rebase_event, &s_.rebase_mf}) {
            auto changed = change(op, *s, {from_ms, to_ms, delta_ms});
            if (!changed) return changed.error();
            any = any || changed.value();
        }
        return Ok{};
    });
    if (!st) return st.error();
    return any;
}

}  // namespace daemonlet::store
