// All SQL text of the store, in one place (fluent-bit's tail_sql.h): the
// schema migrations and every statement the store prepares.
#pragma once

#include <span>

namespace daemonlet::store::sql {

// ---------------------------------------------------------------------------
// Schema migrations, keyed on PRAGMA user_version. Migration N takes a
// database at user_version N-1 to N; each runs in one BEGIN IMMEDIATE
// transaction together with the user_version update, so a failure leaves the
// previous version intact. Append; never edit a migration that has shipped.
struct Migration {
    int version;
    const char* sql;
};

inline constexpr Migration kMigrations[] = {
    {1, R"sql(
-- The desired state: each DaemonSet, where it came from, its full object.
CREATE TABLE daemonsets (
    namespace     TEXT NOT NULL,
    name          TEXT NOT NULL,
    source        TEXT NOT NULL,
    generation    INTEGER NOT NULL,
    object_json   TEXT NOT NULL,
    template_hash TEXT NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (namespace, name)
);

-- The revision history (upstream ControllerRevision): one row per distinct
-- template, so a template is keyed by its hash; an undo re-numbers it.
-- Owned by its DaemonSet: deleting the DaemonSet deletes its history.
CREATE TABLE revisions (
    namespace     TEXT NOT NULL,
    daemonset     TEXT NOT NULL,
    hash          TEXT NOT NULL,
    revision      INTEGER NOT NULL,
    template_json TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (namespace, daemonset, hash),
    UNIQUE (namespace, daemonset, revision),
    FOREIGN KEY (namespace, daemonset) REFERENCES daemonsets (namespace, name) ON DELETE CASCADE
);

-- The local pods. No foreign key to daemonsets on purpose: a pod outlives
-- its DaemonSet's record until the agent has stopped it.
CREATE TABLE pods (
    uid             TEXT PRIMARY KEY NOT NULL,
    name            TEXT NOT NULL,
    namespace       TEXT NOT NULL,
    daemonset       TEXT NOT NULL,
    revision_hash   TEXT NOT NULL,
    revision        INTEGER NOT NULL,
    phase           TEXT NOT NULL,
    created_at_ms   INTEGER NOT NULL,
    deleting        INTEGER NOT NULL,
    containers_json TEXT NOT NULL
);
CREATE INDEX pods_by_daemonset ON pods (namespace, daemonset);

-- This node's labels and taints: a single row.
CREATE TABLE node (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    labels_json   TEXT NOT NULL,
    taints_json   TEXT NOT NULL,
    unschedulable INTEGER NOT NULL
);

-- Recent events, bounded per object and in total (store.cpp). The rowid is
-- the event's id and its order.
CREATE TABLE events (
    id        INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    object    TEXT NOT NULL,
    type      TEXT NOT NULL,
    reason    TEXT NOT NULL,
    message   TEXT NOT NULL,
    time_ms   INTEGER NOT NULL
);
CREATE INDEX events_by_object ON events (namespace, object, id);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
)sql"},
    {2, R"sql(
-- A rollback (daemonlet rollout undo) of a DaemonSet whose spec comes from a
-- manifest file: the template in force instead of the file's, as long as the
-- file's DaemonSet is the one it was made against (file_hash, the FNV-1a of
-- that object's JSON). Goes with its DaemonSet.
CREATE TABLE rollbacks (
    namespace     TEXT NOT NULL,
    name          TEXT NOT NULL,
    file_hash     TEXT NOT NULL,
    revision_hash TEXT NOT NULL,
    template_json TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (namespace, name),
    FOREIGN KEY (namespace, name) REFERENCES daemonsets (namespace, name) ON DELETE CASCADE
);
)sql"},
    {3, R"sql(
-- The pod's IPs (status.podIPs), as its runtime's sandbox has them: a JSON
-- array of strings, [] for none (every pod written before).
ALTER TABLE pods ADD COLUMN pod_ips_json TEXT NOT NULL DEFAULT '[]';
)sql"},
    {4, R"sql(
-- The manifest directory's files as the agent last read them, so that a
-- restart answers as the running agent did: each file's last version that
-- loaded without errors ('' when none has) and whether the file on disk is
-- broken now, and why. A removed file's row goes with its DaemonSets.
CREATE TABLE manifest_files (
    path          TEXT PRIMARY KEY NOT NULL,
    good_content  TEXT NOT NULL,
    broken        INTEGER NOT NULL,
    error         TEXT NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
-- Written by earlier builds and never read: a new agent lists before it
-- watches, as client-go's reflector does.
DELETE FROM meta WHERE key LIKE 'api.resourceVersion/%';
)sql"},
    {5, R"sql(
-- Static pods (v1 Pods in the manifest directory): the file a pod comes
-- from ('' for a DaemonSet's pod), and status.reason / status.message of a
-- pod the kubelet's admission rejected ('' otherwise).
ALTER TABLE pods ADD COLUMN source TEXT NOT NULL DEFAULT '';
ALTER TABLE pods ADD COLUMN reason TEXT NOT NULL DEFAULT '';
ALTER TABLE pods ADD COLUMN message TEXT NOT NULL DEFAULT '';
)sql"},
    {6, R"sql(
-- The Events queued for the cluster and not sent yet (the agent's
-- EventQueue), one row per Event keyed by its place in the queue (seq):
-- a new Event is one INSERT, a sent one one DELETE, a folded count one
-- UPDATE. Earlier builds kept the whole queue as one JSON array in meta
-- 'api.events', rewritten (up to ~400 KB) for each Event queued: its
-- Events move here in their order and the row goes.
CREATE TABLE cluster_events (
    seq        INTEGER PRIMARY KEY,
    event_json TEXT NOT NULL
);
INSERT INTO cluster_events (seq, event_json)
    SELECT CAST(e.key AS INTEGER) + 1, e.value FROM meta, json_each(meta.value) AS e
    WHERE meta.key = 'api.events' AND json_valid(meta.value) AND json_type(meta.value) = 'array'
      AND e.type = 'object';
DELETE FROM meta WHERE key = 'api.events';
)sql"},
    {7, R"sql(
-- The API server's DaemonSets as the agent last received them: the API
-- source's set, kept apart from the daemonsets table (the version in force
-- of each name, whichever source won), as the kubelet's config mux keeps
-- each source's pods apart. A manifest file that overrides a cluster
-- DaemonSet used to leave no copy of the cluster's: lost while the board
-- was offline, the agent ran neither. Earlier builds' rows from the API
-- server are its copies.
CREATE TABLE api_daemonsets (
    namespace   TEXT NOT NULL,
    name        TEXT NOT NULL,
    object_json TEXT NOT NULL,
    PRIMARY KEY (namespace, name)
);
INSERT INTO api_daemonsets (namespace, name, object_json)
    SELECT namespace, name, object_json FROM daemonsets WHERE source = 'api';
)sql"},
};

inline constexpr std::span<const Migration> migrations() { return kMigrations; }
inline constexpr int kSchemaVersion = kMigrations[std::size(kMigrations) - 1].version;

// ---------------------------------------------------------------------------
// Connection set-up. WAL lets the CLI read while the agent writes.
// synchronous=NORMAL is WAL's recommended setting: a power cut may lose the
// last transactions but never corrupts, and it saves an fsync per commit on
// flash. journal_size_limit bounds the -wal file left after a checkpoint.
// cache_size: the whole database of a board (a few hundred KiB for 200
// DaemonSets and their revisions) fits in 512 KiB of page cache; SQLite's
// default is 2 MiB per connection, RSS a 256 MiB board does not have.
inline constexpr const char* kJournalModeWal = "PRAGMA journal_mode = WAL";
inline constexpr const char* kConfigure =
    "PRAGMA foreign_keys = ON;"
    "PRAGMA synchronous = NORMAL;"
    "PRAGMA journal_size_limit = 4194304;"
    "PRAGMA cache_size = -512;";
inline constexpr const char* kQuickCheck = "PRAGMA quick_check";
inline constexpr const char* kUserVersion = "PRAGMA user_version";
inline constexpr const char* kBeginImmediate = "BEGIN IMMEDIATE";
inline constexpr const char* kCommit = "COMMIT";
inline constexpr const char* kRollback = "ROLLBACK";
inline constexpr const char* kSavepoint = "SAVEPOINT store_op";
inline constexpr const char* kRelease = "RELEASE store_op";
inline constexpr const char* kRollbackToSavepoint = "ROLLBACK TO store_op";

// ---------------------------------------------------------------------------
// Statements. Each put_* has a compare (the stored values of the columns
// that matter) and an upsert; parameters are numbered key first, then the
// compared values, then the values not compared (timestamps).
// UPSERT, never INSERT OR REPLACE: a replace deletes the row first, which
// would cascade to the DaemonSet's revisions.

inline constexpr const char* kDaemonSetCompare =
    "SELECT source, generation, object_json, template_hash FROM daemonsets WHERE namespace = ?1 AND name = "
    "?2";
inline constexpr const char* kDaemonSetUpsert =
    "INSERT INTO daemonsets (namespace, name, source, generation, object_json, template_hash, updated_at_ms)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
    " ON CONFLICT (namespace, name) DO UPDATE SET source = excluded.source, generation = excluded.generation,"
    " object_json = excluded.object_json, template_hash = excluded.template_hash,"
    " updated_at_ms = excluded.updated_at_ms";
inline constexpr const char* kDaemonSetGet =
    "SELECT namespace, name, source, generation, object_json, template_hash, updated_at_ms FROM daemonsets"
    " WHERE namespace = ?1 AND name = ?2";
inline constexpr const char* kDaemonSetList =
    "SELECT namespace, name, source, generation, object_json, template_hash, updated_at_ms FROM daemonsets"
    " ORDER BY namespace, name";
inline constexpr const char* kDaemonSetDelete = "DELETE FROM daemonsets WHERE namespace = ?1 AND name = ?2";

// A step of the wall clock (core/wall_clock.h): the times recorded in
// [?1, ?2] move by ?3. Pods are not here: the agent holds them and writes
// them back.
inline constexpr const char* kRebaseDaemonSets =
    "UPDATE daemonsets SET updated_at_ms = updated_at_ms + ?3 WHERE updated_at_ms BETWEEN ?1 AND ?2";
inline constexpr const char* kRebaseRevisions =
    "UPDATE revisions SET created_at_ms = created_at_ms + ?3 WHERE created_at_ms BETWEEN ?1 AND ?2";
inline constexpr const char* kRebaseRollbacks =
    "UPDATE rollbacks SET created_at_ms = created_at_ms + ?3 WHERE created_at_ms BETWEEN ?1 AND ?2";
inline constexpr const char* kRebaseEvents =
    "UPDATE events SET time_ms = time_ms + ?3 WHERE time_ms BETWEEN ?1 AND ?2";
inline constexpr const char* kRebaseManifestFiles =
    "UPDATE manifest_files SET updated_at_ms = updated_at_ms + ?3 WHERE updated_at_ms BETWEEN ?1 AND ?2";

inline constexpr const char* kRevisionCompare =
    "SELECT revision, template_json FROM revisions WHERE namespace = ?1 AND daemonset = ?2 AND hash = ?3";
inline constexpr const char* kRevisionUpsert =
    "INSERT INTO revisions (namespace, daemonset, hash, revision, template_json, created_at_ms)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
    " ON CONFLICT (namespace, daemonset, hash) DO UPDATE SET revision = excluded.revision,"
    " template_json = excluded.template_json, created_at_ms = excluded.created_at_ms";
inline constexpr const char* kRevisionList =
    "SELECT namespace, daemonset, revision, hash, template_json, created_at_ms FROM revisions"
    " WHERE namespace = ?1 AND daemonset = ?2 ORDER BY revision";
inline constexpr const char* kRevisionDelete =
    "DELETE FROM revisions WHERE namespace = ?1 AND daemonset = ?2 AND revision = ?3";

inline constexpr const char* kPodCompare =
    "SELECT name, namespace, daemonset, revision_hash, revision, phase, created_at_ms, deleting, "
    "containers_json, pod_ips_json, source, reason, message"
    " FROM pods WHERE uid = ?1";
inline constexpr const char* kPodUpsert =
    "INSERT INTO pods (uid, name, namespace, daemonset, revision_hash, revision, phase, created_at_ms, "
    "deleting,"
    " containers_json, pod_ips_json, source, reason, message)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
    " ON CONFLICT (uid) DO UPDATE SET name = excluded.name, namespace = excluded.namespace,"
    " daemonset = excluded.daemonset, revision_hash = excluded.revision_hash, revision = excluded.revision,"
    " phase = excluded.phase, created_at_ms = excluded.created_at_ms, deleting = excluded.deleting,"
    " containers_json = excluded.containers_json, pod_ips_json = excluded.pod_ips_json,"
    " source = excluded.source, reason = excluded.reason, message = excluded.message";
inline constexpr const char* kPodList =
    "SELECT uid, name, namespace, daemonset, revision_hash, revision, phase, created_at_ms, deleting,"
    " containers_json, pod_ips_json, source, reason, message FROM pods ORDER BY namespace, daemonset, "
    "created_at_ms, uid";
inline constexpr const char* kPodDelete = "DELETE FROM pods WHERE uid = ?1";

inline constexpr const char* kNodeCompare =
    "SELECT labels_json, taints_json, unschedulable FROM node WHERE id = 1";
inline constexpr const char* kNodeUpsert =
    "INSERT INTO node (id, labels_json, taints_json, unschedulable) VALUES (1, ?1, ?2, ?3)"
    " ON CONFLICT (id) DO UPDATE SET labels_json = excluded.labels_json, taints_json = excluded.taints_json,"
    " unschedulable = excluded.unschedulable";

inline constexpr const char* kEventInsert =
    "INSERT INTO events (namespace, object, type, reason, message, time_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
// Keeps the newest ?3 events of one object.
inline constexpr const char* kEventTrimObject =
    "DELETE FROM events WHERE namespace = ?1 AND object = ?2 AND id <= (SELECT id FROM events"
    " WHERE namespace = ?1 AND object = ?2 ORDER BY id DESC LIMIT 1 OFFSET ?3)";
// Keeps the newest ?1 events in all: pods come and go with new names.
inline constexpr const char* kEventTrimAll =
    "DELETE FROM events WHERE id <= (SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?1)";
// The newest ?3 events (all when negative), newest first; '' matches any namespace or object.
inline constexpr const char* kEventList =
    "SELECT id, namespace, object, type, reason, message, time_ms FROM events"
    " WHERE (?1 = '' OR namespace = ?1) AND (?2 = '' OR object = ?2) ORDER BY id DESC LIMIT ?3";

inline constexpr const char* kRollbackCompare =
    "SELECT file_hash, revision_hash, template_json FROM rollbacks WHERE namespace = ?1 AND name = ?2";
inline constexpr const char* kRollbackUpsert =
    "INSERT INTO rollbacks (namespace, name, file_hash, revision_hash, template_json, created_at_ms)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
    " ON CONFLICT (namespace, name) DO UPDATE SET file_hash = excluded.file_hash,"
    " revision_hash = excluded.revision_hash, template_json = excluded.template_json,"
    " created_at_ms = excluded.created_at_ms";
inline constexpr const char* kRollbackGet =
    "SELECT file_hash, revision_hash, template_json, created_at_ms FROM rollbacks"
    " WHERE namespace = ?1 AND name = ?2";
inline constexpr const char* kRollbackDelete = "DELETE FROM rollbacks WHERE namespace = ?1 AND name = ?2";

inline constexpr const char* kManifestFileCompare =
    "SELECT good_content, broken, error FROM manifest_files WHERE path = ?1";
inline constexpr const char* kManifestFileUpsert =
    "INSERT INTO manifest_files (path, good_content, broken, error, updated_at_ms) VALUES (?1, ?2, ?3, ?4, "
    "?5)"
    " ON CONFLICT (path) DO UPDATE SET good_content = excluded.good_content, broken = excluded.broken,"
    " error = excluded.error, updated_at_ms = excluded.updated_at_ms";
inline constexpr const char* kManifestFileList =
    "SELECT path, good_content, broken, error, updated_at_ms FROM manifest_files ORDER BY path";
inline constexpr const char* kManifestFileDelete = "DELETE FROM manifest_files WHERE path = ?1";

// The API server's DaemonSets as last received (migration 7).
inline constexpr const char* kApiDaemonSetCompare =
    "SELECT object_json FROM api_daemonsets WHERE namespace = ?1 AND name = ?2";
inline constexpr const char* kApiDaemonSetUpsert =
    "INSERT INTO api_daemonsets (namespace, name, object_json) VALUES (?1, ?2, ?3)"
    " ON CONFLICT (namespace, name) DO UPDATE SET object_json = excluded.object_json";
inline constexpr const char* kApiDaemonSetList =
    "SELECT namespace, name, object_json FROM api_daemonsets ORDER BY namespace, name";
inline constexpr const char* kApiDaemonSetDelete =
    "DELETE FROM api_daemonsets WHERE namespace = ?1 AND name = ?2";

// The Events queued for the cluster (migration 6), in their order.
inline constexpr const char* kQueuedEventCompare = "SELECT event_json FROM cluster_events WHERE seq = ?1";
inline constexpr const char* kQueuedEventUpsert =
    "INSERT INTO cluster_events (seq, event_json) VALUES (?1, ?2)"
    " ON CONFLICT (seq) DO UPDATE SET event_json = excluded.event_json";
inline constexpr const char* kQueuedEventDelete = "DELETE FROM cluster_events WHERE seq = ?1";
inline constexpr const char* kQueuedEventDeleteBelow = "DELETE FROM cluster_events WHERE seq < ?1";
inline constexpr const char* kQueuedEventList = "SELECT seq, event_json FROM cluster_events ORDER BY seq";

inline constexpr const char* kMetaCompare = "SELECT value FROM meta WHERE key = ?1";
inline constexpr const char* kMetaUpsert =
    "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value";

}  // namespace daemonlet::store::sql
