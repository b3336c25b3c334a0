#!/usr/bin/env bash
# The CRI runtime's config volumes, read from inside the container
# (test_config_volumes_runc.sh has the same pod under runc): a downwardAPI
# and a projected volume that the agent writes and containerd bind-mounts,
# read-only whatever the mount says, with their files and modes, and the
# downward API env. And a hostNetwork pod's /etc/hosts and /etc/hostname
# as the kubelet gives them under CRI: the kubelet's file, not containerd's
# (kubelet_pods.go makeMounts, nodeHostsFileContent: the node's file under
# the host-network header, hostAliases appended), and the node's hostname
# (containerd's, from a sandbox without a hostname). Needs root and
# containerd; skips without them.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/lib.sh"
require_containerd
source "$here/cri_lib.sh"
source "$here/config_volumes_lib.sh"

start_containerd
wait_for "containerd answers on its socket" 20 containerd_up
import_images && ok || fail "ctr cannot import the test images"
DS_IMAGE=busybox:latest write_down_ds "hostNetwork: true
      hostAliases: [{ip: 203.0.113.9, hostnames: [reg.example, reg]}]"
start_agent
check_down_pod
{
    printf '# Kubernetes-managed hosts file (host network).\n'
    cat /etc/hosts
    printf '\n# Entries added by HostAliases.\n203.0.113.9\treg.example\treg\n'
} >"$work/hosts.expected"
cmp -s "$work/hosts.expected" "$out/hosts" && ok ||
    fail "hostNetwork /etc/hosts is not the kubelet's: $(diff "$work/hosts.expected" "$out/hosts" | head -5)"
[[ $(cat "$out/hostname") == "$(hostname)" ]] && ok || fail "hostNetwork /etc/hostname: $(cat "$out/hostname")"
finish
