#!/usr/bin/env bash
# A new agent on a full stateDir whose database has an older schema (issue
# 15 §3): the upgrade's migration cannot be written, and the agent comes up
# all the same. The database is made version 5 (migrations 6 and 7, the
# queued Events' and the API DaemonSets' tables, undone) and the disk filled, twice:
# 1. its -wal and -shm kept: the open fails at the migration's commit;
# 2. its -wal checkpointed away and no -shm: the open fails at the first
#    read (SQLite cannot make the -shm on the full disk).
# Each time: the agent is READY and adopts the running pod, read from a copy
# of the version 5 file migrated in memory (the file stays version 5);
# `daemonlet status -o json` says the storage is not writable and why,
# `daemonlet get` reads the file (no SIGBUS on the -shm the failed open
# left with pages the full disk had no blocks for); a
# DaemonSet added meanwhile is kept; once space returns the migration runs,
# the kept DaemonSet lands and its pod runs. A third time the file goes bad
# under the copy: moved aside, the copy written in its place, the agent
# restarted on it keeps a revision only the copy held. At the end the
# database passes PRAGMA integrity_check.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/disk_lib.sh"
disk_mount

start_notify_listener

write_config "{}" "[]"
loop='trap \"exit 0\" TERM; while true; do sleep 0.2; done'
write_ds steady.yaml steady "$loop"
db=$state/daemonlet.db
schema() { sqlite3 -readonly -cmd '.timeout 5000' "$db" 'PRAGMA user_version'; }
# On the full disk without the -shm (exclusive locking): a failed open may
# leave one that cannot be mapped.
schema_full() { sqlite3 -cmd '.timeout 5000' "$db" 'PRAGMA locking_mode = EXCLUSIVE; PRAGMA user_version' | tail -1; }
ds_names() { ds_list_json | jq -r '[.items[].metadata.name] | sort | join(",")'; }
status_has() { "$dl" status -o json --config "$cfg" | jq -e "$1"; }
export -f status_has
export dl cfg

start_own_agent
wait_ready 0
wait_for "steady runs" 20 pod_running it steady
steady_pid=$(pid_of steady)
latest=$(schema)

upgrade_on_full_disk() {  # upgrade_on_full_disk ROUND NEW_DS WAL_KEPT(yes|no) NAMES_AFTER NAMES_BEFORE
    stop_agent TERM
    if [[ $3 == yes ]]; then
        sqlite3 "$db" '.dbconfig no_ckpt_on_close on' 'DROP TABLE cluster_events; DROP TABLE api_daemonsets; PRAGMA user_version = 5;' >/dev/null
        [[ -s $db-wal && -e $db-shm ]] && ok || fail "round $1: no -wal or -shm: $(ls "$state")"
    else
        sqlite3 "$db" 'PRAGMA wal_checkpoint(TRUNCATE); DROP TABLE cluster_events; DROP TABLE api_daemonsets; PRAGMA user_version = 5;' >/dev/null
        sqlite3 "$db" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
        [[ ! -e $db-wal && ! -e $db-shm ]] && ok || fail "round $1: the -wal or -shm stayed: $(ls "$state")"
    fi
    [[ $(schema) == 5 ]] && ok || fail "round $1: no version 5 database: $(schema)"
    disk_fill

    start_own_agent
    wait_ready "$1"
    kill -0 "$agent" 2>/dev/null && ok || fail "round $1: the agent exited on a full stateDir with a version 5 database"
    [[ $(pid_of steady) == "$steady_pid" ]] && ok || fail "round $1: steady was not adopted"
    wait_for "round $1: status says the stateDir is full" 5 status_has \
        '.storage.writable == false and (.storage.error | test("full|No space"))'
    status_json | jq -c .storage
    [[ $(ds_names) == "$5" ]] && ok || fail "round $1: get ds on the full disk: $(ds_names 2>&1)"
    [[ $(schema_full) == 5 ]] && ok || fail "round $1: the database is version $(schema_full) on the full disk"
    write_ds "$2.yaml" "$2" "$loop"
    local n
    n=$(tr , '\n' <<<"$4" | wc -l)
    wait_for "round $1: $2 is kept" 10 status_has ".storage.pending > 0 and .daemonSets.total == $n"
    # The reopen is not tried with less than 1 MiB free (a few KiB could
    # let it map a -shm the file system cannot back: SIGBUS).
    wait_for "round $1: the reopen waits for room" 5 status_has '.storage.error | test("waits for [0-9]+ KiB free")'

    disk_free
    wait_for "round $1: the stateDir takes writes again" 10 status_has '.storage.writable == true and .storage.pending == 0'
    [[ $(schema) == "$latest" ]] && ok || fail "round $1: the database is version $(schema) after space returned, not $latest"
    [[ $(ds_names) == "$4" ]] && ok || fail "round $1: the DaemonSet added while full is not in the store: $(ds_names)"
    wait_for "round $1: $2 runs" 15 pod_running it "$2"
    [[ $(pid_of steady) == "$steady_pid" ]] && ok || fail "round $1: steady was restarted"
}
upgrade_on_full_disk 1 late yes late,steady steady
upgrade_on_full_disk 2 later no late,later,steady late,steady

# The file goes bad while the pods run from the copy: once space returns
# the reopen moves it aside, writes the copy (with what was kept: late's
# new template, its revision 2) in its place, and the agent exits 1 (not on
# with a store the file no longer backs, unsaid) for systemd to start it
# again; that start opens the copy's file: late's revision 2 is there.
stop_agent TERM
sqlite3 "$db" 'PRAGMA wal_checkpoint(TRUNCATE); DROP TABLE cluster_events; DROP TABLE api_daemonsets; PRAGMA user_version = 5;' >/dev/null
disk_fill
start_own_agent
wait_ready 3
wait_for "round 3: status says the stateDir is full" 5 status_has '.storage.writable == false'
late_pid=$(pid_of late)
# Its pod stopped for the rolling update: revision 2 is recorded (kept; the
# new pod cannot start on the full disk).
old_late_stopped() { [[ -n $late_pid && $(pid_of late) != "$late_pid" ]]; }
write_ds late.yaml late "V=2; $loop"
wait_for "round 3: late's revision 2 replaces its pod (kept)" 10 old_late_stopped
head -c 4096 /dev/zero | tr '\0' U | dd of="$db" bs=4096 seek=1 count=1 conv=notrunc,fsync 2>/dev/null
disk_free
wait_for "round 3: the agent exits" 10 bash -c "! kill -0 $agent 2>/dev/null"
wait "$agent"
rc=$?
agent=
[[ $rc == 1 ]] && ok || fail "round 3: the agent exited $rc, not 1, when its reopen moved the file aside"
compgen -G "$db.corrupt-*" >/dev/null && ok || fail "round 3: nothing moved aside: $(ls "$state")"
start_own_agent
wait_ready 4
wait_for "round 3: steady runs after the restart" 15 pod_running it steady
[[ $(pid_of steady) == "$steady_pid" ]] && ok || fail "round 3: steady was restarted"
"$dl" rollout history ds/late -n it --revision=2 --config "$cfg" >/dev/null && ok ||
    fail "round 3: late's revision 2, held by the copy only, is not in the file it was written to"
stop_agent TERM
[[ $(schema) == "$latest" && $(sqlite3 -readonly "$db" 'PRAGMA integrity_check') == ok ]] && ok ||
    fail "integrity_check at the end"
finish
