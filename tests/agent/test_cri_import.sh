#!/usr/bin/env bash
# runtime: {type: cri} on an air-gapped board: images that come only as
# archives dropped into runtime.imageImportDir, imported into containerd's
# k8s.io namespace (the CRI plugin's) by the agent, as the runc runtime
# imports them into its own store. containerd is Debian's, started here
# with its own configuration, root and socket (cri_lib.sh).
#
# Checks: an archive found while containerd is down is imported once it
# answers (said once, not recorded as failed); a pod that could not start
# while containerd was down starts within seconds of its return, without
# the container's crash-loop back-off; a pod whose image is in no
# registry waits with kubelet's reason
# (ErrImagePull / ImagePullBackOff, image_manager.go EnsureImageExists);
# a corrupt archive (a byte of its layer flipped) is refused with our error
# naming the file, the blob and the reason, is not imported into containerd,
# is named once, and the running pod and the agent are not affected; a good
# archive is imported and the waiting pod starts at once (not at the end of
# its back-off), its image found by CRI ImageStatus under the name the pod
# gives (unnormalised in the archive, normalised as the CRI plugin
# resolves it: reference.ParseDockerRef adds ":latest"); after a restart
# the unchanged archive is not imported again (the images.imports records).
# Needs root and containerd; skips without them.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
[[ $(id -u) -eq 0 ]] || { echo "SKIPPED: containerd needs root"; exit 0; }
containerd_bin=$(command -v containerd) || { echo "SKIPPED: containerd is not installed (apt-get install containerd)"; exit 0; }
[[ -z ${EMULATOR:-} ]] || { echo "SKIPPED: not under an emulator"; exit 0; }
source "$here/lib.sh"
source "$here/cri_lib.sh"

import=$work/import
mkdir -p "$import"
# A long back-off: a waiting pod that runs within seconds of its archive's
# arrival was started by the import, not by its back-off timer.
cat >"$cfg" <<EOF
nodeName: it-node
manifestDir: $man
stateDir: $state
metricsBindAddress: $metrics_bind
runtime: {type: cri, endpoint: "unix://$sock", imageImportDir: $import, snapshotter: native}
fileCheckFrequency: 2s
crashLoopBackoff: {initial: 60s, max: 120s}
EOF

# The archive's name, as written in it: no tag. The pod names it the same;
# the CRI plugin resolves both to ...:latest. 127.0.0.1:9 refuses at once,
# so the pull fails fast, as on a board without a network.
archived=127.0.0.1:9/daemonlet/archived
"$here/../data/make_busybox_image.sh" "$work/archived.tar" "$archived" >/dev/null ||
    { echo "FAIL: cannot build the archived image"; exit 1; }
write_pod_ds() {  # write_pod_ds FILE NAME IMAGE
    DS_IMAGE=$3 write_ds "$1" "$2" 'while :; do sleep 1; done' "hostNetwork: true" "" \
        "          imagePullPolicy: IfNotPresent"
}
drop() {  # drop FILE NAME: as tools copy, under a hidden name, then renamed
    cp "$1" "$import/.$2.part" && mv "$import/.$2.part" "$import/$2"
}
archived_in_containerd() { c images ls -q 2>/dev/null | grepq -F "$archived"; }
get_pods_json() { "$dl" get pods -A -o json --config "$cfg"; }
container_id() {
    get_pods_json | jq -r --arg ds "$1" '.items[] | select(.metadata.name | startswith($ds + "-"))
        | .status.containerStatuses[0].containerID // empty' | sed 's|^cri://||'
}

# 0. containerd is down when the agent starts, with an archive waiting:
# said once, nothing recorded, imported once containerd answers.
early=127.0.0.1:9/daemonlet/early:1
"$here/../data/make_busybox_image.sh" "$work/early.tar" "$early" >/dev/null ||
    { echo "FAIL: cannot build the early image"; exit 1; }
drop "$work/early.tar" early.tar
# And a pod whose start fails while containerd is down: the runtime's
# absence is not the container's failure, so no crash-loop back-off (60 s
# here): it starts within seconds of containerd's return (kubelet.go
# syncLoop skips syncs while the runtime is down, retrying within 5 s).
write_pod_ds bb.yaml bb busybox:latest
start_agent
down_said() { grep -q "image import: $import/early.tar: daemonlet-image: unavailable: .*failed to dial" "$work/agent.log"; }
wait_for "the import says containerd does not answer" 30 down_said
start_containerd
wait_for "containerd answers on its socket" 20 containerd_up
import_images && ok || fail "ctr cannot import the test images"
early_imported() { grep -q "image import: $import/early.tar: imported $early sha256:" "$work/agent.log"; }
wait_for "the waiting archive is imported once containerd answers" 30 early_imported
c images ls -q | grepq -x "$early" && ok || fail "containerd has no $early: $(c images ls -q)"
[[ $(grep -c "daemonlet-image: unavailable" "$work/agent.log") -eq 1 ]] && ok ||
    fail "containerd being down was said $(grep -c "daemonlet-image: unavailable" "$work/agent.log") times, not once"
