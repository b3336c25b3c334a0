#!/usr/bin/env bash
# runtime: {type: cri} with a pod network: containerd (cri_lib.sh, started
# here with its own configuration) gives pods without hostNetwork a network
# of their own through a bridge CNI conflist (Debian's
# containernetworking-plugins: bridge, host-local IPAM on a private subnet,
# isGateway, no ipMasq). containerd and the agent run in a network
# namespace the test makes (cri_lib.sh's CRI_BRIDGE_SUBNET), so the bridge
# never touches the machine's network; it goes with that namespace at the
# end, as do the pods' namespaces, also when a check fails.
#
# Checks: a pod without hostNetwork gets an IP in the subnet, reported as
# status.podIP / podIPs (kubelet_pods.go generateAPIPodStatus: the
# sandbox's IPs, kuberuntime_sandbox.go determinePodSandboxIPs); its
# container has a network namespace of its own; an httpGet readiness probe
# reaches a busybox httpd in it on port 8080 at the pod's IP (prober.go
# runProbe: status.PodIP when the probe sets no host; nothing listens on
# 8080 in the agent's own namespace, so a probe of 127.0.0.1 would fail);
# a hostPort without hostNetwork reaches the pod through the CNI portmap
# plugin (the sandbox's port_mappings: MakePortMappings); a tcpSocket probe
# on a closed port keeps another pod unready, the reason
# in the agent's log; two DaemonSets listening on the same port do not
# conflict; kill -9 of the agent, and the new agent adopts the pod with the
# same IP and it is ready again. The pod's /etc/hosts is the kubelet's
# (kubelet_pods.go makeMounts, managedHostsFileContent: its header and the
# pod's IP with its name, the sandbox's hostname), not containerd's.
# Needs root, containerd, ip, nsenter and the bridge plugin; skips without.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
[[ $(id -u) -eq 0 ]] || { echo "SKIPPED: containerd and network namespaces need root"; exit 0; }
containerd_bin=$(command -v containerd) || { echo "SKIPPED: containerd is not installed (apt-get install containerd)"; exit 0; }
[[ -z ${EMULATOR:-} ]] || { echo "SKIPPED: not under an emulator"; exit 0; }
command -v ip >/dev/null || { echo "SKIPPED: ip is missing (apt-get install iproute2)"; exit 0; }
command -v nsenter >/dev/null || { echo "SKIPPED: nsenter is missing (apt-get install util-linux)"; exit 0; }
for plugin in bridge host-local loopback portmap; do
    [[ -x /usr/lib/cni/$plugin ]] || { echo "SKIPPED: /usr/lib/cni/$plugin is missing (apt-get install containernetworking-plugins)"; exit 0; }
done
subnet_prefix=10.213.77
CRI_BRIDGE_SUBNET=$subnet_prefix.0/24
source "$here/lib.sh"
source "$here/cri_lib.sh"

# The agent in containerd's network namespace: its probes connect from
# there, as the kubelet's from the node.
start_agent() {
    NOTIFY_SOCKET=$work/notify.sock "${in_cri_netns[@]}" "$dl" run --config "$cfg" >>"$work/agent.log" 2>&1 &
    agent=$!
}
get_pods_json() { "$dl" get pods -A -o json --config "$cfg"; }
pod_json() { get_pods_json | jq -c --arg ds "$1" '.items[] | select(.metadata.name | startswith($ds + "-"))'; }
pod_ip() { pod_json "$1" | jq -r '.status.podIP // empty'; }
pod_ips() { pod_json "$1" | jq -r '[.status.podIPs[]?.ip] | join(",")'; }
container_id() { pod_json "$1" | jq -r '.status.containerStatuses[0].containerID // empty' | sed 's|^cri://||'; }
task_pid() { c tasks ls 2>/dev/null | awk -v id="$1" '$1 == id && $3 == "RUNNING" { print $2 }'; }
pod_not_ready_running() { get_pods | grep -E "^it +$1-[a-z0-9]+ +0/1 +Running"; }

# A busybox httpd on 8080 in the pod's own network, with an httpGet
# readiness probe (no host: the pod's IP).
write_web_ds() {  # write_web_ds FILE NAME [HOST_PORT]
    DS_IMAGE=busybox:latest write_ds "$1" "$2" \
        'busybox mkdir -p /www && echo $POD > /www/index.html && cat /etc/hosts > /www/hosts && cat /etc/hostname > /www/hostname && exec busybox httpd -f -p 8080 -h /www' "" "" \
        "          env: [{name: POD, value: \"$2\"}]
          imagePullPolicy: IfNotPresent
          ports: [{name: http, containerPort: 8080${3:+, hostPort: $3}}]
          readinessProbe: {httpGet: {path: /index.html, port: http}, periodSeconds: 1, timeoutSeconds: 2}"
}

start_containerd
wait_for "containerd answers on its socket" 20 containerd_up
import_images || { fail "ctr cannot import the test images"; finish; exit; }
start_agent

