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

import=$work/import
out=$work/out
mkdir -p "$import" "$out"
trap runc_cleanup EXIT
"$here/../data/make_busybox_image.sh" "$import/busybox.tar" >/dev/null || { echo "FAIL: cannot build the image"; exit 1; }

write_runc_config "$import"
script='cat /etc/podinfo/labels > /out/labels; stat -L -c %a /etc/podinfo/name > /out/mode;'
script+=' if touch /etc/podinfo/x 2>/dev/null; then echo rw; else echo ro; fi > /out/ro;'
script+=' ls /etc/proj > /out/proj; cat /etc/proj/podname > /out/podname;'
script+=' env > /out/env.tmp; mv /out/env.tmp /out/env; while :; do sleep 1; done'
DS_IMAGE=busybox write_ds down.yaml down "$script" "$(
    cat <<EOF
volumes:
        - name: info
          downwardAPI:
            items:
              - {path: labels, fieldRef: {fieldPath: metadata.labels}}
              - {path: name, fieldRef: {fieldPath: metadata.name}, mode: 0440}
        - name: proj
          projected:
            sources:
              - downwardAPI: {items: [{path: podname, fieldRef: {fieldPath: metadata.name}}]}
              - serviceAccountToken: {path: token}
              - configMap: {name: not-there, optional: true}
        - {name: out, hostPath: {path: $out}}
EOF
)" "" "$(
    cat <<'EOF'
          volumeMounts:
            - {name: info, mountPath: /etc/podinfo}
            - {name: proj, mountPath: /etc/proj}
            - {name: out, mountPath: /out}
          env:
            - {name: MY_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
            - {name: MY_NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
EOF
)"
start_agent

pod_field() { "$dl" get pods -A -o json --config "$cfg" | jq -r ".items[] | select(.metadata.name | startswith(\"down-\")) | $1"; }
wait_for "down runs" 60 pod_running it down
wait_for "the container wrote what it sees" 20 test -s "$out/env"
name=$(pod_field .metadata.name)
hash=$(pod_field '.metadata.labels["controller-revision-hash"]')
[[ $(cat "$out/labels") == "app=\"down\""$'\n'"controller-revision-hash=\"$hash\"" ]] && ok ||
    fail "/etc/podinfo/labels: $(cat "$out/labels")"
[[ $(cat "$out/mode") == 440 ]] && ok || fail "/etc/podinfo/name mode $(cat "$out/mode")"
[[ $(cat "$out/ro") == ro ]] && ok || fail "the downwardAPI volume is writable from inside"
# A projected volume: its downwardAPI file; no token yet (issue 13 §3) and
# an optional missing ConfigMap add nothing and fail nothing.
[[ $(cat "$out/proj") == podname && $(cat "$out/podname") == "$name" ]] && ok ||
    fail "/etc/proj: $(cat "$out/proj" | tr '\n' ' ')"
grep -qx "MY_NAME=$name" "$out/env" && ok || fail "env MY_NAME: $(grep MY_NAME "$out/env")"
grep -qx "MY_NODE=it-node" "$out/env" && ok || fail "env MY_NODE: $(grep MY_NODE "$out/env")"
finish
