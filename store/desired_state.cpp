// The desired state: DaemonSets, their revision history, the manifest
// files they were read from and the API server's DaemonSets as received.
#include <algorithm>

#include "store/sqlite_store.h"

namespace daemonlet::store {
namespace {

StoredDaemonSet read_daemonset(const sqlite::Query& q) {
    StoredDaemonSet ds;
    ds.namespace_ = q.text(0);
    ds.name = q.text(1);
    ds.source = q.text(2);
    ds.generation = q.int64(3);
    ds.object_json = q.text(4);
    ds.template_hash = q.text(5);
    ds.updated_at_ms = q.int64(6);
    return ds;
}

}  // namespace

Result<bool> SqliteStore::put_daemonset(const StoredDaemonSet& ds) {
    Row row{{ds.namespace_, ds.name},
            {ds.source, ds.generation, ds.object_json, ds.template_hash},
            {ds.updated_at_ms}};
    return put_row("put_daemonset", s_.ds_compare, s_.ds_upsert, row);
}

Result<bool> SqliteStore::delete_daemonset(const std::string& ns, const std::string& name) {
    // Its revisions go with it (ON DELETE CASCADE); its pods stay until stopped.
    return change("delete_daemonset", s_.ds_delete, {ns, name});
}

Result<std::optional<StoredDaemonSet>> SqliteStore::get_daemonset(const std::string& ns,
                                                                  const std::string& name) {
    sqlite::Query q(s_.ds_get);
    q.bind(1, ns).bind(2, name);
    auto found = q.step();
    if (!found) return fail("get_daemonset", found.error());
    if (!found.value()) return std::optional<StoredDaemonSet>();
    return std::optional<StoredDaemonSet>(read_daemonset(q));
}

Result<std::vector<StoredDaemonSet>> SqliteStore::list_daemonsets() {
    sqlite::Query q(s_.ds_list);
    std::vector<StoredDaemonSet> out;
    if (auto st = q.each_row([&](const sqlite::Query& r) { out.push_back(read_daemonset(r)); }); !st)
        return fail("list_daemonsets", st.error());
    return out;
}

// A revision is keyed by its template's hash: putting a known template under
// a new number (an undo) re-numbers it, as upstream bumps the Revision of
// the existing ControllerRevision. Its DaemonSet must be stored first.
Result<bool> SqliteStore::put_revision(const RevisionRecord& rev) {
    Row row{
        {rev.namespace_, rev.daemonset, rev.hash}, {rev.revision, rev.template_json}, {rev.created_at_ms}};
    return put_row("put_revision", s_.rev_compare, s_.rev_upsert, row);
}

Result<std::vector<RevisionRecord>> SqliteStore::list_revisions(const std::string& ns,
                                                                const std::string& ds) {
    sqlite::Query q(s_.rev_list);
    q.bind(1, ns).bind(2, ds);
    std::vector<RevisionRecord> out;
    auto st = q.each_row([&](const sqlite::Query& row) {
        RevisionRecord r;
        r.namespace_ = row.text(0);
        r.daemonset = row.text(1);
        r.revision = row.int64(2);
        r.hash = row.text(3);
        r.template_json = row.text(4);
        r.created_at_ms = row.int64(5);
        out.push_back(std::move(r));
    });
    if (!st) return fail("list_revisions", st.error());
    return out;
}

Result<bool> SqliteStore::put_rollback(const StoredRollback& rb) {
    Row row{{rb.namespace_, rb.name}, {rb.file_hash, rb.revision_hash, rb.template_json}, {rb.created_at_ms}};
    return put_row("put_rollback", s_.rb_compare, s_.rb_upsert, row);
}

Result<std::optional<StoredRollback>> SqliteStore::get_rollback(const std::string& ns,
                                                                const std::string& name) {
    sqlite::Query q(s_.rb_get);
    q.bind(1, ns).bind(2, name);
    auto found = q.step();
    if (!found) return fail("get_rollback", found.error());
    if (!found.value()) return std::optional<StoredRollback>();
    StoredRollback rb{ns, name, q.text(0), q.text(1), q.text(2), q.int64(3)};
    return std::optional<StoredRollback>(std::move(rb));
}

Result<bool> SqliteStore::delete_rollback(const std::string& ns, const std::string& name) {
    return change("delete_rollback", s_.rb_delete, {ns, name});
}

Result<bool> SqliteStore::put_manifest_file(const StoredManifestFile& f) {
    // The text (up to 3 MiB) is bound where it is, not copied into the row.
    Row row{{f.path},
            {std::string_view(f.good_content), std::int64_t{f.broken ? 1 : 0}, f.error},
            {f.updated_at_ms}};
    return put_row("put_manifest_file", s_.mf_compare, s_.mf_upsert, row);
}

Result<bool> SqliteStore::delete_manifest_file(const std::string& path) {
    return change("delete_manifest_file", s_.mf_delete, {path});
}

Result<std::vector<StoredManifestFile>> SqliteStore::list_manifest_files() {
    sqlite::Query q(s_.mf_list);
    std::vector<StoredManifestFile> out;
    auto st = q.each_row([&](const sqlite::Query& r) {
        out.push_back(StoredManifestFile{r.text(0), r.text(1), r.int64(2) != 0, r.text(3), r.int64(4)});
    });
    if (!st) return fail("list_manifest_files", st.error());
    return out;
}

Result<bool> SqliteStore::put_api_daemonset(const StoredApiDaemonSet& ds) {
    Row row{{ds.namespace_, ds.name}, {std::string_view(ds.object_json)}, {}};
    return put_row("put_api_daemonset", s_.api_compare, s_.api_upsert, row);
}

Result<bool> SqliteStore::delete_api_daemonset(const std::string& ns, const std::string& name) {
    return change("delete_api_daemonset", s_.api_delete, {ns, name});
}

Result<std::vector<StoredApiDaemonSet>> SqliteStore::list_api_daemonsets() {
    sqlite::Query q(s_.api_list);
    std::vector<StoredApiDaemonSet> out;
    auto st = q.each_row([&](const sqlite::Query& r) {
        out.push_back(StoredApiDaemonSet{r.text(0), r.text(1), r.text(2)});
    });
    if (!st) return fail("list_api_daemonsets", st.error());
    return out;
}

// Upstream's cleanupHistory (pkg/controller/daemon/update.go): the old
// revisions are all but the current one (stored, and in `in_use`); of them
// len(old) - keep go (revisionHistoryLimit: "the number of old history to
// retain"), oldest first, skipping those pods still run (in `in_use`),
// which count among the old all the same.
Result<int> SqliteStore::prune_revisions(const std::string& ns, const std::string& ds, int keep,
                                         const std::vector<std::int64_t>& in_use) {
    if (keep < 0) return Error{ErrorCode::Invalid, path_ + ": prune_revisions: keep must not be negative"};
    auto doomed = [&]() -> Result<std::vector<std::int64_t>> {
        auto revs = list_revisions(ns, ds);
        if (!revs) return revs.error();
        const std::size_t old_count =
            revs.value().empty() ? 0 : revs.value().size() - 1;  // all but the current
        const auto limit = static_cast<std::size_t>(keep);
        std::vector<std::int64_t> out;
        if (old_count <= limit) return out;
        std::size_t to_kill = old_count - limit;
        for (const RevisionRecord& r : revs.value()) {  // oldest first: list_revisions orders by number
            if (to_kill == 0) break;
            if (std::find(in_use.begin(), in_use.end(), r.revision) != in_use.end()) continue;
            out.push_back(r.revision);
            --to_kill;
        }
        return out;
    };
    // Read first: nothing to prune, nothing written (not even BEGIN).
    auto first = doomed();
    if (!first) return first.error();
    if (first.value().empty()) return 0;

    int deleted = 0;
    auto st = atomically("prune_revisions", [&]() -> Status {
        deleted = 0;
        auto revs = doomed();  // again, under the write lock
        if (!revs) return revs.error();
        for (std::int64_t r : revs.value()) {
            auto gone = change("prune_revisions", s_.rev_delete, {ns, ds, r});
            if (!gone) return gone.error();
            if (gone.value()) ++deleted;
        }
        return Ok{};
    });
    if (!st) return st.error();
    return deleted;
}

}  // namespace daemonlet::store