# 1. A pod without hostNetwork: an IP in the bridge's subnet, in its status,
# and ready through its httpGet probe at that IP.
write_web_ds web.yaml web 18080
wait_for "web runs and is ready (its httpGet probe reached the pod's IP)" 40 pod_running it web
ip=$(pod_ip web)
[[ $ip == "$subnet_prefix".* ]] && ok || fail "status.podIP is '$ip', not in $CRI_BRIDGE_SUBNET"
[[ $(pod_ips web) == "$ip" ]] && ok || fail "status.podIPs is '$(pod_ips web)', not [$ip]"
id=$(container_id web)
pid=$(task_pid "$id")
[[ -n $id && -n $pid ]] && ok || fail "no running CRI container for web (id '$id', pid '$pid')"
# Its own network namespace: neither the host's nor containerd's.
own_ns=$(readlink "/proc/$pid/ns/net")
[[ -n $own_ns && $own_ns != $(readlink /proc/self/ns/net) &&
    $own_ns != $(readlink "/proc/$containerd_pid/ns/net") ]] && ok ||
    fail "the container's network namespace ($own_ns) is not its own"
# The address is the container's, and the server answers there.
nsenter --net="/proc/$pid/ns/net" ip -o -4 addr show | grepq " $ip/" && ok ||
    fail "the container's namespace has no address $ip"
[[ $("${in_cri_netns[@]}" busybox wget -q -O - "http://$ip:8080/index.html" 2>&1) == web ]] && ok ||
    fail "httpd does not answer at $ip:8080"
# hostPort 18080 without hostNetwork: the CNI portmap plugin maps the
# node's port (here the bridge's gateway address) to the pod's 8080.
[[ $("${in_cri_netns[@]}" busybox wget -q -O - "http://$subnet_prefix.1:18080/index.html" 2>&1) == web ]] && ok ||
    fail "hostPort 18080 does not reach web's httpd through portmap"
# The probe went to the pod's IP: nothing listens on 8080 in the agent's namespace.
! "${in_cri_netns[@]}" bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080' 2>/dev/null && ok ||
    fail "something listens on 127.0.0.1:8080 in the agent's namespace: the probe's target is not proven"

# /etc/hosts from inside: the kubelet's header, the pod's IP with its
# name (its hostname, the sandbox's).
name=$(pod_json web | jq -r .metadata.name)
hosts=$("${in_cri_netns[@]}" busybox wget -q -O - "http://$ip:8080/hosts" 2>&1)
[[ $(head -1 <<<"$hosts") == "# Kubernetes-managed hosts file." ]] && grep -qx "$ip"$'\t'"$name" <<<"$hosts" && ok ||
    fail "web's /etc/hosts is not the kubelet's: $hosts"
[[ $("${in_cri_netns[@]}" busybox wget -q -O - "http://$ip:8080/hostname" 2>&1) == "$name" ]] && ok ||
    fail "web's /etc/hostname is not its name $name"

# 2. Another DaemonSet on the same port: its own IP, no conflict, ready.
write_web_ds web2.yaml web2
wait_for "web2 runs and is ready on the same port" 40 pod_running it web2
ip2=$(pod_ip web2)
[[ $ip2 == "$subnet_prefix".* && $ip2 != "$ip" ]] && ok || fail "web2's podIP '$ip2' (web's '$ip')"
[[ $("${in_cri_netns[@]}" busybox wget -q -O - "http://$ip2:8080/index.html" 2>&1) == web2 ]] && ok ||
    fail "web2's httpd does not answer at $ip2:8080"
pod_running it web >/dev/null && ok || fail "web is no longer ready once web2 runs"

# 3. A tcpSocket probe on a port nothing listens on: running, never ready,
# and the agent says why (the pod's IP and port refused).
DS_IMAGE=busybox:latest write_ds closed.yaml closed 'while :; do sleep 1; done' "" "" \
    "          imagePullPolicy: IfNotPresent
          readinessProbe: {tcpSocket: {port: 9099}, periodSeconds: 1, timeoutSeconds: 1}"
wait_for "closed runs, unready" 40 pod_not_ready_running closed
closed_ip=$(pod_ip closed)
[[ $closed_ip == "$subnet_prefix".* ]] && ok || fail "closed's podIP is '$closed_ip'"
closed_reason_logged() { grep -E "container main: Readiness probe failed: .*$closed_ip:9099" "$work/agent.log"; }
wait_for "the failed tcpSocket probe is logged with the pod's address" 15 closed_reason_logged
grep -E "Readiness probe failed: .*$closed_ip:9099" "$work/agent.log" | head -1
# Still unready a few periods later (a wait on the pod's status, not a sleep:
# the probe has run again since the log line).
pod_not_ready_running closed >/dev/null && ok || fail "closed became ready"

# 4. kill -9 of the agent: the new agent adopts web with the same IP, and
# its probe passes again (readiness starts over at adoption).
kill -9 "$agent"
wait "$agent" 2>/dev/null
start_agent
wait_for "the new agent adopts the containers" 20 grep -q 'adopted 3 running container' "$work/agent.log"
wait_for "web is ready again after the restart" 30 pod_running it web
[[ $(container_id web) == "$id" && $(pod_ip web) == "$ip" ]] && ok ||
    fail "after adoption: container $(container_id web) (was $id), IP $(pod_ip web) (was $ip)"
pod_not_ready_running closed >/dev/null && ok || fail "closed is not running unready after the restart"

finish
