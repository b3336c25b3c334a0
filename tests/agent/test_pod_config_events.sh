#!/usr/bin/env bash
# A cluster DaemonSet's pod whose ConfigMaps and Secrets are not what it
# needs, as the kubelet reports it on its Pod (issue 13 §1 to §3, with
# apiServer.podStatus; the Events read with the real kubectl):
#   1. kuberuntime startContainer (generateContainerConfig failed): a Secret
#      the cluster lacks makes the container wait with
#      CreateContainerConfigError, and a Warning Failed Event
#      `Error: secret "evt-secret" not found` is on the Pod, with the
#      container's fieldPath; the Secret put, the container starts;
#   2. kubelet_pods.go makeEnvironmentVariables: envFrom keys that are not
#      environment variable names are skipped, and a Warning
#      InvalidEnvironmentVariableNames Event is on the Pod (no fieldPath),
#      upstream's message: the keys sorted, joined with ", ";
#   3. a namespace without kube-root-ca.crt: the kube-api-access volume's
#      ca.crt is the kubeconfig's CA, byte for byte.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/cluster_lib.sh"
require_kubectl

start_notify_listener
start_fake
ctl PUT configmaps/it/evt-cm '{"data": {"GOOD": "yes", "2bad": "y", "1bad": "x"}}' >/dev/null
write_config "{}" "[]"
api_server_config "registerNode: true"
env_file=$work/evt-env.txt
put_ds evt '' "$(jq -nc --arg m "it-marker-$$-evt" --arg f "$env_file" '{containers: [{name: "main", image: "none",
    command: ["/bin/sh", "-c", ("env > " + $f + ".tmp && mv " + $f + ".tmp " + $f + "; exec sleep 600"), $m],
    env: [{name: "TOKEN", valueFrom: {secretKeyRef: {name: "evt-secret", key: "token"}}}],
    envFrom: [{configMapRef: {name: "evt-cm"}}]}]}')"
put_revision evt 5b7c9d8f46
start_own_agent
wait_ready 0

# evt's Pod, as kubectl lists it.
evt_pod() {
    k get pods -n it -o json |
        jq -ce '[.items[] | select(.metadata.ownerReferences[0].name == "evt")] | if length == 1 then .[0] else error("not one") end'
}
# An Event of evt's Pod, as kubectl lists it: has_event TYPE REASON MESSAGE [FIELD_PATH].
has_event() {
    local pod
    pod=$(evt_pod) || return 1
    k get events -n it -o json | jq -e --argjson p "$pod" --arg t "$1" --arg r "$2" --arg m "$3" --arg f "${4:-}" '
        any(.items[]; .involvedObject == ({kind: "Pod", apiVersion: "v1", namespace: "it", name: $p.metadata.name,
                                          uid: $p.metadata.uid} + (if $f == "" then {} else {fieldPath: $f} end))
                      and .type == $t and .reason == $r and .message == $m)' >/dev/null
}
waiting() { pods_json | jq -e '.items[] | select(.metadata.name | startswith("evt-")) | .status.containerStatuses[0].state.waiting | .reason == "CreateContainerConfigError" and .message == "secret \"evt-secret\" not found"'; }
wait_for "1. the container waits for the Secret the cluster lacks" 10 waiting
wait_for "1. ... a Failed Event on its Pod: Error: <the message>, the container's fieldPath" 10 \
    has_event Warning Failed 'Error: secret "evt-secret" not found' 'spec.containers{main}'
[[ ! -e $env_file ]] && ok || fail "the container ran without its Secret"
ctl PUT secrets/it/evt-secret '{"data": {"token": "dG9r"}}' >/dev/null
wait_for "1. ... it starts once the Secret exists" 10 test -s "$env_file"
grep -qx "GOOD=yes" "$env_file" && grep -qx "TOKEN=tok" "$env_file" && ok || fail "env: $(tr '\n' ' ' <"$env_file")"
wait_for "2. InvalidEnvironmentVariableNames on the Pod, upstream's message" 10 \
    has_event Warning InvalidEnvironmentVariableNames \
    "Keys [1bad, 2bad] from the EnvFrom configMap it/evt-cm were skipped since they are considered invalid environment variable names."

# 3. No kube-root-ca.crt on this server: the kubeconfig's CA.
ca_file() { echo "$state/pod-volumes/$(pods_json | jq -r '.items[] | select(.metadata.name | startswith("evt-")) | .metadata.uid')"/kube-api-access-*/ca.crt; }
ca_written() { test -s "$(ca_file)"; }
wait_for "3. ca.crt is written" 10 ca_written
cmp -s "$(ca_file)" "$work/cert.pem" && ok || fail "3. ca.crt is not the kubeconfig's CA ($work/cert.pem)"
finish
