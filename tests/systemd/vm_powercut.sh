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
# synced on its own (fsync of that file). So is an Event queued for the
# cluster: the agent follows the test API server of this boot
# (vm_cgroup2.sh starts it before the agent, on the guest's loopback), whose
# DaemonSet it/apids runs; the server stops; a manifest file it/apids.yaml
# wins over the cluster's DaemonSet, for which the agent queues an Event
# (LocalManifestOverrides) it cannot send. Acknowledged means its row is in
# the store (a reader of the live database sees it, sqlite3): the agent
# flushes the queue as soon as an Event is queued. Its name goes to $ack.
# Then, with a new DaemonSet's file written and
# an image archive being imported, the board loses power: sysrq "b", an
# immediate reset without sync or unmount; qemu exits (-no-reboot).
#
# after (the second boot, daemonlet.powercut=after on the kernel command
# line, no network): the database as the cut left it was copied aside before
# the agent started (daemonlet-pc-snapshot.service; the host runs `PRAGMA
# integrity_check` on the copy); the agent did not move the database aside
# (quick_check at its open), is active (READY=1, Type=notify) and answers
# `status`; every DaemonSet whose file is on the disk (not left empty by the
# cut) runs its pod again, and the cluster's it/apids if apids.yaml was; the
# rollback is in force (the pod runs v1, the file says v2); each acknowledged
# revision is in `rollout history` once, and no revision is listed twice;
# each acknowledged Event is still queued in the store (no server yet),
# once under its name, and no name is queued twice. Then the test API
# server starts again (empty: its state is in memory) and takes it/apids
# back; once the agent has sent its queue, the server holds each
# acknowledged Event once, and no LocalManifestOverrides Event twice: not
# lost, sent once after the cut.
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
pod_running() { grep -qE "^${2:-cg2} +$1-[a-z0-9]+ +1/1 +Running" <<<"$(pods)"; }
revisions() { "$dl" rollout history ds/pc -n cg2 --config "$cfg" 2>/dev/null | awk '$1 ~ /^[0-9]+$/ { print $1 }'; }
has_revision() { grep -qx "$1" <<<"$(revisions)"; }
# The names of the Events queued for the cluster (the store's table
# cluster_events, read while the agent runs: a reader of its WAL) of REASON,
# or all; count_queued NAME: how many are queued under NAME.
queued_events() {
    sqlite3 -readonly -cmd '.timeout 5000' "$state/daemonlet.db" \
        "SELECT json_extract(event_json, '\$.eventName') FROM cluster_events WHERE '${1:-}' IN ('', json_extract(event_json, '\$.reason'))"
}
count_queued() { grep -cxF "$1" <<<"$(queued_events)"; }
# The test API server of the first boot (vm_cgroup2.sh): its /_control.
lib="$(dirname "${BASH_SOURCE[0]}")"
control() {
    curl -fsS --max-time 10 --cacert "$lib/cert.pem" -X "$1" "https://127.0.0.1:16443/_control/$2" "${@:3}"
}
# The cluster's DaemonSet it/apids (the same object, uid included, in both
# boots' servers).
apids='{"metadata": {"uid": "uid-apids"}, "spec": {"selector": {"matchLabels": {"app": "apids"}},
    "template": {"metadata": {"labels": {"app": "apids"}}, "spec": {"terminationGracePeriodSeconds": 2,
    "containers": [{"name": "main", "image": "busybox", "imagePullPolicy": "Never",
    "command": ["/bin/sh", "-c", "while :; do sleep 1; done", "cg2-apids-api"]}]}}}}'
