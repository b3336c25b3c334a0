#!/usr/bin/env bash
# An image archive that does not fit (issue 15 section 3: "image pulls and
# imports that do not fit fail cleanly and are retried"), end to end with
# the runc runtime: stateDir is a small tmpfs, filled up, when busybox.tar
# lands in the import directory. The import fails and says why (`status -o
# json`: images.importWaitsForSpace), nothing of it is left in the image
# store (daemonlet-image stages under images/tmp and renames: all or
# nothing), and the pod that needs the image waits for it
# (ErrImageNeverPull, as kubelet's image manager says with pull policy
# Never). Once space returns, the next check of the directory imports it
# and the pod starts.
# Needs root, runc and busybox-static; skips without them.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/lib.sh"
require_runc

runc_state_on_tmpfs 24m daemonlet-import-full
"$here/../data/make_busybox_image.sh" "$work/.busybox.tar" >/dev/null || {
    echo "FAIL: cannot build the image"
    exit 1
}
start_notify_listener

write_runc_config "$import"
DS_IMAGE=busybox write_ds app.yaml app 'while :; do sleep 1; done' "" "" "          imagePullPolicy: Never"
start_agent
wait_ready 0
waiting_reason() {
    "$dl" get pods -A -o json --config "$cfg" |
        jq -r '.items[] | select(.metadata.name | startswith("app-")) | .status.containerStatuses[0].state.waiting.reason // empty'
}
never_pull() { [[ $(waiting_reason) == ErrImageNeverPull ]]; }
wait_for "app waits for its image" 10 never_pull

# The disk fills up (tmpfs: no reserve, ENOSPC at once), then the archive comes.
dd if=/dev/zero of="$state/fill" bs=1M 2>/dev/null
mv "$work/.busybox.tar" "$import/busybox.tar"
waits_for_space() {
    status_json | jq -e '.images.importWaitsForSpace.message | test("busybox.tar") and test("[Nn]o space|no_space")'
}
wait_for "status says the import waits for space" 10 waits_for_space
store() { "$(dirname "$dl")/../platform/daemonlet-image" list --store "$state/images"; }
[[ $(store | grep -c busybox) -eq 0 ]] && ok || fail "a half-imported image is listed: $(store)"
leftover=$({
    find "$state/images/tmp" -mindepth 1
    find "$state/images/blobs" "$state/images/layers" -mindepth 2
} 2>/dev/null | head -3)
[[ -z $leftover ]] && ok || fail "the failed import left files in the store: $leftover"
never_pull && ok || fail "app does not wait for its image: $(waiting_reason)"
kill -0 "$agent" 2>/dev/null && ok || fail "the agent exited on the full disk"

# The archive is taken away while it waits: nothing waits any more (the
# next check of the directory); put back, it waits again.
mv "$import/busybox.tar" "$work/.busybox.tar"
no_wait() { status_json | jq -e '.images | has("importWaitsForSpace") | not' >/dev/null; }
wait_for "status no longer says an import waits once its archive is gone" 10 no_wait
mv "$work/.busybox.tar" "$import/busybox.tar"
wait_for "status says the import waits again once the archive is back" 10 waits_for_space

# Space returns: the next check of the import directory (fileCheckFrequency
# 2 s) imports the archive once, and app starts.
t0=$(date +%s%N)
rm -f "$state/fill"
wait_for "app runs once the image is imported" 15 pod_running it app
echo "measured: space back -> app Running: $((($(date +%s%N) - t0) / 1000000)) ms"
[[ $(grep -c 'imported docker.io/library/busybox' "$agent_log") -eq 1 ]] && ok ||
    fail "busybox.tar imported $(grep -c 'imported docker.io/library/busybox' "$agent_log") times"
[[ $(grep -c 'the disk is full: nothing of it was imported' "$agent_log") -eq 1 ]] && ok ||
    fail "the full disk was said $(grep -c 'the disk is full: nothing of it was imported' "$agent_log") times, not once"
status_json | jq -e '.images | has("importWaitsForSpace") | not' >/dev/null && ok ||
    fail "status still says the import waits: $(status_json | jq -c .images)"
stop_agent TERM
finish