grepq "did not start: CRI .*not reachable.*retrying until the runtime answers" "$work/agent.log" && ok ||
    fail "bb's start while containerd was down was not reported"
wait_for "bb runs within seconds of containerd's return (not after its 60 s back-off)" 20 pod_running it bb

# 1. A pod of an image that is in containerd runs; one whose image is
# only in an archive not yet dropped waits with kubelet's reason.
write_pod_ds arch.yaml arch "$archived"
bb_id=$(container_id bb)
wait_for "arch waits for its image (ErrImagePull / ImagePullBackOff)" 30 pod_waiting_for_image arch
archived_in_containerd && fail "the archived image is in containerd before its archive" || ok

# 2. A corrupt archive: a byte of its layer flipped. Refused by our check
# with the file, the blob and the reason; containerd never gets it.
mkdir -p "$work/bad" && tar -C "$work/bad" -xf "$work/archived.tar"
layer=$(ls -S "$work/bad/blobs/sha256" | head -1)  # the largest blob: busybox's layer
byte=$(od -An -tu1 -j 600 -N 1 "$work/bad/blobs/sha256/$layer" | tr -d ' ')
printf "\\x$(printf %02x $((byte ^ 1)))" | dd of="$work/bad/blobs/sha256/$layer" bs=1 seek=600 conv=notrunc status=none
tar -C "$work/bad" -cf "$work/bad.tar" oci-layout index.json blobs
drop "$work/bad.tar" bad.tar
refused() { grep -q "image import: .*$import/bad.tar: blobs/sha256/$layer: digest mismatch" "$work/agent.log"; }
wait_for "the corrupt archive is refused naming the file, the blob and the reason" 30 refused
archived_in_containerd && fail "the corrupt archive reached containerd: $(c images ls -q)" || ok
kill -0 "$agent" 2>/dev/null && ok || fail "the agent exited after the corrupt archive"
[[ $(container_id bb) == "$bb_id" ]] && pod_running it bb >/dev/null && ok ||
    fail "the corrupt archive disturbed bb ($(container_id bb), was $bb_id)"
pod_waiting_for_image arch >/dev/null && ok || fail "arch no longer waits for its image: $(get_pods)"

# 3. The good archive: imported into containerd, under the name as written
# and the normalised one; the waiting pod starts at once.
drop "$work/archived.tar" archived.tar
imported_line() { grep -q "image import: $import/archived.tar: imported $archived:latest sha256:" "$work/agent.log"; }
wait_for "the archive is imported into containerd" 30 imported_line
c images ls -q | grepq -x "$archived:latest" && ok || fail "containerd has no $archived:latest: $(c images ls -q)"
wait_for "arch runs once its image is imported (well before its 60 s back-off)" 20 pod_running it arch
[[ $(container_id bb) == "$bb_id" ]] && ok || fail "the import restarted bb"
# Named once: the look at the directory that queued archived.tar did not
# queue the unchanged corrupt archive again.
[[ $(grep -c "bad.tar" "$work/agent.log") -eq 1 ]] && ok ||
    fail "the corrupt archive was named $(grep -c "bad.tar" "$work/agent.log") times, not once"

# 4. A restart: the unchanged archive is not imported again (its record,
# and its image still in containerd); the corrupt one is tried once more.
kill -TERM "$agent"
wait "$agent"
agent=
imports_before=$(grep -c "image import: $import/archived.tar: imported" "$work/agent.log")
start_agent
not_again() { grep -q "unchanged since imported, with their images in the store, not imported again: .*$import/archived.tar" "$work/agent.log"; }
wait_for "the restarted agent skips the unchanged archive" 30 not_again
wait_for "arch runs after the restart" 20 pod_running it arch
[[ $(grep -c "image import: $import/archived.tar: imported" "$work/agent.log") -eq $imports_before ]] && ok ||
    fail "the unchanged archive was imported again after the restart"
wait_for "the corrupt archive is refused again at the new start" 30 \
    bash -c "[[ \$(grep -c 'image import: .*$import/bad.tar: blobs/sha256/$layer: digest mismatch' '$work/agent.log') -eq 2 ]]"
archived_in_containerd && ok || fail "the image went from containerd"

finish
