#!/usr/bin/env bash
# A SIGHUP while the stateDir is full (issue 15 §3): the Events queued for
# the cluster while the disk refused them are held in memory (Storage), not
# in what the store lists, so the new ClusterLink a reload makes must take
# the old link's queue and seqs rather than read the store. With the API
# server refusing Events (503), DaemonSets put on it queue their
# SuccessfulCreate: one before the disk fills (in the store), one after
# (held in memory). The configuration is reloaded to another address of the
# same server (a new link), then space returns and the server takes Events
# again: each Event reaches it exactly once (one POST per Event, no 409 for
# a name posted twice), none is lost.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/cluster_lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/disk_lib.sh"
disk_mount

start_notify_listener

loop='trap \"exit 0\" TERM; while true; do sleep 0.2; done'
configure() {  # configure HOST: the configuration, following the test API server at https://HOST:$port
    write_kubeconfig "$work/kubeconfig.$1" "$port"
    sed -i "s|https://127.0.0.1:|https://$1:|" "$work/kubeconfig.$1"
    write_config "{}" "[]"
    printf 'apiServer:\n  kubeconfig: %s\n  requestTimeout: 2s\n' "$work/kubeconfig.$1" >>"$cfg"
}
# The SuccessfulCreate Events of DaemonSet $1 the server has, one line each.
created_on_server() {
    stats | jq -r --arg n "$1" '.events[] | select(.reason == "SuccessfulCreate" and .involvedObject.name == $n) | .metadata.name'
}
in_store() { sqlite3 -readonly "$state/daemonlet.db" 'select event_json from cluster_events' | grep -q "\"name\":\"$1\""; }
status_has() { "$dl" status -o json --config "$cfg" | jq -e "$1"; }
export -f status_has in_store
export dl cfg state

start_fake
configure 127.0.0.1
start_own_agent
wait_ready 0
wait_for "the link is connected" 10 status_has '.apiServer.state == "connected"'
fault '{"match": "event", "mode": "status", "status": 503, "count": 100000}'

put_ds before "$loop"
wait_for "before's Event is queued" 10 status_has '.apiServer.events.queued >= 1'
wait_for "before's Event is in the store" 5 in_store before
disk_fill
put_ds during "$loop"
wait_for "the stateDir is full" 10 status_has '.storage.writable == false'
wait_for "during's Event is queued" 10 status_has '.apiServer.events.queued >= 2'
in_store during && fail "during's Event reached the store on a full disk" || ok

# The reload: another address of the same server, so a new ClusterLink.
configure localhost
kill -HUP "$agent"
wait_for "the new link follows the new address" 5 status_has '.apiServer.server | startswith("https://localhost:")'

disk_free
wait_for "the stateDir takes writes again" 10 status_has '.storage.writable == true and .storage.pending == 0'
clear_faults
wait_for "every queued Event is sent" 15 status_has '.apiServer.events.queued == 0'
for ds in before during; do
    n=$(created_on_server $ds | wc -l)
    [[ $n == 1 ]] && ok || fail "$ds's SuccessfulCreate reached the server $n times, not once"
done
stats | jq -e '.eventConflicts == 0 and ([.events[].metadata.name] | length == (unique | length))' >/dev/null && ok ||
    fail "an Event was posted twice: $(stats | jq -c '{eventConflicts, names: [.events[].metadata.name]}')"
stop_agent TERM
finish
