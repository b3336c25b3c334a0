// The Rollbacks component (rollbacks.h): rollout undo over a manifest
// file's template.
#include "agent/daemon/rollbacks.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/decode.h"
#include "core/pod.h"
#include "core/template_hash.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

Error revision_not_found(std::int64_t r) {
    return Error{ErrorCode::Invalid,
                 "unable to find specified revision " + std::to_string(r) + " in history"};
}

}  // namespace

// Called for each DaemonSet as read from its file, before it is stored.
void Rollbacks::apply(DesiredDaemonSets::Desired& d) {
    const auto& md = d.ds().metadata;
    const std::string key = md.namespace_ + "/" + md.name;
    d.file_hash = hex64(fnv1a64(d.ds().object.dump()));
    d.rolled_back = false;
    auto rb = store_.get_rollback(md.namespace_, md.name);
    if (!rb.ok()) {
        log(Level::Err, "store: " + rb.error().message + "; using the file's template");
        return;
    }
    if (!rb.value()) return;
    const store::StoredRollback& r = *rb.value();
    auto drop = [&](const std::string& why) {
        log(Level::Notice, "DaemonSet " + key + ": " + why);
        if (auto w = store_.delete_rollback(md.namespace_, md.name); !w.ok())
            log(Level::Err, "store: " + w.error().message);
    };
    if (r.file_hash != d.file_hash) {
        drop(d.source.describe() + " changed since the rollback to template " + r.revision_hash +
             ": the file's template is in force again");
        host_.record_rollback_event(md.namespace_, md.name, "Normal", "RollbackSuperseded",
                                    "Manifest " + d.source.describe() +
                                        " changed: its template replaces the rollback to " + r.revision_hash);
        return;
    }
    Json obj = d.ds().object;
    obj["spec"]["template"] = Json::parse(r.template_json, nullptr, false);
    DaemonSet restored;
    if (obj["spec"]["template"].is_discarded() || !decode_daemonset(obj, restored).empty()) {
        drop("the rollback's stored template does not decode; using the file's");
        return;
    }
    d.object = std::make_shared<const DaemonSet>(std::move(restored));
    d.hash = template_hash(d.ds().object["spec"]["template"], d.ds().status.collision_count);
    d.rolled_back = true;
}

// The answer says the rollback holds across reboots: it is given once the
// store's worker has flushed the write (a power cut right after an answer
// given before the flush undid it, tests/systemd/vm_powercut.sh), and the
// loop serves everything else meanwhile (an SD card's flush takes hundreds
// of milliseconds). A flush that fails is logged and said; the rollback is
// in force all the same.
void Rollbacks::undo(const std::string& ns, const std::string& name, std::int64_t to_revision, Reply reply) {
    bool wrote = false;
    auto r = undo_in_memory(ns, name, to_revision, &wrote);
    if (!r.ok() || !wrote) return reply(std::move(r));
    auto answer = [reply, result = r.value()](Status flushed) {
        if (flushed.ok()) return reply(result);
        log(Level::Err, "store: " + flushed.error().message);
        reply(result + " (in force, but not on disk yet: " + flushed.error().message + ")");
    };
    // On the store's worker; without it (it could not start, or the
    // stateDir takes no writes: then flush() says so), on the loop.
    store_.flush_then(answer);
}

// kubectl's DaemonSetRollbacker.Rollback.
Result<std::string> Rollbacks::undo_in_memory(const std::string& ns, const std::string& name,
                                              std::int64_t to_revision, bool* wrote) {
    const std::string key = ns + "/" + name;
    const DesiredDaemonSets::Desired* in_force = host_.daemonset_in_force(key);
    if (!in_force) return Error{ErrorCode::K8sNotFound, "daemonsets.apps \"" + name + "\" not found"};
    if (to_revision < 0) return revision_not_found(to_revision);
    auto revs = store_.list_revisions(ns, name);
    if (!revs.ok()) return revs.error();
    auto history = std::move(revs).value();
    std::sort(history.begin(), history.end(),
              [](const RevisionRecord& a, const RevisionRecord& b) { return a.revision < b.revision; });
    if (to_revision == 0 && history.size() <= 1)
        return Error{ErrorCode::Invalid, "no last revision to roll back to"};
    const RevisionRecord* to = nullptr;
    if (to_revision == 0) {
        to = &history[history.size() - 2];  // findHistory: the second largest
    } else {
        for (const auto& h : history)
            if (h.revision == to_revision) to = &h;
    }
    if (!to) return revision_not_found(to_revision);
    const DesiredDaemonSets::Desired& d = *in_force;
    if (to->hash == d.hash)
        return "skipped rollback (current template already matches revision " + std::to_string(to_revision) +
               ")";

    // The file's own template: undoing to it is removing the rollback.
    std::string file_template_hash;
    if (auto ds = host_.manifest_daemonset(d.source.path, ns, name))
        file_template_hash = template_hash(ds->object["spec"]["template"], ds->status.collision_count);
    const std::int64_t restored = to->revision;
    const std::string restored_hash = to->hash;
    if (restored_hash == file_template_hash) {
        if (auto w = store_.delete_rollback(ns, name); !w.ok()) return w.error();
    } else {
        store::StoredRollback rb{ns, name, d.file_hash, restored_hash, to->template_json, clock_.wall_ms()};
        if (auto w = store_.put_rollback(rb); !w.ok()) return w.error();
    }
    *wrote = true;
    const std::string held = restored_hash == file_template_hash
                                 ? "the manifest file's own template"
                                 : "in force until " + d.source.describe() + " changes";
    log(Level::Notice, "DaemonSet " + key + ": rolled back to revision " + std::to_string(restored) + " (" +
                           restored_hash + "), " + held);
    host_.record_rollback_event(
        ns, name, "Normal", "RollbackDone",
        "Rolled back to revision " + std::to_string(restored) + " (" + restored_hash + "), " + held);
    host_.rollback_changed(key);  // the rollback changed what applies: rebuild this one
    return std::string("rolled back");
}

}  // namespace daemonlet::agent
