#!/usr/bin/env bash
# A board's disk on a bad day (issue 15 §3), with the exec runtime. The
# stateDir is a small ext4 file system on a loop device (errors=remount-ro,
# as a board's flash is mounted), so that it can be filled and then fail as
# a worn-out card does: the kernel remounts it read-only under the agent
# (ext4's trigger_fs_error; a plain `mount -o remount,ro` is refused while
# the agent and the shims hold files open for writing).
# 1. Full (ENOSPC): the pod runs on (same process); `daemonlet status -o
#    json` has storage.writable false with SQLite's error, the STATUS line
#    and one log line say so (not one per write); the pod's log stops
#    growing; a DaemonSet added meanwhile is kept, and once space returns it
#    lands in the store, its pod runs, the log grows again and the database
#    passes PRAGMA integrity_check.
# 2. Read-only under the agent: the pod runs on, `status` and `get` are
#    served and say that nothing can be recorded.
# 3. An agent started on the read-only stateDir does not crash-loop: READY,
#    the running pod adopted, the STATUS line says it records nothing.
# 4. The "reboot" (the pods gone, fsck, mounted read-write): a clean start,
#    every DaemonSet (the one added while read-only too) runs, and the
#    database is intact.
# 5. Read-only after a clean stop: `get` is served and an agent starts and
#    runs the pods from what the store holds.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/disk_lib.sh"
disk_mount

start_notify_listener

write_config "{}" "[]"
loop='trap \"exit 0\" TERM; while true; do echo tick; sleep 0.05; done'
write_ds steady.yaml steady "$loop"

storage() { status_json | jq -r ".storage.$1"; }
last_status_line() { grep STATUS= "$work/notify.log" | tail -1; }
steady_log() { ls "$state"/runtime/logs/it_steady-*/main/0.log 2>/dev/null | head -1; }
log_size() { stat -c %s "$(steady_log)"; }
integrity() { sqlite3 -readonly "$state/daemonlet.db" 'PRAGMA integrity_check'; }
ds_names() { ds_list_json | jq -r '[.items[].metadata.name] | sort | join(",")'; }

start_own_agent
wait_ready 0
wait_for "steady runs" 20 pod_running it steady
steady_pid=$(pid_of steady)
[[ -n $steady_pid ]] && ok || fail "no steady process"
[[ $(storage writable) == true ]] && ok || fail "storage before: $(status_json | jq -c .storage)"

# --- 1. The file system fills up.
disk_fill
write_ds late.yaml late "$loop"
wait_for "status says the stateDir is full" 10 bash -c \
    "'$dl' status -o json --config '$cfg' | jq -e '.storage.writable == false and (.storage.error | test(\"full|No space\")) and .storage.pending > 0 and (.storage.since | length > 0)'"
status_json | jq -c .storage
wait_for "the STATUS line says so" 5 bash -c "grep STATUS= '$work/notify.log' | tail -1 | grep -q 'stateDir full'"
full_size=$(log_size)
# The agent keeps retrying (every 2 s) while the late pod's start fails on
# the full disk and is retried too: wait for a retry of each.
wait_for "the late pod's start is retried" 15 bash -c "(( \$(grep -c 'pod it/late-.* did not start' '$agent_log') >= 2 ))"
[[ $(grep -c 'the stateDir is full' "$agent_log") -eq 1 ]] && ok ||
    fail "the full disk is said $(grep -c 'the stateDir is full' "$agent_log") times, not once"
[[ $(pid_of steady) == "$steady_pid" ]] && kill -0 "$steady_pid" && ok || fail "steady did not run on while full"
# Lines still fit in the log's last block (ext4 allocates 4 KiB blocks):
# past it the log stops growing, and the container runs on.
(($(log_size) - full_size < 4096)) && ok || fail "steady's log grew on a full disk ($full_size -> $(log_size))"
[[ $(ds_names) == steady ]] && ok || fail "get ds while full: $(ds_names)"

# Space returns: the kept writes land, in one transaction.
disk_free
wait_for "the stateDir takes writes again" 10 bash -c \
    "'$dl' status -o json --config '$cfg' | jq -e '.storage.writable == true and .storage.pending == 0'"
