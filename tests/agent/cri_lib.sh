# Shared by test_cri.sh and bench/bench_cri.sh (sourced after lib.sh): a
# containerd of their own, with its own configuration, root, state and
# socket under $work, run under `tini -s` so that exited shims are reaped;
# the busybox image and a busybox "pause" image (a long sleep, the pod
# sandbox's) built and ready for import_images; the agent's configuration
# for runtime.type cri. The trap kills every task, containerd and its shims.
#
# A pod network (test_cri_cni.sh): with CRI_BRIDGE_SUBNET set (e.g.
# 10.213.0.0/24) before sourcing, containerd's CNI configuration is a
# bridge conflist (Debian's containernetworking-plugins: bridge with
# host-local IPAM, isGateway, no ipMasq so no iptables NAT) on a bridge
# named $cri_bridge, and containerd runs in a network namespace of its own,
# $cri_netns (nsenter --net: its mounts stay the host's), so that neither the
# bridge nor the ip_forward the bridge plugin turns on touch the machine's
# network. "${in_cri_netns[@]}" CMD... runs a command there (the agent,
# whose probes must reach the pods' IPs): an array, not a function, so that
# `... &` gives the command's own pid in $! (nsenter execs it). The trap also removes the pods' network
# namespaces, the bridge and $cri_netns.
ctr_bin=$(command -v ctr) || { echo "FAIL: ctr is missing (it comes with containerd)"; exit 1; }
tini_bin=$(command -v tini) || { echo "FAIL: tini is missing (apt-get install tini)"; exit 1; }
[[ -x /bin/busybox ]] || { echo "FAIL: /bin/busybox is missing (apt-get install busybox-static)"; exit 1; }
[[ -x /usr/lib/cni/loopback ]] || { echo "FAIL: /usr/lib/cni/loopback is missing (apt-get install containernetworking-plugins)"; exit 1; }

cd_dir=$work/containerd
sock=$cd_dir/containerd.sock
data=$work/data
mkdir -p "$cd_dir/cni" "$data"
containerd_pid=
cri_netns=
cri_bridge=
in_cri_netns=()
if [[ -n ${CRI_BRIDGE_SUBNET:-} ]]; then
    cri_netns=daemonlet-cni-$$
    cri_bridge=dlbr$$
    ip netns add "$cri_netns" || { echo "SKIPPED: ip netns add fails here (no CAP_NET_ADMIN or no network namespaces)"; exit 0; }
    ip -n "$cri_netns" link set lo up
    in_cri_netns=(nsenter --net="/var/run/netns/$cri_netns" --)
fi
c() { "$ctr_bin" --address "$sock" --namespace k8s.io "$@"; }
cri_cleanup() {
    [[ -n $agent ]] && kill -9 "$agent" 2>/dev/null
    # Every task of this containerd, then containerd, then its shims (their
    # command line holds the socket's path), then what is still mounted.
    # The pods' network namespaces, which containerd mounts under
    # /var/run/netns and would remove at StopPodSandbox: asked for before
    # containerd goes.
    local pod_netns=
    if [[ -n $cri_netns && -n $containerd_pid ]]; then
        pod_netns=$(for id in $(c containers ls -q 'labels."io.cri-containerd.kind"==sandbox' 2>/dev/null); do
            c containers info "$id" 2>/dev/null | jq -r '.Spec.linux.namespaces[]? | select(.type == "network") | .path // empty'
        done)
    fi
    if [[ -n $containerd_pid ]]; then
        for id in $(c tasks ls -q 2>/dev/null); do c tasks kill -s KILL "$id" >/dev/null 2>&1; done
        for id in $(c tasks ls -q 2>/dev/null); do c tasks delete -f "$id" >/dev/null 2>&1; done
        kill "$containerd_pid" 2>/dev/null
        wait "$containerd_pid" 2>/dev/null
    fi
    pkill -KILL -f "containerd-shim.*$sock" 2>/dev/null
    awk -v w="$work" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
    local ns
    for ns in $pod_netns; do
        [[ $ns == /var/run/netns/cni-* || $ns == /run/netns/cni-* ]] || continue
        umount "$ns" 2>/dev/null
        rm -f "$ns"
    done
    # The bridge and the veths are the namespace's: they go with it.
    [[ -n $cri_netns ]] && ip netns del "$cri_netns" 2>/dev/null
    cleanup
}
trap cri_cleanup EXIT

if [[ -n ${CRI_BRIDGE_SUBNET:-} ]]; then
    cat >"$cd_dir/cni/10-bridge.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "daemonlet-test", "plugins": [{"type": "bridge", "bridge": "$cri_bridge",
 "isGateway": true, "ipMasq": false,
 "ipam": {"type": "host-local", "ranges": [[{"subnet": "$CRI_BRIDGE_SUBNET"}]], "dataDir": "$cd_dir/ipam"}},
 {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
else
    cat >"$cd_dir/cni/10-loopback.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "daemonlet-test", "plugins": [{"type": "loopback"}]}
EOF
fi
cat >"$cd_dir/config.toml" <<EOF
version = 2
root = "$cd_dir/root"
state = "$cd_dir/state"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "daemonlet.test/pause:1"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$cd_dir/cni"
EOF
daemon_log=$work/containerd.log
start_containerd() {
    "${in_cri_netns[@]}" "$tini_bin" -s -- "$containerd_bin" --config "$cd_dir/config.toml" >>"$work/containerd.log" 2>&1 &
    containerd_pid=$!
}
containerd_up() { c version; }

cri_here=$(dirname "${BASH_SOURCE[0]}")
"$cri_here/../data/make_busybox_image.sh" "$work/busybox.tar" >/dev/null || { echo "FAIL: cannot build the image"; exit 1; }
IMAGE_CMD='["sleep","2147483647"]' "$cri_here/../data/make_busybox_image.sh" "$work/pause.tar" daemonlet.test/pause:1 \
    >/dev/null || { echo "FAIL: cannot build the pause image"; exit 1; }
import_images() {
    c images import --snapshotter native "$work/pause.tar" >/dev/null &&
        c images import --snapshotter native "$work/busybox.tar" >/dev/null
}

cat >"$cfg" <<EOF
nodeName: it-node
manifestDir: $man
stateDir: $state
metricsBindAddress: $metrics_bind
runtime: {type: cri, endpoint: "unix://$sock"}
fileCheckFrequency: 2s
crashLoopBackoff: {initial: 300ms, max: 2s}
EOF
