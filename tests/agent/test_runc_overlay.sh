#!/usr/bin/env bash
# runtime: {type: runc} with root filesystems as overlay mounts (runtime.rootfs
# auto, on a node that can): the real agent, shim, daemonlet-image and
# Debian's runc with the busybox test image. Checks that a running
# container's rootfs is an overlay mount (/proc/self/mountinfo), that a
# write inside the container stays in its bundle's upper directory and never
# reaches the image store's layers, that an agent restart keeps the mount and
# adopts the container and deletes a leftover mounted bundle, that a "reboot" (containers and mounts gone) makes a
# new bundle, that the mount goes with the pod and the store's layers are
# intact, that an image of too many layers for overlay is copied, that
# rootfs: copy gives a plain directory, and that where a trial
# overlay mount fails, rootfs: overlay stops the agent and auto copies.
# Needs root, runc, busybox-static and overlay; skips without them.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/lib.sh"
require_runc
modprobe -q overlay 2>/dev/null; grep -qw overlay /proc/filesystems || { echo "SKIPPED: the kernel has no overlay"; exit 0; }

runc_busybox_import
write_runc_config "$import"
DS_IMAGE=busybox write_ds bb.yaml bb 'while :; do sleep 1; done'

running_ids() { rc list -q 2>/dev/null | sort; }
one_running() { [[ $(rc list 2>/dev/null | awk 'NR > 1 && $3 == "running"' | wc -l) -eq 1 ]]; }
container_pid() { rc state "$1" 2>/dev/null | sed -n 's/^ *"pid": \([0-9]*\),/\1/p'; }
# The file system type mounted on $1, if any.
fstype_at() { awk -v m="$1" '$5 == m { for (i = 6; i <= NF; i++) if ($i == "-") print $(i + 1) }' /proc/self/mountinfo; }
is_overlay() { [[ $(fstype_at "$1") == overlay ]]; }
not_mounted() { [[ -z $(fstype_at "$1") ]]; }
# Every file of the store's layers and their overlay forms, with its content's digest.
store_snapshot() {
    (cd "$state/images" && find layers overlay/sha256 -printf '%p %y %m %s\n' | sort &&
        find layers overlay/sha256 -type f -exec sha256sum {} + | sort)
}
new_running() { one_running && [[ $(running_ids) != "$1" ]]; }

start_agent
wait_for "pod of bb runs" 30 pod_running it bb
wait_for "runc runs one container" 10 one_running
grep -q "runtime.rootfs auto: containers' root filesystems are overlay mounts" "$work/agent.log" && ok ||
    fail "the agent did not log its choice of overlay mounts"
[[ $(grep -c "runtime.rootfs" "$work/agent.log") -eq 1 ]] && ok || fail "the rootfs choice was logged more than once"
[[ ! -e $state/images/.overlay-probe && ! -e $state/runtime/.overlay-probe ]] && ok || fail "the probe left its directories"
id=$(running_ids)
bundle=$state/runtime/bundles/$id
is_overlay "$bundle/rootfs" && ok || fail "$bundle/rootfs is not an overlay mount: $(fstype_at "$bundle/rootfs")"
before=$(store_snapshot)
[[ -n $before ]] && ok || fail "the store has no layers"

# 1. A write inside the container stays in the bundle's upper directory.
rc exec "$id" sh -c 'echo inside > /bin/written && rm /bin/cat' && ok || fail "cannot write inside the container"
[[ $(cat "$bundle/overlay/upper/bin/written" 2>&1) == inside ]] && ok || fail "the write is not in the upper directory"
[[ -c $bundle/overlay/upper/bin/cat ]] && ok || fail "the removal is not a whiteout in the upper directory"
[[ $(store_snapshot) == "$before" ]] && ok || fail "a write in the container changed the store's layers"

# 2. kill -9 of the agent: the mount stays, and the new agent adopts the container.
pid=$(container_pid "$id")
kill -9 "$agent"
wait "$agent" 2>/dev/null
# What a crash between prepare and the shim leaves: a bundle with its rootfs
# mounted and no container record. The new agent unmounts and deletes it.
leftover=$state/runtime/bundles/0123456789abcdef0123456789abcdef
"$(dirname "$dl")/../platform/daemonlet-image" prepare --store "$state/images" --ref busybox \
    --rootfs "$leftover/rootfs" --overlay "$leftover/overlay" >/dev/null && is_overlay "$leftover/rootfs" && ok ||
    fail "cannot make a leftover bundle with daemonlet-image prepare --overlay"
start_agent
wait_for "the new agent adopts the container" 15 grep -q 'adopted 1 running container' "$work/agent.log"
# Deleted on libuv's pool, after READY: soon, not at once.
leftover_gone() { not_mounted "$leftover/rootfs" && [[ ! -e $leftover ]]; }
wait_for "the leftover bundle is unmounted and deleted" 10 leftover_gone
[[ $(store_snapshot) == "$before" ]] && ok || fail "deleting the leftover bundle changed the store's layers"
[[ $(container_pid "$id") == "$pid" ]] && ok || fail "adoption changed the container"
is_overlay "$bundle/rootfs" && ok || fail "the rootfs mount did not survive the agent's restart"
[[ $(rc exec "$id" sh -c 'read l < /bin/written; echo $l') == inside ]] && ok || fail "the container lost its write"

