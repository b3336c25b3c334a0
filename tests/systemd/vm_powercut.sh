#!/bin/bash
# A power cut (issue 15 §2), run inside the VM of tests/systemd/vm_cgroup2.sh
# in two boots of the same disk. Prints "cg2: PASS/FAIL/INFO: ..." lines as
# vm_cgroup2_check.sh does, which the host counts with the cgroup v2 checks.
#
# usage: vm_powercut.sh cut DAEMONLET CONFIG STATE_DIR MANIFEST_DIR IMPORT_DIR
#        vm_powercut.sh after DAEMONLET CONFIG STATE_DIR MANIFEST_DIR IMPORT_DIR
#
# cut (the first boot, after the cgroup v2 checks, the agent running with
# runtime runc): a new DaemonSet cg2/pc runs template v1; its file is
# changed to v2 and the agent records revision 2; `rollout
# undo` puts v1 back in force (revision 3) and answers "rolled back". What the
# agent acknowledged (the revisions, the rollback) is written to $ack and
# synced on its own (fsync of that file). Then, with a new DaemonSet's file written and
# an image archive being imported, the board loses power: sysrq "b", an
# immediate reset without sync or unmount; qemu exits (-no-reboot).
#
# after (the second boot, daemonlet.powercut=after on the kernel command
# line, no network): the database as the cut left it was copied aside before
# the agent started (daemonlet-pc-snapshot.service; the host runs `PRAGMA
# integrity_check` on the copy); the agent did not move the database aside
# (quick_check at its open), is active (READY=1, Type=notify) and answers
# `status`; every DaemonSet whose file is on the disk (not left empty by the
# cut) runs its pod again; the
# rollback is in force (the pod runs v1, the file says v2); each acknowledged
# revision is in `rollout history` once, and no revision is listed twice.
#
# The predicates are called indirectly, through wait_for and check.
# shellcheck disable=SC2317
set -u
phase=$1 dl=$2 cfg=$3 state=$4 manifests=$5 import_dir=$6
ack=/var/lib/daemonlet-powercut/acked

check_ok="cg2: PASS:" check_fail="cg2: FAIL:"
# shellcheck source=tests/systemd/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
info() { echo "cg2: INFO: powercut: $*"; }
pods() { "$dl" get pods -A --config "$cfg"; }
pod_running() { grep -qE "^cg2 +$1-[a-z0-9]+ +1/1 +Running" <<<"$(pods)"; }
revisions() { "$dl" rollout history ds/pc -n cg2 --config "$cfg" 2>/dev/null | awk '$1 ~ /^[0-9]+$/ { print $1 }'; }
has_revision() { grep -qx "$1" <<<"$(revisions)"; }
# write_pc FILE NAME VERSION: the loop DaemonSet whose argv[0] names VERSION.
write_pc() {
    cat >"$manifests/.$1.tmp" <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: $2, namespace: cg2}
spec:
  selector: {matchLabels: {app: $2}}
  template:
    metadata: {labels: {app: $2}}
    spec:
      containers:
        - name: main
          image: busybox
          imagePullPolicy: Never
          command: ["/bin/sh", "-c", "while :; do sleep 1; done", "cg2-$2-$3"]
EOF
    mv "$manifests/.$1.tmp" "$manifests/$1"
}
finish() {
    if ((failed > 0)); then
        info "---- daemonlet get pods"
        pods 2>&1 | sed 's/^/cg2: INFO: /'
        info "---- journalctl -u daemonlet (last 30)"
        journalctl --no-pager -o cat -n 30 -u daemonlet.service 2>&1 | sed 's/^/cg2: INFO: /'
    fi
    echo "cg2: DONE: $passed passed, $failed failed"
    exit $((failed > 0))
}

