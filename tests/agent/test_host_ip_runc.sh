#!/usr/bin/env bash
# The runc runtime's pods and the node's IPs (test_host_ip.sh has the exec
# runtime's): a hostNetwork container has the node's IP as status.podIP
# (kubelet_pods.go generateAPIPodStatus: "HostNetwork Pods inherit the node
# IPs as PodIPs"); one without hostNetwork is alone in a network namespace
# with only loopback (daemonlet sets up no CNI network for runc), so it has
# no podIP; both have the node's hostIP. Needs root, runc and
# busybox-static; skips without them.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/lib.sh"
require_runc

runc_busybox_import

write_runc_config "$import"
echo "nodeIP: 198.51.100.7" >>"$cfg"
DS_IMAGE=busybox write_ds own.yaml own 'while :; do sleep 1; done'
DS_IMAGE=busybox write_ds hostnet.yaml hostnet 'while :; do sleep 1; done' "hostNetwork: true"
start_agent

pod_field() {  # pod_field DAEMONSET JQ_EXPRESSION
    "$dl" get pods -A -o json --config "$cfg" |
        jq -r --arg n "$1" ".items[] | select(.metadata.name | startswith(\$n + \"-\")) | $2"
}
is() { [[ $("${@:2}") == "$1" ]]; }  # is EXPECTED COMMAND...

wait_for "own (no hostNetwork) runs" 60 pod_running it own
wait_for "hostnet runs" 60 pod_running it hostnet
wait_for "hostnet: status.podIP is the node's" 10 is 198.51.100.7 pod_field hostnet '.status.podIP // ""'
for ds in own hostnet; do
    is 198.51.100.7 pod_field $ds '.status.hostIP // ""' && ok ||
        fail "$ds: status.hostIP is '$(pod_field $ds .status.hostIP)'"
done
is "" pod_field own '.status.podIP // ""' && ok || fail "own: status.podIP is '$(pod_field own .status.podIP)', not none"
is "" pod_field own '[.status.podIPs[]?.ip] | join(",")' && ok || fail "own: status.podIPs are not empty"
# Its network namespace has only loopback, as said.
own_id=$(pod_field own '.status.containerStatuses[0].containerID' | sed 's|^runc://||')
if [[ -n $own_id ]] && pid=$(rc state "$own_id" 2>/dev/null | sed -n 's/^ *"pid": \([0-9]*\),/\1/p') && [[ -n $pid ]]; then
    links=$(nsenter -t "$pid" -n ip -o link 2>/dev/null | awk -F': ' '{print $2}' | tr '\n' ' ')
    [[ $links == "lo " ]] && ok || fail "own's network namespace has '$links', not only lo"
else
    fail "own: no runc container found ($own_id)"
fi

finish