# 3. A reboot, as the node sees it: the agent, the shims, the containers and
# the mounts gone, the bundles and state still on disk. The new agent starts
# the pod again in a new bundle, overlay-mounted, and deletes the old one.
kill -9 "$agent"
wait "$agent" 2>/dev/null
pkill -KILL -f "daemonlet-shim.*$work"
rc delete --force "$id" >/dev/null 2>&1
umount "$bundle/rootfs" && ok || fail "cannot unmount $bundle/rootfs for the reboot"
start_agent
wait_for "after the reboot bb runs in a new container" 30 new_running "$id"
wait_for "pod of bb runs after the reboot" 15 pod_running it bb
id2=$(running_ids)
is_overlay "$state/runtime/bundles/$id2/rootfs" && ok || fail "the new bundle's rootfs is not an overlay"
wait_for "the old bundle is deleted" 15 test ! -e "$bundle"
[[ $(store_snapshot) == "$before" ]] && ok || fail "the reboot's clean-up changed the store's layers"

# 4. The pod goes: runc's container, then the mount, then the bundle; the layers stay.
rm -f "$man/bb.yaml"
wait_for "bb stops when its file goes" 20 no_pod it bb
wait_for "the rootfs is unmounted" 10 not_mounted "$state/runtime/bundles/$id2/rootfs"
wait_for "the bundle is deleted" 10 test ! -e "$state/runtime/bundles/$id2"
[[ $(store_snapshot) == "$before" ]] && ok || fail "removing the pod changed the store's layers"
[[ -x $state/images/layers/sha256/$(ls "$state/images/layers/sha256" | head -1)/bin/busybox ]] && ok ||
    fail "the layer's bin/busybox is gone"

# 4b. An image of 70 layers: their names do not fit overlay's options in a
# page, so daemonlet-image copies it instead, and the pod runs.
LAYERS=70 "$here/../data/make_busybox_image.sh" "$import/.many.tar" example.com/edge/many:1 >/dev/null
mv "$import/.many.tar" "$import/many.tar"
DS_IMAGE=example.com/edge/many:1 write_ds many.yaml many 'while :; do sleep 1; done'
wait_for "pod of many runs" 30 pod_running it many
wait_for "runc runs one container" 10 one_running
id_many=$(running_ids)
not_mounted "$state/runtime/bundles/$id_many/rootfs" && [[ -s $state/runtime/bundles/$id_many/rootfs/etc/layer70 ]] &&
    ok || fail "the 70-layer image's rootfs is not a copy with all its layers"
rm -f "$man/many.yaml"
wait_for "many goes with its file" 20 no_pod it many

# 5. rootfs: copy: a plain directory, no mount.
kill "$agent"
wait "$agent" 2>/dev/null
sed -i "s|runtime: {type: runc, imageImportDir: $import}|runtime: {type: runc, imageImportDir: $import, rootfs: copy}|" "$cfg"
grep -q "rootfs: copy" "$cfg" || fail "cannot set rootfs: copy in $cfg"
DS_IMAGE=busybox write_ds bb.yaml bb 'while :; do sleep 1; done'
start_agent
wait_for "pod of bb runs with a copied rootfs" 30 pod_running it bb
wait_for "runc runs one container" 10 one_running
id3=$(running_ids)
not_mounted "$state/runtime/bundles/$id3/rootfs" && ok || fail "rootfs: copy mounted $(fstype_at "$state/runtime/bundles/$id3/rootfs")"
[[ -x $state/runtime/bundles/$id3/rootfs/bin/busybox ]] && ok || fail "the copied rootfs has no bin/busybox"
grep -q "runtime.rootfs copy: containers' root filesystems are copies" "$work/agent.log" && ok ||
    fail "the agent did not log rootfs: copy"

# 6. A node where the trial mount fails: stateDir on an overlay, which
# cannot be another overlay's upper directory. rootfs: overlay is an error
# at start that says why; auto falls back to the copy and says so once.
rm -f "$man/bb.yaml"
wait_for "bb goes with its file" 20 no_pod it bb
kill "$agent"
wait "$agent" 2>/dev/null
parts=$work/ovfs-parts
mkdir -p "$parts/lower" "$parts/upper" "$parts/work" "$work/ovfs"
mount -t overlay overlay -o "lowerdir=$parts/lower,upperdir=$parts/upper,workdir=$parts/work" "$work/ovfs" ||
    fail "cannot mount an overlay for the state directory"
state=$work/ovfs/state
runc_root=$state/runtime/runc
sed -i -e "s|^stateDir: .*|stateDir: $state|" -e "s|rootfs: copy|rootfs: overlay|" "$cfg"
start_agent
agent_gone() { ! kill -0 "$agent" 2>/dev/null; }
wait_for "the agent refuses to start with rootfs: overlay" 15 agent_gone
wait "$agent" 2>/dev/null
[[ $? -ne 0 ]] && ok || fail "the agent exited 0 without overlay"
agent=
grep -q "runtime.rootfs: overlay: this node cannot mount one: a trial overlay mount failed: " "$work/agent.log" && ok ||
    fail "the error does not say why overlay is unavailable"
sed -i "s|rootfs: overlay|rootfs: auto|" "$cfg"
DS_IMAGE=busybox write_ds bb.yaml bb 'while :; do sleep 1; done'
start_agent
wait_for "pod of bb runs with auto falling back to the copy" 30 pod_running it bb
wait_for "runc runs one container" 10 one_running
grep -q "runtime.rootfs auto: containers' root filesystems are copies of the image's layers (a trial overlay mount failed" \
    "$work/agent.log" && ok || fail "the fallback to the copy is not logged with its reason"
id4=$(running_ids)
[[ -n $id4 ]] && not_mounted "$state/runtime/bundles/$id4/rootfs" && [[ -x $state/runtime/bundles/$id4/rootfs/bin/busybox ]] &&
    ok || fail "auto without overlay did not copy the rootfs of $id4"

finish
