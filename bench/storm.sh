#!/usr/bin/env bash
# storm: the kill -9 storm of tests/agent/test_storm.sh (issue 15 §1) for as
# long as one wants. The agent is SIGKILLed at random points while
# DaemonSets change in the manifest directory and on the test API server;
# after each batch a clean agent must converge (the test's header says to
# what). Prints the seed, then the counts: kills (by where they landed),
# batches, failures. A failure prints the seed to replay it with.
#
#   bench/storm.sh [--build DIR] [--iterations N | --seconds S] [--kills K] [--seed SEED] [--runtime exec|runc]
#
# DIR defaults to build/dev (daemonlet, daemonlet-shim, notify_listen and
# fake_apiserver built there). --iterations counts batches of K kills
# (default 5); --seconds (default 300) ends after the batch that passes it.
# --runtime runc (root, runc, busybox-static): the manifest directory only,
# with the busybox image imported anew now and then (kills mid-import).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build=$repo/build/dev
iterations=0
seconds=300
kills=5
seed=
runtime=exec
usage() {
    echo "usage: $0 [--build DIR] [--iterations N | --seconds S] [--kills K] [--seed SEED] [--runtime exec|runc]" >&2
    exit 2
}
while (($#)); do
    case $1 in
    --build) build=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --kills) kills=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --runtime) runtime=$2; shift 2 ;;
    *) usage ;;
    esac
done
for b in agent/daemonlet tests/notify_listen tests/fake_apiserver; do
    [[ -x $build/$b ]] || { echo "storm: $build/$b is not built" >&2; exit 1; }
done
DAEMONLET=$build/agent/daemonlet NOTIFY_LISTEN=$build/tests/notify_listen FAKE_APISERVER=$build/tests/fake_apiserver \
    STORM_BATCHES=$iterations STORM_SECONDS=$seconds STORM_KILLS=$kills STORM_SEED=$seed STORM_RUNTIME=$runtime \
    exec bash "$repo/tests/agent/test_storm.sh"