# The cut phase's lines go to a file, synced before the cut and printed by
# the second boot: lines on their way to the console through journald are
# lost at the reset.
cut_log=/var/lib/daemonlet-powercut/cut.log
if [[ $phase == cut ]]; then
    mkdir -p "${cut_log%/*}"
    exec >"$cut_log" 2>&1
    write_pc pc.yaml pc v1
    wait_for "powercut: the pod of cg2/pc (v1) runs" 120 pod_running pc || finish
    write_pc pc.yaml pc v2
    wait_for "powercut: the agent records revision 2 of cg2/pc (rollout history)" 60 has_revision 2 || finish
    out="$("$dl" rollout undo ds/pc -n cg2 --config "$cfg" 2>&1)"
    check "powercut: rollout undo ds/pc answers \"rolled back\" ($out)" grep -q 'rolled back' <<<"$out"
    wait_for "powercut: the agent records revision 3 (v1 renumbered)" 60 has_revision 3 || finish
    mkdir -p "${ack%/*}"
    {
        echo "revisions $(revisions | tr '\n' ' ')"
        echo "rollback v1"
    } >"$ack"
    # fsync of the file and its directory only (not syncfs, `sync -f`, which
    # would flush the agent's writes too).
    check "powercut: what was acknowledged is synced ($(tr '\n' ';' <"$ack"))" sync "$ack" "${ack%/*}"
    # In flight: a new DaemonSet (its revision, its pod) and an import.
    write_pc pc2.yaml pc2 v1
    cp "$import_dir/busybox.tar" "$import_dir/.busybox2.tar.tmp" &&
        mv "$import_dir/.busybox2.tar.tmp" "$import_dir/busybox2.tar"
    known() { grep -qE '^cg2 +pc2-' <<<"$(pods)"; }
    wait_for "powercut: the agent has made the new DaemonSet's pod" 60 known || finish
    ((failed == 0)) || finish
    echo "cg2: INFO: powercut: CUT (sysrq b)"
    sync "$cut_log" "${cut_log%/*}"
    echo 1 >/proc/sys/kernel/sysrq
    echo b >/proc/sysrq-trigger
    sleep 30 # the reset comes first
    exit 1
fi

# after: first the lines of the cut phase.
if grep -q '^cg2: INFO: powercut: CUT' "$cut_log" 2>/dev/null; then
    grep -aE '^cg2: (PASS|FAIL|INFO): ' "$cut_log"
    passed=$((passed + $(grep -c '^cg2: PASS: ' "$cut_log"))) failed=$((failed + $(grep -c '^cg2: FAIL: ' "$cut_log")))
else
    grep -aE '^cg2: (PASS|FAIL|INFO): ' "$cut_log" 2>/dev/null
    fail "powercut: the first boot cut the power (its record $cut_log says so)"
    finish
fi
corrupt="$(ls -d "$state"/daemonlet.db.corrupt-* 2>/dev/null)"
check "powercut: the agent kept the database (nothing moved aside: ${corrupt:-none})" test -z "$corrupt"
check "powercut: the acknowledged record survived ($(tr '\n' ';' <"$ack" 2>&1))" test -s "$ack"
active() { test "$(systemctl is-active daemonlet.service)" = active; }
wait_for "powercut: daemonlet.service is active (READY=1) without the network" 120 active || finish
check "powercut: daemonlet status -o json answers" "$dl" status -o json --config "$cfg"
for f in "$manifests"/*.yaml; do
    ds="$(basename "$f" .yaml)"
    [[ $ds == oomexit ]] && continue # a crash loop by design
    # A file written just before the cut and not synced (pc2.yaml) may be
    # left empty (ext4's delayed allocation): no DaemonSet, none to run.
    if [[ ! -s $f ]]; then
        info "$f is empty after the cut (written, not synced): no DaemonSet cg2/$ds"
        continue
    fi
    wait_for "powercut: the pod of cg2/$ds runs again" 180 pod_running "$ds"
done
# (The tree has no pgrep: the processes' command lines, with a pattern that
# does not match grep's own.)
v1_running() { grep -qsa 'cg2-pc-v[1]' /proc/[0-9]*/cmdline && ! grep -qsa 'cg2-pc-v[2]' /proc/[0-9]*/cmdline; }
check "powercut: the file says v2" grep -q cg2-pc-v2 "$manifests/pc.yaml"
wait_for "powercut: the rollback is in force: the pod runs v1, none runs v2" 120 v1_running
now="$(revisions | tr '\n' ' ')"
info "rollout history ds/pc now: $now"
read -r -a acked <<<"$(sed -n 's/^revisions //p' "$ack")"
for r in "${acked[@]}"; do
    check "powercut: acknowledged revision $r is in rollout history" has_revision "$r"
done
check "powercut: no revision is listed twice" test -z "$(revisions | sort | uniq -d)"
finish
