#!/usr/bin/env bash
# daemonlet-image, the image store's command, and the agent's use of it.
# The agent links no libarchive (tests/needed_libs.sh): imports run in
# daemonlet-image, on the agent's loop without blocking it, one at a time,
# killed when the agent stops; a container's rootfs comes from
# `daemonlet-image prepare`.
#   1. the CLI: import (a JSON line per image), list, prepare (rootfs and the
#      image's config; exit 2 for an absent image), a corrupt archive (exit
#      1, named, the store unchanged), verify (import's lines and errors,
#      nothing kept), usage (64);
#   2. a reader never waits for an import: prepare and list run while an
#      import holds the store's lock; a second import waits for it;
#   3. (root and runc) the agent answers while its import waits on the lock,
#      the pod waits for the image (ErrImagePull) and runs once the import
#      ends; an import in progress is killed when the agent stops;
#   4. restarts import only what changed, failed or went from the store.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
[[ -z ${EMULATOR:-} ]] || { echo "SKIPPED: not under an emulator"; exit 0; }
[[ -x /bin/busybox ]] || { echo "SKIPPED: /bin/busybox is missing (apt-get install busybox-static)"; exit 0; }
source "$here/lib.sh"
tool=$(dirname "$dl")/../platform/daemonlet-image
[[ -x $tool ]] || { echo "FAIL: $tool is not built"; exit 1; }

store=$work/store
# A layer of this run's own: `remove` keeps a layer that any overlay on the
# machine has as a lower (by its digest; platform/image/image_gc.cpp), and other
# tests (runc, runc_overlay) mount busybox's shared layer meanwhile.
LAYER_TAG=$work "$here/../data/make_busybox_image.sh" "$work/busybox.tar" >/dev/null ||
    { echo "FAIL: cannot build the image"; exit 1; }

