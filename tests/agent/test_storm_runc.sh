#!/usr/bin/env bash
# The kill -9 storm (test_storm.sh) on the runc runtime, one short batch:
# kills before READY, mid-reconcile, mid-rollout and mid-import, then no runc
# container nor root filesystem mount beyond the pods. Needs root and runc
# (skips without them); bench/storm.sh --runtime runc runs it longer.
STORM_RUNTIME=runc STORM_BATCHES=${STORM_BATCHES:-1} STORM_KILLS=${STORM_KILLS:-4} \
    exec bash "$(dirname "${BASH_SOURCE[0]}")/test_storm.sh"
