#!/usr/bin/env bash
# The CRI runtime's config volumes, read from inside the container
# (test_config_volumes_runc.sh has the same pod under runc): a downwardAPI
# and a projected volume that the agent writes and containerd bind-mounts,
# read-only whatever the mount says, with their files and modes, and the
# downward API env. Needs root and containerd; skips without them.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/lib.sh"
require_containerd
source "$here/cri_lib.sh"
source "$here/config_volumes_lib.sh"

start_containerd
wait_for "containerd answers on its socket" 20 containerd_up
import_images && ok || fail "ctr cannot import the test images"
DS_IMAGE=busybox:latest write_down_ds "hostNetwork: true"
start_agent
check_down_pod
finish
