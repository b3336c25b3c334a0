# Shared by test_config_volumes_runc.sh and test_config_volumes_cri.sh
# (sourced after lib.sh): a pod with a downwardAPI and a projected volume
# and a hostPath $out where its container writes what it sees (its
# /etc/hosts and /etc/hostname too), and the checks of what it wrote. EXTRA_SPEC_YAML (e.g. "hostNetwork: true") goes
# into the pod spec.
out=$work/out
mkdir -p "$out"
write_down_ds() {  # write_down_ds [EXTRA_SPEC_YAML]
    local spec_extra=${1:-}
    script='cat /etc/podinfo/labels > /out/labels; stat -L -c %a /etc/podinfo/name > /out/mode;'
    script+=' if touch /etc/podinfo/x 2>/dev/null; then echo rw; else echo ro; fi > /out/ro;'
    script+=' ls /etc/proj > /out/proj; cat /etc/proj/podname > /out/podname;'
    script+=' cat /etc/hosts > /out/hosts; cat /etc/hostname > /out/hostname;'
    script+=' env > /out/env.tmp; mv /out/env.tmp /out/env; while :; do sleep 1; done'
    DS_IMAGE=${DS_IMAGE:-busybox} write_ds down.yaml down "$script" "$(
        cat <<EOF
$spec_extra
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
}
# The checks, once the pod runs.
check_down_pod() {
    pod_field() { "$dl" get pods -A -o json --config "$cfg" | jq -r ".items[] | select(.metadata.name | startswith(\"down-\")) | $1"; }
    wait_for "down runs" 60 pod_running it down
    wait_for "the container wrote what it sees" 20 test -s "$out/env"
    name=$(pod_field .metadata.name)
    hash=$(pod_field '.metadata.labels["controller-revision-hash"]')
    [[ $(cat "$out/labels") == "app=\"down\""$'\n'"controller-revision-hash=\"$hash\"" ]] && ok ||
        fail "/etc/podinfo/labels: $(cat "$out/labels")"
    [[ $(cat "$out/mode") == 440 ]] && ok || fail "/etc/podinfo/name mode $(cat "$out/mode")"
    [[ $(cat "$out/ro") == ro ]] && ok || fail "the downwardAPI volume is writable from inside"
    # A projected volume: its downwardAPI file; a serviceAccountToken source
    # (no apiServer here: no token, written only when the agent follows a
    # cluster) and an optional missing ConfigMap add nothing and fail nothing.
    [[ $(cat "$out/proj") == podname && $(cat "$out/podname") == "$name" ]] && ok ||
        fail "/etc/proj: $(cat "$out/proj" | tr '\n' ' ')"
    grep -qx "MY_NAME=$name" "$out/env" && ok || fail "env MY_NAME: $(grep MY_NAME "$out/env")"
    grep -qx "MY_NODE=it-node" "$out/env" && ok || fail "env MY_NODE: $(grep MY_NODE "$out/env")"
}
