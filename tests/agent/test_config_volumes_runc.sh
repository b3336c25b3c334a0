#!/usr/bin/env bash
# The runc runtime's config volumes, read from inside the container
# (test_config_volumes.sh has the exec runtime's and the ConfigMap/Secret
# flows): a downwardAPI volume bind-mounted at its mountPath, read-only
# whatever the mount says (kubelet makeMounts: the volume's mounter is
# ReadOnly), with its items' files and modes, a projected volume, and the
# downward API env.
# Needs root, runc and busybox-static; skips without them.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/lib.sh"
require_runc

runc_busybox_import

write_runc_config "$import"
source "$here/config_volumes_lib.sh"
write_down_ds
start_agent
check_down_pod
finish
