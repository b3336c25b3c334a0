#!/usr/bin/env bash
# daemonlet under a real systemd. A minimal Debian 12 tree is booted with
# systemd-nspawn; daemonlet goes into it with `cmake --install` (the unit, the
# default configuration, the binaries) and is enabled as a board's operator
# would. systemctl and journalctl are run inside the container (nsenter) to
# check what systemd-analyze verify and a test NOTIFY_SOCKET cannot:
#   - the installed unit runs the installed binary, and reinstalling keeps an
#     edited configuration;
#   - boot starts the agent, and it reaches active (running) as Type=notify,
#     which systemd grants only on READY=1; STATUS= is shown;
#   - the pod (a /bin/sh loop) runs; the agent's journal entries carry the
#     structured DAEMONLET_POD field;
#   - `systemctl restart` keeps the pod's process (KillMode=process leaves the
#     shims), and the new agent adopts it; `systemctl reload` is a SIGHUP;
#   - SIGKILL of the agent: Restart=always brings it back, and it adopts the
#     same process;
#   - WATCHDOG=1 keeps arriving; a stopped (SIGSTOP) agent is killed by the
#     watchdog and restarted, and adopts the same process;
#   - `systemctl stop` gets STOPPING=1, and the pod keeps running;
#   - a plain `systemctl kill` kills the pod too, and the agent restarts it.
# Every wait is a predicate polled until a deadline.
#
# usage: tests/systemd/nspawn_boot.sh [BUILD_DIR]
#   BUILD_DIR  a configured build with daemonlet and daemonlet-shim built
#              (default build/dev); installed with its own prefix.
# Environment:
#   DAEMONLET_NSPAWN_CACHE   where the Debian tree is kept between runs
#                            (default build/nspawn-rootfs); rebuilt when the
#                            package list below changes
#   DAEMONLET_DEBIAN_MIRROR  debootstrap's mirror (default: the Debian mirror
#                            in this machine's apt sources)
#
# Needs root (re-runs itself with `sudo -n` when it can), debootstrap and
# systemd-container (scripts/setup.sh installs them), and the mirror the first
# time. Prints "SKIPPED: reason" and exits 0 only when this machine cannot run
# a container at all; any other problem is a failure.
# The predicates are called indirectly, through wait_for and check.
# shellcheck disable=SC2317
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=tests/systemd/debian_tree.sh
source "$repo/tests/systemd/debian_tree.sh"
need_build "${1:-$repo/build/dev}" agent/daemonlet platform/daemonlet-shim
cache="${DAEMONLET_NSPAWN_CACHE:-$repo/build/nspawn-rootfs}"

nspawn_run "${BASH_SOURCE[0]}"

# ---- Install as an operator does. ----
install_daemonlet "$root" "$build" "$run/install.log"
check "the unit's ExecStart ($exec_start) is the installed daemonlet" test -x "$root$exec_start"
check "the unit's --config ($config_path) is installed" test -f "$root$config_path"
check "the unit's Documentation ($doc_path) is installed" test -f "$root$doc_path"
check "the installed binary runs with the tree's libraries" chroot "$root" "$exec_start" version
# Reinstalling (an upgrade) keeps the operator's configuration.
echo "# edited by the operator" >>"$root$config_path"
DESTDIR="$root" cmake --install "$build" >>"$run/install.log" 2>&1
check "cmake --install again keeps an edited configuration" grep -qx '# edited by the operator' "$root$config_path"
manifest_dir="$(sed -n -E 's/^manifestDir:[[:space:]]*([^[:space:]#]+).*/\1/p' "$root$config_path")"
check "the configuration's manifestDir ($manifest_dir) is installed" test -d "$root$manifest_dir"

# The DaemonSet: a shell loop whose argv[0] marks it for pgrep on the host.
marker="daemonlet-nspawn-$$"
write_loop_ds "$root$manifest_dir/boot-probe.yaml" nspawn boot-probe "$marker"
if ! systemctl --root="$root" enable daemonlet.service >"$run/enable.log" 2>&1; then
    cat "$run/enable.log"
    echo "FAIL: systemctl --root enable daemonlet.service"
    exit 1