grep -q 'takes writes again' "$agent_log" && ok || fail "no log line for the recovery"
[[ $(ds_names) == late,steady ]] && ok || fail "the DaemonSet added while full is not in the store: $(ds_names)"
wait_for "late runs" 15 pod_running it late
wait_for "steady's log grows again" 5 bash -c "(( \$(stat -c %s '$(steady_log)') > $full_size ))"
# Only whole CRI records: a record the full disk took part of was cut off
# again, not left for the next one to be glued to.
glued=$(grep -cE '.[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(Z|[+-][0-9:]+) (stdout|stderr) [FP] ' "$(steady_log)")
bad=$(grep -cvE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(Z|[+-][0-9:]+) (stdout|stderr) [FP] ' "$(steady_log)")
((glued == 0 && bad == 0)) && ok || fail "steady's log has $glued glued and $bad broken records after the full disk"
[[ $(integrity) == ok ]] && ok || fail "integrity_check after the full disk: $(integrity)"
[[ $(pid_of steady) == "$steady_pid" ]] && ok || fail "steady was restarted"
last_status_line | grep -q stateDir && fail "the STATUS line still says: $(last_status_line)" || ok

# --- 2. The card fails and the kernel remounts it read-only. What ext4 had
# not committed to its journal then is lost (the file system's journal is
# aborted): flushed first, so that the freed space stays free.
sync -f "$state"
trigger=/sys/fs/ext4/$(basename "$loopdev")/trigger_fs_error
if [[ ! -w $trigger ]]; then
    echo "the read-only part SKIPPED: this kernel has no $trigger"
    stop_agent TERM
    finish
    exit
fi
echo "daemonlet test: worn-out card" >"$trigger"
wait_for "the stateDir is read-only" 5 bash -c "findmnt -no OPTIONS '$state' | grep -qE '(^|,)(ro|emergency_ro)(,|$)'"
write_ds late2.yaml late2 "$loop"
wait_for "status says nothing can be recorded" 10 bash -c \
    "'$dl' status -o json --config '$cfg' | jq -e '.storage.writable == false and (.storage.error | test(\"[Rr]ead-only|readonly\"))'"
status_json | jq -c .storage
wait_for "the STATUS line says so" 5 bash -c "grep STATUS= '$work/notify.log' | tail -1 | grep -q 'stateDir read-only'"
pods_json | jq -e '[.items[].metadata.name | select(startswith("steady-"))] | length == 1' >/dev/null && ok ||
    fail "get pods on the read-only stateDir: $(pods_json 2>&1 | head -3)"
[[ $(pid_of steady) == "$steady_pid" ]] && ok || fail "steady did not run on while read-only"
stop_agent TERM

# --- 3. An agent started on the read-only stateDir runs from what it reads.
start_own_agent
wait_ready 1
wait_for "its STATUS line says it records nothing" 5 bash -c \
    "grep STATUS= '$work/notify.log' | tail -1 | grep -q 'stateDir read-only: nothing is recorded'"
grep -q 'running the pods from what the store holds' "$agent_log" && ok || fail "no log line for the read-only start"
kill -0 "$agent" 2>/dev/null && ok || fail "the agent started on a read-only stateDir exited"
[[ $(pid_of steady) == "$steady_pid" ]] && ok || fail "steady was not adopted"
stop_agent TERM

# --- 4. The reboot: the pods are gone, the card is checked and mounted read-write.
pkill -KILL -f "daemonlet-shim.*$work"
pkill -KILL -f "it-marker-$$-"
wait_for "the stateDir is released" 10 umount "$state"
e2fsck -fy "$img" >/dev/null 2>&1
(($? < 4)) && ok || fail "e2fsck could not repair the image"
mount -o loop,errors=remount-ro "$img" "$state" || fail "mount after fsck"
[[ $(integrity) == ok ]] && ok || fail "integrity_check after the read-only day: $(integrity)"
start_own_agent
wait_ready 2
[[ $(storage writable) == true ]] && ok || fail "storage after the reboot: $(status_json | jq -c .storage)"
for ds in steady late late2; do wait_for "$ds runs after the reboot" 15 pod_running it $ds; done
[[ $(ds_names) == late,late2,steady ]] && ok || fail "get ds after the reboot: $(ds_names)"
stop_agent TERM
[[ $(integrity) == ok ]] && ok || fail "integrity_check at the end: $(integrity)"

# --- 5. Read-only after a clean stop, the database's -wal and -shm gone:
# SQLite can neither make them on a read-only file system nor read without
# them (the store then opens the database immutable): `get` is served and
# an agent starts, and runs the pods the "reboot" took from what the store
# holds, in memory only.
pkill -KILL -f "daemonlet-shim.*$work"
pkill -KILL -f "it-marker-$$-"
# The last connection's close after a checkpoint removes the -wal and -shm
# (the agent's own close leaves them: it does not checkpoint on close).
sqlite3 "$state/daemonlet.db" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
[[ ! -e $state/daemonlet.db-wal && ! -e $state/daemonlet.db-shm ]] && ok ||
    fail "the -wal or -shm stayed: $(cd "$state" && ls daemonlet.db*)"
wait_for "the stateDir is remounted read-only" 10 mount -o remount,ro "$state"
[[ $(ds_names) == late,late2,steady ]] && ok || fail "get ds on a read-only stateDir after a clean stop: $(ds_names 2>&1)"
start_own_agent
wait_ready 3
kill -0 "$agent" 2>/dev/null && ok || fail "the agent started on a read-only stateDir (no -wal) exited"
wait_for "steady runs again from the read-only store" 15 pod_running it steady
stop_agent TERM
finish
