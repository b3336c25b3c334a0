#!/bin/bash
# Runs inside the VM that tests/systemd/vm_cgroup2.sh boots, as the oneshot
# daemonlet-cg2-check.service after daemonlet.service: checks the runc
# runtime's cgroup limits on the unified (v2) hierarchy and prints one line
# per check on the console ("cg2: PASS: ...", "cg2: FAIL: ...", "cg2: INFO:
# ...") and a last line "cg2: DONE: N passed, M failed". The unit powers the
# VM off when this script exits.
#
# usage: vm_cgroup2_check.sh DAEMONLET CONFIG STATE_DIR
# The predicates are called indirectly, through wait_for and check.
# shellcheck disable=SC2317
set -u
dl=$1 cfg=$2 state=$3
runc_root=$state/runtime/runc

check_ok="cg2: PASS:" check_fail="cg2: FAIL:"
# shellcheck source=tests/systemd/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
info() { echo "cg2: INFO: $*"; }
done_() {
    if ((failed > 0)); then
        info "---- daemonlet get pods"
        "$dl" get pods -A --config "$cfg" 2>&1 | sed 's/^/cg2: INFO: /'
        info "---- journalctl -u daemonlet (last 30)"
        journalctl --no-pager -o cat -n 30 -u daemonlet.service 2>&1 | sed 's/^/cg2: INFO: /'
    fi
    echo "cg2: DONE: $passed passed, $failed failed"
    exit $((failed > 0))
}

# 1. The hierarchy: cgroup v2 only, with the controllers the limits need.
fs="$(stat -f -c %T /sys/fs/cgroup)"
info "kernel $(uname -r); /sys/fs/cgroup is $fs; controllers: $(cat /sys/fs/cgroup/cgroup.controllers 2>&1)"
check "/sys/fs/cgroup is the unified hierarchy (cgroup2fs)" test "$fs" = cgroup2fs
check "no cgroup v1 memory hierarchy is mounted" test ! -e /sys/fs/cgroup/memory/memory.limit_in_bytes
check "the memory controller is available" grep -qw memory /sys/fs/cgroup/cgroup.controllers
check "the cpu controller is available" grep -qw cpu /sys/fs/cgroup/cgroup.controllers

# 2. The pods run.
pods() { "$dl" get pods -A --config "$cfg"; }
pod_running() { grep -qE "^cg2 +$1-[a-z0-9]+ +1/1 +Running" <<<"$(pods)"; }
check "daemonlet.service is active" systemctl is-active daemonlet.service
wait_for "the pod with limits runs (runc)" 300 pod_running limits || done_
wait_for "the pod that allocates beyond its limit runs" 120 pod_running hog

# A container by the marker in its command line: its id (runc list) and the
# host pid of its process (runc state).
container_pid() { runc --root "$runc_root" state "$1" 2>/dev/null | sed -n 's/^ *"pid": \([0-9]*\),/\1/p'; }
find_container() { # find_container MARKER: sets id and pid
    local c p
    for c in $(runc --root "$runc_root" list -q 2>/dev/null); do
        p="$(container_pid "$c")"
        if [[ -n $p ]] && tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- "$1"; then
            id=$c pid=$p
            return 0
        fi
    done
    return 1
}

# 3. limits.memory 64Mi and limits.cpu 500m in the container's cgroup
# (cgroupsPath /daemonlet/<id>, under the root of the unified hierarchy).
# Kubernetes: memory.max is the limit in bytes (runc's cgroup v2 writer of
# linux.resources.memory.limit); cpu.max is "quota period" from the
# kubelet's MilliCPUToQuota (pkg/kubelet/cm/helpers_linux.go: quota =
# milliCPU * quotaPeriod / 1000 with QuotaPeriod = 100000 us), so 500m is
# "50000 100000".
id='' pid=''
wait_for "runc runs the limits container" 10 find_container cg2-limits-marker || done_
cg=/sys/fs/cgroup/daemonlet/$id
info "limits container $id, pid $pid, cgroup $cg"
# runtime.rootfs auto: overlay is a module on Debian's kernel, loaded by the
# agent's trial mount (not yet listed in /proc/filesystems at boot).
check "its root is an overlay (runtime.rootfs auto), it is $(stat -f -c %T "/proc/$pid/root" 2>&1)" \
    test "$(stat -f -c %T "/proc/$pid/root" 2>&1)" = overlayfs