fi

# ---- Boot. ----
boot_start=$SECONDS
boot_tree "$root" "$run/console.log"

# journal_has OUTPUT_FORMAT PATTERN. The journal is read whole first: `grep -q`
# at the end of a pipe exits at the first match, and the writer's SIGPIPE
# would fail the pipe under pipefail.
journal_has() { grep -q -- "$2" <<<"$(journal -o "$1")"; }
adoptions() { journal -o cat | grep -c 'adopted 1 running container'; }
more_adoptions_than() { (($(adoptions) > $1)); }
# restarted N OLD_MAIN_PID: the N-th automatic restart happened and is up.
restarted() { [[ $(prop NRestarts) == "$1" && $(prop MainPID) != "$2" ]] && is_running; }
watchdog_pinged_since() { [[ $(prop WatchdogTimestampMonotonic) != "$1" ]]; }
pod_line() { ct "$exec_start" get pods -A --config "$config_path" | grep -E '^nspawn +boot-probe-[a-z0-9]+ +1/1 +Running +0 '; }
pod_pid() { pgrep -f -- "$marker"; }
pod_alive() { [[ -n $1 && $(pod_pid) == "$1" ]]; }
pod_gone() { ! kill -0 "$1" 2>/dev/null; }
pod_started_again() { # pod_started_again OLD_PID
    local now
    now="$(pod_pid)"
    [[ -n $now && $now != "$1" ]] &&
        ct "$exec_start" get pods -A --config "$config_path" | grep -E '^nspawn +boot-probe-[a-z0-9]+ +1/1 +Running +1 '
}
diagnose() {
    echo "---- systemctl status daemonlet (in the container)"
    ct systemctl status --no-pager --lines=0 daemonlet.service
    echo "---- journalctl -u daemonlet (last 40)"
    journal -n 40
    echo "---- console (last 20)"
    tail -n 20 "$run/console.log"
}

if ! wait_booted "$run/console.log"; then
    diagnose
    finish
fi

# 1. Boot starts the agent; Type=notify reaches active (running) only on READY=1.
if ! wait_for "daemonlet.service is active (running) after boot" 60 is_running; then
    diagnose
    finish
fi
ready_ms() { # the agent's start (exec) to READY=1 (active), by systemd's clock
    echo $((($(prop ActiveEnterTimestampMonotonic) - $(prop ExecMainStartTimestampMonotonic)) / 1000))
}
echo "figures: container start to daemonlet READY $((SECONDS - boot_start))s; daemonlet exec to READY $(ready_ms) ms"
check "the unit is Type=notify" test "$(prop Type)" = notify
check "...and started once (NRestarts=0)" test "$(prop NRestarts)" = 0
check "the unit came from the installed file" test "$(prop FragmentPath)" = "${unit_file#"$root"}"
main="$(prop MainPID)"
check "its main process is the installed binary" test "$(ct readlink "/proc/$main/exe")" = "$exec_start"
status_text="$(prop StatusText)"
echo "StatusText: $status_text"
check "STATUS= reached systemd" test -n "$status_text"

# 2. The pod runs, and the journal has the agent's structured fields.
wait_for "the pod runs (daemonlet get pods)" 30 pod_line
pod="$(pod_pid)"
check "exactly one process of the pod" test "$(wc -w <<<"$pod")" = 1
wait_for "the agent's journal entries carry DAEMONLET_POD" 10 journal_has json '"DAEMONLET_POD":"nspawn/boot-probe-'
# Fields of one entry (journalctl -o json prints one entry per line).
structured_entry() {
    journal -o json | grep '"DAEMONLET_POD":"nspawn/boot-probe-' | grep '"_TRANSPORT":"journal"' |
        grep '"SYSLOG_IDENTIFIER":"daemonlet"' | grep '"PRIORITY":"[0-7]"' >/dev/null
}
check "...sent natively (sd_journal_send), with SYSLOG_IDENTIFIER and PRIORITY" structured_entry

