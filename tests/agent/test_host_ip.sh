#!/usr/bin/env bash
# status.hostIP / hostIPs and a hostNetwork pod's status.podIP / podIPs in
# `daemonlet get pods -o json`, as the kubelet reports them
# (pkg/kubelet/kubelet_pods.go generateAPIPodStatus: every pod's hostIPs are
# the node's IPs, nodeutil.GetNodeHostIPs; "HostNetwork Pods inherit the
# node IPs as PodIPs"). The node's IPs are nodeIP (kubelet's --node-ip,
# validated as ParseNodeIPArgument and validateNodeIP do), else the default
# route's interface's address (apimachinery's ChooseHostInterface). The
# exec runtime's pods all share the node's network, so they all have the
# node's IP as podIP, hostNetwork or not.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

pods_json() { "$dl" get pods -A -o json --config "$cfg"; }
pod_field() {  # pod_field DAEMONSET JQ_EXPRESSION
    pods_json | jq -r --arg n "$1" ".items[] | select(.metadata.name | startswith(\$n + \"-\")) | $2"
}
host_ips() { pod_field "$1" '[.status.hostIPs[]?.ip] | join(",")'; }
pod_ips() { pod_field "$1" '[.status.podIPs[]?.ip] | join(",")'; }
is() { [[ $("${@:2}") == "$1" ]]; }  # is EXPECTED COMMAND...

# 1. A bad nodeIP stops the agent from starting, naming file, key, reason.
refused() {  # refused NODE_IP REASON
    write_config "{}" "[]"
    echo "nodeIP: \"$1\"" >>"$cfg"
    local out rc
    out=$(timeout 20 "$dl" run --config "$cfg" 2>&1)
    rc=$?
    [[ $rc -ne 0 && $rc -ne 124 ]] && ok || fail "nodeIP \"$1\": run exited $rc, not with an error"
    [[ $out == *"$cfg: nodeIP: $2"* ]] && ok || fail "nodeIP \"$1\": no \"$cfg: nodeIP: $2\" in: $out"
}
refused "198.51.100.7,198.51.100.8" '"198.51.100.7,198.51.100.8": at most one IPv4 and one IPv6 address'
refused "edge-01" '"edge-01" is not an IP address'
refused "127.0.0.1" '"127.0.0.1": nodeIP can'"'"'t be loopback address'
[[ ! -e $state/daemonlet.db ]] && ok || fail "a refused configuration opened the store"

# 2. A good nodeIP: every pod's hostIP, and the hostNetwork pod's podIP.
start_notify_listener
write_config "{}" "[]"
echo "nodeIP: 198.51.100.7" >>"$cfg"
write_ds hostnet.yaml hostnet 'trap \"exit 0\" TERM; while true; do sleep 0.2; done' "hostNetwork: true"
write_ds plain.yaml plain 'trap \"exit 0\" TERM; while true; do sleep 0.2; done'
start_agent
wait_for "hostnet runs" 10 pod_running it hostnet
wait_for "plain runs" 10 pod_running it plain
wait_for "the agent logs the node IP it uses" 5 grepq 'node IP: 198.51.100.7 (nodeIP)' "$work/agent.log"
for ds in hostnet plain; do
    wait_for "$ds: status.hostIP is nodeIP" 10 is 198.51.100.7 pod_field $ds .status.hostIP
    is 198.51.100.7 host_ips $ds && ok || fail "$ds: status.hostIPs is '$(host_ips $ds)'"
done
wait_for "hostnet: status.podIP is the node's" 10 is 198.51.100.7 pod_field hostnet .status.podIP
is 198.51.100.7 pod_ips hostnet && ok || fail "hostnet: status.podIPs is '$(pod_ips hostnet)'"
# The exec runtime's pod without hostNetwork is in the node's network too.
wait_for "plain (exec runtime, the node's network): podIP" 10 is 198.51.100.7 pod_field plain .status.podIP

# 3. Dual stack on SIGHUP: both IPs, the order as given (the primary first).
write_config "{}" "[]"
echo 'nodeIP: "2001:DB8::7,198.51.100.7"' >>"$cfg"
kill -HUP "$agent"
wait_for "dual stack: hostIPs" 10 is "2001:db8::7,198.51.100.7" host_ips plain
wait_for "dual stack: hostIP is the primary" 10 is "2001:db8::7" pod_field plain .status.hostIP
wait_for "dual stack: a hostNetwork pod's podIPs" 10 is "2001:db8::7,198.51.100.7" pod_ips hostnet

# 4. Without nodeIP: the IPv4 default route's interface's global address
# (chooseHostInterfaceFromRoute), where this machine has one.
write_config "{}" "[]"
kill -HUP "$agent"
dev=$(ip -4 route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')
want=
[[ -n $dev ]] && want=$(ip -4 -o addr show dev "$dev" scope global 2>/dev/null | awk '{split($4, a, "/"); print a[1]; exit}')
if [[ -n $want ]]; then
    wait_for "no nodeIP: hostIP is $dev's $want" 10 is "$want" pod_field plain .status.hostIP
    wait_for "no nodeIP: hostnet's podIPs are [$want]" 10 is "$want" pod_ips hostnet
    grepq "node IP: $want (the default route's interface" "$work/agent.log" && ok ||
        fail "the agent did not log the chosen node IP $want"
else
    echo "note: no IPv4 default route with a global address here; the chosen IP is not checked"
fi

# 5. The store keeps them: get shows the same while the agent is stopped.
before=$(pod_field hostnet .status.hostIP)
kill -TERM "$agent"
wait "$agent" 2>/dev/null
agent=
is "$before" pod_field hostnet .status.hostIP && ok ||
    fail "with the agent stopped, hostIP is '$(pod_field hostnet .status.hostIP)', not '$before'"

finish