check "its cgroup is /daemonlet/<id> (/proc/<pid>/cgroup)" test "$(cat "/proc/$pid/cgroup")" = "0::/daemonlet/$id"
check "memory.max is 67108864 (64Mi), it is $(cat "$cg/memory.max" 2>&1)" test "$(cat "$cg/memory.max" 2>&1)" = 67108864
check "cpu.max is \"50000 100000\" (500m), it is \"$(cat "$cg/cpu.max" 2>&1)\"" test "$(cat "$cg/cpu.max" 2>&1)" = "50000 100000"
# cpu.weight from the OCI shares (MilliCPUToShares: 500m -> 512), converted
# by runc (ConvertCPUSharesToCgroupV2Value: 1 + (shares - 2) * 9999 / 262142).
check "cpu.weight is 20 (shares 512), it is $(cat "$cg/cpu.weight" 2>&1)" test "$(cat "$cg/cpu.weight" 2>&1)" = 20

# The processes in the cgroup are the container's: its init is there, and
# every one is in the container's PID namespace (not the VM's).
procs="$(cat "$cg/cgroup.procs" 2>/dev/null)"
info "cgroup.procs: $(tr '\n' ' ' <<<"$procs")"
check "the container's process is in cgroup.procs" grep -qx "$pid" <<<"$procs"
pidns="$(readlink "/proc/$pid/ns/pid")"
# (The loop's `sleep 1` may have exited since cgroup.procs was read: a pid
# gone from /proc is skipped.)
all_in_container() {
    local p ns
    [[ $pidns != "$(readlink /proc/1/ns/pid)" ]] || return 1
    for p in $procs; do
        ns="$(readlink "/proc/$p/ns/pid")" || { [[ ! -e /proc/$p ]] && continue; }
        [[ $ns == "$pidns" ]] || return 1
    done
}
check "every process in cgroup.procs is in the container's PID namespace" all_in_container
shim_outside() { ! grep -qxF -f <(pgrep -f daemonlet-shim) <<<"$procs"; }
check "the shims are not in the container's cgroup" shim_outside

# 4. The memory limit holds: a container whose loop starts a dd with a 96 MiB
# buffer. The kernel's OOM killer kills the dd inside the cgroup (memory.events
# oom_kill counts it); the container's shell goes on.
wait_for "runc runs the hog container" 10 find_container cg2-hog-marker || done_
hog_cg=/sys/fs/cgroup/daemonlet/$id
hog_pid=$pid
ooms() { sed -n 's/^oom_kill //p' "$hog_cg/memory.events" 2>/dev/null; }
oom_killed() { (($(ooms) > 0)); }
wait_for "the hog's memory.events counts an oom_kill" 120 oom_killed
info "hog memory.events: $(tr '\n' ' ' <"$hog_cg/memory.events" 2>&1); memory.current now $(cat "$hog_cg/memory.current" 2>&1)"
# (dd runs as `busybox dd`: its comm is busybox.)
check "the kernel logged the memory cgroup's OOM kill of dd" grep -q 'Memory cgroup out of memory: Killed process [0-9]* (busybox)' <<<"$(dmesg)"
check "the hog container's shell survives (the same pid)" test "$(container_pid "$id")" = "$hog_pid"

# 5. A container whose own process is OOM-killed. kubelet reports reason
# OOMKilled when the runtime says so (containerd: the cgroup's oom event);
# the runc runtime's shim sees runc exit 137 (128 + SIGKILL), and the
# runtime finds the OOM kill in the kept cgroup's memory.events oom_kill.
exited() { journalctl --no-pager -o cat -u daemonlet.service | grep -E 'pod cg2/oomexit-[a-z0-9]+ container main exited with'; }
if wait_for "the container whose process exceeds its limit exits, and the agent logs it" 120 exited; then
    line="$(exited | head -1)"
    info "agent: $line"
    check "...with exit code 137 (runc: 128 + SIGKILL)" grep -q 'exited with 137' <<<"$line"
    check "...and reason OOMKilled in the log" grep -q 'exited with 137 (OOMKilled)' <<<"$line"
    oom_reported() { "$dl" get pods -A -o json --config "$cfg" 2>/dev/null | grep -qE '"reason": ?"OOMKilled"'; }
    wait_for "daemonlet get pods -o json reports the container OOMKilled (lastState.terminated)" 30 oom_reported
fi
info "daemonlet get pods: $(pods | grep oomexit)"
done_
