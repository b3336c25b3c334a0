#!/usr/bin/env bash
# Image GC for the runc runtime's store (core/image_gc.h, agent/daemon/image_gc.cpp)
# on a real small file system: stateDir is a tmpfs of 48 MiB mounted by this
# script, with runtime.imageGC's thresholds set so that GC runs (high 1 %,
# low 0 %, minimumAgeSeconds 0). kubelet's rules (image_gc_manager.go):
# an image not in use is removed when usage reaches the high threshold; the
# running pod's image stays. The edge rule: the image of a DaemonSet the
# node should run stays though no container of it runs. After a rolling
# update the old image goes (log: image, bytes freed), its unique layer is
# deleted from the store, a restart does not import its archive again, and
# a pod needing it again brings it back from the archive.
# Needs root, runc and busybox-static; skips without them.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/lib.sh"
require_runc

runc_state_on_tmpfs 48m daemonlet-gc-test

# Images with a layer of their own each: busybox with bytes appended (an ELF
# runs with trailing data), so that removing one frees its own layer.
make_image() { # make_image NAME FILE_STEM
    head -c 300000 /dev/urandom >"$work/pad"
    cat /bin/busybox "$work/pad" >"$work/busybox-$2"
    chmod 0755 "$work/busybox-$2"
    BUSYBOX=$work/busybox-$2 "$here/../data/make_busybox_image.sh" "$work/.$2.tar" "$1" >/dev/null || {
        echo "FAIL: cannot build $1"
        exit 1
    }
}
make_image docker.io/library/app:1 app1
make_image docker.io/library/app:2 app2
make_image docker.io/library/cache:1 cache1
make_image docker.io/library/unused:1 unused1

cat >"$cfg" <<CONFIG
nodeName: it-node
manifestDir: $man
stateDir: $state
metricsBindAddress: $metrics_bind
runtime: {type: runc, imageImportDir: $import, rootfs: copy,
          imageGC: {highThresholdPercent: 1, lowThresholdPercent: 0, minimumAgeSeconds: 0}}
fileCheckFrequency: 2s
crashLoopBackoff: {initial: 60s, max: 120s}
CONFIG
DS_IMAGE=app:1 write_ds app.yaml app 'while :; do sleep 1; done'
# Exits at once and backs off for 60 s: no container of it runs, yet the
# node should run it, so its image stays.
DS_IMAGE=cache:1 write_ds cache.yaml cache 'exit 3'

store() { "$(dirname "$dl")/../platform/daemonlet-image" list --store "$state/images"; }
in_store() { store | grepq "\"$1\""; }
not_in_store() { ! in_store "$1"; }
layers() { ls "$state/images/layers/sha256" | sort; }
layers_readable() { cat "$state/images/layers/sha256"/*/bin/busybox >/dev/null; }
removed_logged() { grep -qE "image GC: removed image docker.io/library/$1 sha256:[0-9a-f]{64}, [1-9][0-9]* bytes freed" "$work/agent.log"; }

for i in app1 cache1 unused1; do mv "$work/.$i.tar" "$import/$i.tar"; done
start_agent
wait_for "app runs app:1" 20 pod_running it app
cache_waits() { get_pods | grepq -E "^it +cache-[a-z0-9]+ +0/1 +(CrashLoopBackOff|Error) "; }
wait_for "cache's container exited and backs off" 20 cache_waits
wait_for "the unused image is removed and logged with its bytes" 20 removed_logged unused:1
not_in_store docker.io/library/unused:1 && ok || fail "unused:1 is still in the store: $(store)"
in_store docker.io/library/app:1 && ok || fail "the running pod's image app:1 was removed"
in_store docker.io/library/cache:1 && ok || fail "cache:1, the image of a DaemonSet the node runs, was removed"
[[ $(layers | wc -l) -eq 2 ]] && ok || fail "expected the layers of app:1 and cache:1 only, found $(layers | wc -l)"

# A rolling update to app:2, whose archive arrives after the manifest (an
# image imported before any DaemonSet uses it is not in use: with
# minimumAgeSeconds 0 it would go at once; that is what the minimum age is
# for). Once the old pod is gone, app:1 goes.
before=$(layers)
DS_IMAGE=app:2 write_ds app.yaml app 'while :; do sleep 1; done'
wait_for "the new pod waits for app:2" 20 pod_waiting_for_image app
mv "$work/.app2.tar" "$import/app2.tar"
wait_for "app:2 is imported" 20 in_store docker.io/library/app:2
wait_for "the old image app:1 is removed after the rollout" 30 not_in_store docker.io/library/app:1
wait_for "app runs app:2" 20 pod_running it app
removed_logged app:1 && ok || fail "the removal of app:1 is not logged with its bytes"
in_store docker.io/library/cache:1 && ok || fail "cache:1 was removed by the rollout's GC"
[[ $(layers | wc -l) -eq 2 ]] && ok || fail "app:1's layer is still in the store: $(layers)"
comm -23 <(echo "$before") <(layers) | grepq . && ok || fail "no layer of app:1 was deleted"
layers_readable && ok || fail "a remaining layer is damaged"
[[ -z $(ls "$state/images/tmp") ]] && ok || fail "leftovers in the store's tmp/: $(ls "$state/images/tmp")"

# A restart: app1.tar is still in the import directory, unchanged; its image
# was collected, so it is not imported again.
kill -9 "$agent"
wait "$agent" 2>/dev/null
start_agent
wait_for "the restart's imports are checked" 15 grep -q 'not imported again' "$work/agent.log"
wait_for "app runs after the restart" 15 pod_running it app
[[ $(grep -c "imported docker.io/library/app:1" "$work/agent.log") -eq 1 ]] && ok ||
    fail "app1.tar was imported again at the restart though its image was collected"
not_in_store docker.io/library/app:1 && ok || fail "app:1 is back in the store after the restart"

# Needed again (a rollback to app:1): its archive is imported again, and it runs.
DS_IMAGE=app:1 write_ds app.yaml app 'while :; do sleep 1; done'
wait_for "app:1 is imported again when needed" 20 \
    grep -q "image app:1: removed by image GC and needed again; importing $import/app1.tar again" "$work/agent.log"
wait_for "app runs app:1 again" 30 pod_running it app
wait_for "app:2, unused now, is removed" 20 not_in_store docker.io/library/app:2
in_store docker.io/library/cache:1 && ok || fail "cache:1 was removed"

finish