# The Events the server holds in namespace it (GET .../events, as a client
# of the cluster reads them; the guest has no jq: sqlite3's JSON functions),
# one line each: name, reason, count.
server_events() {
    local list q="'"
    list="$(curl -fsS --max-time 10 --cacert "$lib/cert.pem" -H "Authorization: Bearer s3cret" \
        https://127.0.0.1:16443/api/v1/namespaces/it/events)" || return 1
    sqlite3 -separator ' ' :memory: "SELECT json_extract(value, '\$.metadata.name'), json_extract(value, '\$.reason'),
        json_extract(value, '\$.count') FROM json_each('${list//$q/$q$q}', '\$.items')"
}
# write_pc FILE NAME VERSION [NAMESPACE]: the loop DaemonSet whose argv[0]
# names VERSION.
write_pc() {
    cat >"$manifests/.$1.tmp" <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: $2, namespace: ${4:-cg2}}
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
    # An Event queued while the cluster is gone: the agent follows the test
    # API server (started before it in this boot only), which has DaemonSet
    # it/apids; the server stops; a manifest file of the same name then wins
    # over the cluster's (upstream has no such thing: the agent's own
    # LocalManifestOverrides, one Event on the cluster's DaemonSet), which
    # the agent queues and cannot send.
    event_start=$SECONDS
    wait_for "powercut: the test API server listens" 30 test -s /run/pc-apiserver.port || finish
    check "powercut: the test API server takes DaemonSet it/apids" control PUT daemonsets/it/apids -d "$apids"
    wait_for "powercut: the cluster's DaemonSet it/apids runs its pod" 120 pod_running apids it || finish
    check "powercut: the test API server is stopped" systemctl stop daemonlet-pc-apiserver.service
    write_pc apids.yaml apids v1 it
    overrides() { test -n "$(queued_events LocalManifestOverrides)"; }
    wait_for "powercut: the agent queues the Event LocalManifestOverrides in its store" 60 overrides || finish
    # Acknowledged: the Event's row is in the store (committed, which a
    # reader sees). The agent flushes the queue as soon as an Event is
    # queued (an fdatasync of the -wal, off its loop: milliseconds), and the
    # cut comes seconds later, after the steps below.
    events="$(queued_events LocalManifestOverrides | tr '\n' ' ')"
    info "the queued Event took $((SECONDS - event_start))s"
    mkdir -p "${ack%/*}"
    {
        echo "revisions $(revisions | tr '\n' ' ')"
        echo "rollback v1"
        echo "events $events"
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
# The Events queued before the cut are still queued (no server yet to send
# them to), each once under the name it was queued with.
read -r -a acked_events <<<"$(sed -n 's/^events //p' "$ack")"
check "powercut: an Event was acknowledged before the cut (${acked_events[*]})" test "${#acked_events[@]}" -gt 0
info "queued Events now: $(queued_events | tr '\n' ' ')"
for e in "${acked_events[@]}"; do
    check "powercut: acknowledged Event $e is queued once" test "$(count_queued "$e")" = 1
done
check "powercut: no Event is queued twice" test -z "$(queued_events | sort | uniq -d)"
# Then the cluster comes back: the test API server again (the same port,
# certificate and token; vm_cgroup2.sh's daemonlet-pc-apiserver-after),
# answering 503 until it holds the cluster's DaemonSet it/apids as the first
# boot's did (a list without it would remove the cached copy the checks
# below may find running), while the agent's reflector retries with
# back-off. Its state is in memory: it starts with no Events, so what it
# holds at the end is what the agent sent after the cut (the case of an
# Event sent before a cut whose removal from the queue the cut undid, the
# POST answered 409 AlreadyExists and counted as sent, is
# tests/agent/test_cluster.sh's kill -9: "the kept BackOff ... on the server
# once", eventConflicts 1).
server_start=$SECONDS
check "powercut: the test API server starts again" systemctl start daemonlet-pc-apiserver-after.service
wait_for "powercut: the test API server listens again" 30 test -s /run/pc-apiserver.port
check "powercut: the test API server takes DaemonSet it/apids again" control PUT daemonsets/it/apids -d "$apids"
check "powercut: the test API server answers the agent" control DELETE fault
for f in "$manifests"/*.yaml; do
    ds="$(basename "$f" .yaml)"
    [[ $ds == oomexit ]] && continue # a crash loop by design
    ns=cg2
    [[ $ds == apids ]] && ns=it # the file that won over the cluster's DaemonSet
    # A file written just before the cut and not synced (pc2.yaml) may be
    # left empty (ext4's delayed allocation): no DaemonSet, none to run.
    # So may apids.yaml: then the cluster's copy of it/apids, kept in the
    # store beside the file's (api_daemonsets, written before the queued
    # Event's flush), runs in its place without the server.
    if [[ ! -s $f ]]; then
        info "$f is empty after the cut (written, not synced): no DaemonSet $ns/$ds in it"
        if [[ $ds == apids ]]; then
            api_running() { grep -qsa 'cg2-apids-ap[i]' /proc/[0-9]*/cmdline; }
            wait_for "powercut: apids.yaml lost: the cluster's cached it/apids runs" 180 api_running
        fi
        continue
    fi
    wait_for "powercut: the pod of $ns/$ds runs again" 180 pod_running "$ds" "$ns"
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
# The cluster receives each acknowledged Event once: the agent sends its
# queue (no LocalManifestOverrides left in the store; the server holds
# every acknowledged name), then the server holds each under its name once,
# and its LocalManifestOverrides Events count (their counts summed) one per
# acknowledged Event: a file overrides the cluster's DaemonSet once per
# agent, and the first boot's agent reported it once. When apids.yaml
# survived the cut (the override still in force), this boot's agent reports
# it once more, as a new Event (its own recorder's name) or folded into the
# queued one (count 2): one more at most.
sent() {
    local on_server e
    on_server="$(server_events)" || return 1
    test -z "$(queued_events LocalManifestOverrides)" || return 1
    for e in "${acked_events[@]}"; do grep -q "^$e " <<<"$on_server" || return 1; done
}
wait_start=$SECONDS
wait_for "powercut: the agent sends its queued Events to the cluster once it is back" 60 sent
info "the Events reached the server $((SECONDS - server_start))s after it started (waited $((SECONDS - wait_start))s for them)"
on_server="$(server_events)"
info "the server's Events in it (name reason count): $(tr '\n' ';' <<<"$on_server")"
for e in "${acked_events[@]}"; do
    check "powercut: the cluster holds acknowledged Event $e once" test "$(grep -c "^$e " <<<"$on_server")" = 1
done
check "powercut: the cluster holds no Event name twice" test -z "$(cut -d' ' -f1 <<<"$on_server" | sort | uniq -d)"
overrides="$(awk '$2 == "LocalManifestOverrides" { n += $3 } END { print n + 0 }' <<<"$on_server")"
most=${#acked_events[@]}
[[ -s $manifests/apids.yaml ]] && most=$((most + 1))
check "powercut: the cluster counts LocalManifestOverrides $overrides times (${#acked_events[@]} acknowledged, at most $most)" \
    test "$overrides" -ge "${#acked_events[@]}" -a "$overrides" -le "$most"
finish