# 3. systemctl restart: a new agent, the same pod process, adopted.
adopted="$(adoptions)"
ct systemctl restart daemonlet.service
check "systemctl restart returns with the service active (running)" is_running
check "...with a new main process" test "$(prop MainPID)" != "$main"
check "...and the pod's process unchanged (KillMode=process)" pod_alive "$pod"
wait_for "...adopted by the new agent" 10 more_adoptions_than "$adopted"
wait_for "...with zero container restarts" 10 pod_line
echo "figures: restart with 1 running pod: exec to READY $(ready_ms) ms"
main="$(prop MainPID)"

# systemctl reload: ExecReload= sends SIGHUP to the same process, which
# re-reads its configuration.
check "systemctl reload succeeds" ct systemctl reload daemonlet.service
check "...and keeps the main process" test "$(prop MainPID)" = "$main"
wait_for "...which re-reads its configuration" 10 journal_has cat 'SIGHUP: configuration reloaded'
check "...and keeps the pod" pod_alive "$pod"

# 4. SIGKILL of the agent only (systemctl kill without --kill-whom=main
# would signal the shims and the pods too): Restart=always.
adopted="$(adoptions)"
ct systemctl kill --kill-whom=main --signal=SIGKILL daemonlet.service
wait_for "Restart=always restarts the agent after SIGKILL" 30 restarted 1 "$main"
check "...the journal says it was killed" journal_has cat 'status=9/KILL'
check "...the pod's process unchanged" pod_alive "$pod"
wait_for "...adopted by the new agent" 10 more_adoptions_than "$adopted"
main="$(prop MainPID)"

# 5. The watchdog. WATCHDOG=1 arrives repeatedly (the timestamp moves), and a
# stopped loop stops it: systemd kills the agent and Restart=always restarts it.
watchdog="$(prop WatchdogUSec)"
check "WatchdogSec is set ($watchdog)" test "$watchdog" != 0
ping="$(prop WatchdogTimestampMonotonic)"
wait_for "WATCHDOG=1 keeps arriving" 60 watchdog_pinged_since "$ping"
adopted="$(adoptions)"
stop_at=$SECONDS
ct systemctl kill --kill-whom=main --signal=SIGSTOP daemonlet.service
wait_for "the watchdog restarts a stopped agent" 120 restarted 2 "$main"
echo "SIGSTOP to running again: $((SECONDS - stop_at))s (WatchdogSec $watchdog, RestartSec $(prop RestartUSec))"
check "...the journal says Watchdog timeout" journal_has cat 'Watchdog timeout'
check "...the pod's process unchanged" pod_alive "$pod"
wait_for "...adopted by the new agent" 10 more_adoptions_than "$adopted"
main="$(prop MainPID)"

# 6. systemctl stop: STOPPING=1 reaches systemd (PID 1 logs notifications at
# debug level), the agent exits, the pod keeps running.
ct systemctl log-level debug
ct systemctl stop daemonlet.service
check "systemctl stop leaves the service inactive" test "$(prop ActiveState)" = inactive
ct systemctl log-level info
check "...after STOPPING=1 from the agent" journal_has cat "notification message from PID $main (STOPPING=1"
check "...and the pod's process keeps running" pod_alive "$pod"
check "...and daemonlet get still shows it Running" pod_line

# 7. systemctl start adopts the pod again. Then a plain `systemctl kill`
# signals every process of the unit (docs/operating.md warns of it), the pod's too:
# Restart=always brings the agent back, and it starts the pod again.
adopted="$(adoptions)"
check "systemctl start after stop succeeds" ct systemctl start daemonlet.service
wait_for "...and the agent adopts the pod" 10 more_adoptions_than "$adopted"
check "...the same process" pod_alive "$pod"
restarts="$(prop NRestarts)"
main="$(prop MainPID)"
ct systemctl kill --signal=SIGKILL daemonlet.service
wait_for "plain systemctl kill kills the pod's process too" 10 pod_gone "$pod"
wait_for "...Restart=always brings the agent back" 30 restarted $((restarts + 1)) "$main"
wait_for "...which starts the pod again: a new process, 1 container restart" 30 pod_started_again "$pod"

((failed > 0)) && diagnose

# 8. Power off: the container shuts down cleanly.
poweroff_tree
finish