# 1. The CLI.
out=$("$tool" import --store "$store" "$work/busybox.tar" 2>"$work/err") && ok || fail "import failed: $(cat "$work/err")"
[[ $out =~ ^\{\"name\":\"docker.io/library/busybox:latest\",\"digest\":\"sha256:[0-9a-f]{64}\"\}$ ]] &&
    ok || fail "import printed: $out"
digest=$(sed 's/.*"digest":"\([^"]*\)".*/\1/' <<<"$out")
# list adds each image's blob bytes and import time (seconds since the epoch).
listed_names() { "$tool" list --store "$store" | sed -E 's/,"size":[0-9]+,"imported":[0-9]+//g'; }
listed=$("$tool" list --store "$store")
[[ $listed =~ ^\[\{.*,\"size\":[1-9][0-9]*,\"imported\":[1-9][0-9]*\}\]$ && $(listed_names) == "[$out]" ]] &&
    ok || fail "list printed: $listed"

"$tool" prepare --store "$store" --ref example.com/absent:1 --rootfs "$work/absent" 2>"$work/err"
[[ $? -eq 2 ]] && ok || fail "prepare of an absent image did not exit 2"
grep -q 'image "example.com/absent:1" is not in the image store' "$work/err" && ok || fail "stderr: $(cat "$work/err")"
[[ ! -e $work/absent ]] && ok || fail "prepare of an absent image made its rootfs"

config=$("$tool" prepare --store "$store" --ref busybox --rootfs "$work/rootfs") && ok || fail "prepare busybox failed"
grep -q '"Cmd":\["sh"\]' <<<"$config" && grep -q '"diff_ids":\["sha256:' <<<"$config" &&
    ok || fail "prepare printed no image config: $config"
[[ -x $work/rootfs/bin/busybox && -L $work/rootfs/bin/sh ]] && ok || fail "the rootfs has no bin/busybox and bin/sh"
"$tool" prepare --store "$store" --ref "busybox@$digest" --rootfs "$work/rootfs" 2>"$work/err"
[[ $? -eq 1 ]] && grep -q "not empty" "$work/err" && ok || fail "prepare into a full directory: $(cat "$work/err")"

head -c 4096 /dev/urandom >"$work/corrupt.tar"
"$tool" import --store "$store" "$work/corrupt.tar" >"$work/out" 2>"$work/err"
[[ $? -eq 1 && ! -s $work/out ]] && ok || fail "a corrupt archive did not exit 1 with nothing on stdout"
grep -q "$work/corrupt.tar" "$work/err" && ok || fail "the error does not name the archive: $(cat "$work/err")"
[[ $(listed_names) == "[$out]" ]] && ok || fail "a corrupt archive changed the store"
[[ -z $(ls "$store/tmp") ]] && ok || fail "a failed import left $(ls "$store/tmp") in $store/tmp"

# verify (runtime.type cri checks an archive so before containerd sees it):
# the import's lines and errors, nothing kept.
verified=$("$tool" verify --store "$store" "$work/busybox.tar" 2>"$work/err") && ok || fail "verify failed: $(cat "$work/err")"
[[ $verified == "$out" ]] && ok || fail "verify printed: $verified (import: $out)"
"$tool" verify --store "$store" "$work/corrupt.tar" >"$work/out" 2>"$work/err"
[[ $? -eq 1 && ! -s $work/out ]] && grep -q "$work/corrupt.tar" "$work/err" && ok ||
    fail "verify of a corrupt archive: $(cat "$work/err")"
[[ $(listed_names) == "[$out]" && -z $(ls "$store/tmp") ]] && ok || fail "verify changed the store"
"$tool" prepare --store "$store" --containerd /run/x.sock --ref busybox --rootfs "$work/r" >/dev/null 2>&1
[[ $? -eq 64 ]] && ok || fail "--containerd with prepare is not a usage error"

# remove and prune (image GC's verbs): an unknown image exits 2 and
# changes nothing; prune keeps the images named; remove deletes the image
# and every file of it, printing it with its bytes, then the total.
"$tool" remove --store "$store" example.com/absent:1 >"$work/out" 2>"$work/err"
[[ $? -eq 2 ]] && grep -q "example.com/absent:1" "$work/err" && ok || fail "remove of an absent image: $(cat "$work/err")"
[[ $(listed_names) == "[$out]" ]] && ok || fail "a failed remove changed the store"
pruned=$("$tool" prune --store "$store" busybox) && [[ $pruned == '{"bytesFreed":0,"keptMounted":[]}' ]] &&
    ok || fail "prune removed what is in use: $pruned"
cp -a "$store" "$work/store-copy"
removed=$("$tool" remove --store "$store" busybox) && ok || fail "remove failed"
[[ $(head -1 <<<"$removed") =~ ^\{\"name\":\"docker.io/library/busybox:latest\",\"digest\":\"$digest\",\"bytes\":[1-9][0-9]*\}$ ]] &&
    ok || fail "remove printed: $removed"
[[ $(tail -1 <<<"$removed") =~ ^\{\"bytesFreed\":[1-9][0-9]*,\"keptMounted\":\[\]\}$ ]] && ok || fail "remove printed: $removed"
[[ $("$tool" list --store "$store") == "[]" && -z $(ls "$store/blobs/sha256") && -z $(ls "$store/layers/sha256") ]] &&
    ok || fail "remove left files: $(ls -R "$store" | head)"
rm -rf "$store" && mv "$work/store-copy" "$store"

"$tool" list >/dev/null 2>&1
[[ $? -eq 64 ]] && ok || fail "no --store is not a usage error"
"$tool" remove --store "$store" >/dev/null 2>&1
[[ $? -eq 64 ]] && ok || fail "remove without an image is not a usage error"
"$tool" frobnicate --store "$store" >/dev/null 2>&1
[[ $? -eq 64 ]] && ok || fail "an unknown verb is not a usage error"

# 2. While an import holds the store (this shell holds its lock on fd 9):
# readers answer; a second import waits until the lock goes.
exec 9>"$store/import.lock"
flock 9
timeout 10 "$tool" prepare --store "$store" --ref busybox --rootfs "$work/rootfs2" >/dev/null &&
    ok || fail "prepare waited for an import"
[[ -x $work/rootfs2/bin/busybox ]] && ok || fail "prepare during an import made no rootfs"
timeout 10 "$tool" list --store "$store" >/dev/null && ok || fail "list waited for an import"
"$tool" import --store "$store" "$work/busybox.tar" >"$work/second" 2>&1 &
second=$!
# /proc/locks lists a blocked flock as "N: -> FLOCK ... MAJ:MIN:INODE".
lock_inode=$(stat -c %i "$store/import.lock")
importer_waits() { grep -- '->' /proc/locks | grepq ":$lock_inode "; }
wait_for "the second import waits on the lock" 5 importer_waits
[[ ! -s $work/second ]] && ok || fail "the second import ran while the lock was held: $(cat "$work/second")"
flock -u 9
wait "$second" && ok || fail "the second import failed once the lock went: $(cat "$work/second")"
[[ $(cat "$work/second") == "$out" ]] && ok || fail "the second import printed: $(cat "$work/second")"

# 3. The agent, with the runc runtime.
if [[ $(id -u) -ne 0 ]] || ! runc_bin=$(command -v runc); then
    echo "agent checks SKIPPED: they need root and runc"
    exec 9>&-
    finish
    exit
fi
import=$work/import
mkdir -p "$import"
trap runc_cleanup EXIT
write_runc_config "$import"
mkdir -p "$state/images"
exec 9>"$state/images/import.lock"
flock 9
cp "$work/busybox.tar" "$import/busybox.tar"
DS_IMAGE=busybox write_ds bb.yaml bb 'while :; do sleep 1; done'
start_agent
importing() { pgrep -f "daemonlet-image import --store $state/images $import/busybox.tar"; }
wait_for "the agent runs daemonlet-image import" 10 importing
# `status` is answered by the agent's loop (get pods reads the store):
# given 2 s, as a loop blocked on the import would never answer.
agent_answers() { timeout 2 "$dl" status --config "$cfg" | grepq -E '^DaemonSets: +1 '; }
wait_for "the agent answers while its import waits (its loop is not blocked)" 10 agent_answers
wait_for "bb waits for its image" 10 pod_waiting_for_image bb
flock -u 9
wait_for "the import is logged once the lock goes" 10 \
    grep -q "image import: $import/busybox.tar: imported docker.io/library/busybox:latest sha256:" "$work/agent.log"
wait_for "the waiting pod starts when the import ends (its back-off is 60 s)" 10 pod_running it bb

# An import in progress goes with the agent.
flock 9
cp "$work/busybox.tar" "$import/again.tar"
importing_again() { pgrep -f "daemonlet-image import --store $state/images $import/again.tar"; }
wait_for "the agent imports the new archive" 10 importing_again
import_pid=$(importing_again | head -1)
kill -TERM "$agent"
exited() { [[ ! -d /proc/$1 || $(ps -o stat= -p "$1") == Z* ]]; }
wait_for "the agent stops on SIGTERM during an import" 10 exited "$agent" && wait "$agent"
agent=
wait_for "the import in progress is killed when the agent stops" 5 exited "$import_pid"
flock -u 9
exec 9>&-

# 4. What was imported is kept in the store (meta images.imports): a restart
# imports only the archives that changed (mtime or size), failed, or whose
# images went from the image store. Imports run one at a time in name order
# (again, busybox, corrupt, zz), so once a later archive's outcome is logged,
# an earlier one imported again would have been logged before it.
stop_agent() {
    kill -TERM "$agent"
    wait_for "the agent stops on SIGTERM" 10 exited "$agent" && wait "$agent"
    agent=
}
imports_of() { grep -c "image import: $import/$1: imported " "$work/agent.log"; }
failures_of() { grep -c "image import: .*$import/corrupt.tar" "$work/agent.log"; }
imports_are() { [[ $(imports_of "$1") -eq $2 ]]; }
failures_are() { [[ $(failures_of) -eq $1 ]]; }
skipped() { grep "not imported again: " "$work/agent.log" | tail -1; }
"$here/../data/make_busybox_image.sh" "$import/.zz.tar" example.com/edge/zz:1 >/dev/null
mv "$import/.zz.tar" "$import/zz.tar"
head -c 4096 /dev/urandom >"$import/corrupt.tar"
start_agent
wait_for "zz.tar is imported at the restart" 20 grep -q "image import: $import/zz.tar: imported example.com/edge/zz:1 " "$work/agent.log"
[[ $(imports_of busybox.tar) -eq 1 ]] && ok || fail "busybox.tar, unchanged, was imported again at the restart"
[[ $(skipped) == *"again: $import/busybox.tar" ]] && ok || fail "the log does not say busybox.tar was not imported again: $(skipped)"
[[ $(imports_of again.tar) -eq 1 ]] && ok || fail "again.tar, whose import the stop killed, was not imported at the restart"
[[ $(failures_of) -eq 1 ]] && ok || fail "the corrupt archive was reported $(failures_of) times"

# Nothing changed: only the archive that failed is tried again.
stop_agent
start_agent
wait_for "the failed archive is tried again at a restart" 20 failures_are 2
[[ $(skipped) == *"again: $import/again.tar, $import/busybox.tar, $import/zz.tar" ]] &&
    ok || fail "not every unchanged archive is said to be skipped: $(skipped)"
[[ $(imports_of again.tar) -eq 1 && $(imports_of busybox.tar) -eq 1 ]] && ok || fail "an unchanged archive was imported again"
pod_running it bb >/dev/null && ok || fail "bb no longer runs after the restarts"

# A changed archive is imported again, the others are not: its mtime
# changed (touched), or its size alone (replaced by a gzip-compressed
# archive given the old file's mtime, while the agent is down).
stop_agent
touch -d '2001-02-03 04:05:06' "$import/busybox.tar"
start_agent
wait_for "busybox.tar, touched, is imported again" 20 imports_are busybox.tar 2
wait_for "the failed archive is tried once more" 20 failures_are 3
[[ $(imports_of again.tar) -eq 1 ]] && ok || fail "again.tar, unchanged, was imported again"
[[ $(skipped) == *"again: $import/again.tar, $import/zz.tar" ]] && ok || fail "skipped: $(skipped)"
stop_agent
rm "$import/corrupt.tar"
"$here/../data/make_busybox_image.sh" "$work/again2.tar" example.com/edge/again:2 >/dev/null
gzip -c "$work/again2.tar" >"$import/.again.tar"
touch -r "$import/again.tar" "$import/.again.tar"
[[ $(stat -c %Y.%y "$import/.again.tar") == $(stat -c %Y.%y "$import/again.tar") &&
    $(stat -c %s "$import/.again.tar") != $(stat -c %s "$import/again.tar") ]] &&
    ok || fail "set-up: the replacement of again.tar should differ in size only"
mv "$import/.again.tar" "$import/again.tar"
start_agent
wait_for "again.tar, replaced, is imported again" 20 grep -q "image import: $import/again.tar: imported example.com/edge/again:2 " "$work/agent.log"
[[ $(skipped) == *"again: $import/busybox.tar, $import/zz.tar" ]] && ok || fail "skipped: $(skipped)"

# Images gone from the image store (its index removed): imported again.
stop_agent
rm "$state/images/images.json"
start_agent
wait_for "zz.tar, its image gone from the store, is imported again" 20 imports_are zz.tar 2
[[ $(imports_of busybox.tar) -eq 3 && $(imports_of again.tar) -eq 3 ]] &&
    ok || fail "after the store's index went, busybox.tar was imported $(imports_of busybox.tar) times, again.tar $(imports_of again.tar)"
"$tool" list --store "$state/images" | grepq '"name":"example.com/edge/zz:1"' && ok || fail "zz is not in the store again"

# A record damaged by hand (fields of the wrong type) stops nothing: what it
# cannot vouch for is imported again. Written while the agent is down.
if command -v sqlite3 >/dev/null; then
    stop_agent
    sqlite3 "$state/daemonlet.db" "UPDATE meta SET value = '{\"$import/zz.tar\": {\"outcome\": \"imported\",
        \"mtimeNs\": \"x\", \"size\": [], \"images\": [{\"name\": 5}]}, \"other\": 7}' WHERE key = 'images.imports'"
    start_agent
    wait_for "zz.tar, its record damaged, is imported again" 20 imports_are zz.tar 3
    kill -0 "$agent" && ok || fail "the agent stopped on a damaged record"
else
    echo "damaged-record check SKIPPED: no sqlite3 command"
fi
finish
