#!/usr/bin/env bash
# README's run command: installs what is missing, builds daemonlet (release
# preset) and shows the decision core on the example manifests in examples/:
# which DaemonSets each example board should run, and why not where not.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

DAEMONLET_SKIP_ARMHF=1 scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target daemonlet
dl=build/release/agent/daemonlet

section() { printf '\n== %s\n' "$*"; }

section "daemonlet version"
"$dl" version

section "daemonlet validate examples/*.yaml (valid manifests)"
"$dl" validate examples/daemonsets.yaml examples/kubectl-dry-run.yaml examples/node-edge-01.yaml \
    examples/node-edge-02-tainted.yaml

section "daemonlet validate examples/invalid.yaml (every error, with file, document and field)"
"$dl" validate examples/invalid.yaml || echo "(exit status $?: invalid, as expected)"

for node in examples/node-edge-01.yaml examples/node-edge-02-tainted.yaml; do
    for ds in monitoring/node-exporter plant/sensor-reader kube-system/log-shipper; do
        section "daemonlet eval --node $node --daemonset examples/daemonsets.yaml --name $ds"
        "$dl" eval --node "$node" --daemonset examples/daemonsets.yaml --name "$ds"
    done
done
