#!/usr/bin/env bash
# A published install file in the manifest directory (issue 13 §1 and the
# file source of §2): the file's DaemonSet runs though the file also holds a
# Namespace, RBAC, a ServiceAccount, a CRD, a Service, a ConfigMap and a
# Secret; the ConfigMaps and Secrets are offered to pods (`status -o json`
# lists them by namespace/name with their key counts) and still are after a
# kill -9 and a start that finds the file broken (they come from the file's
# stored last good version); other kinds are logged once per file version,
# not per rescan; the file's static pod runs; a name two files define goes to the first;
# no Secret value ever reaches the agent's log. Exec runtime.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
data=$(dirname "${BASH_SOURCE[0]}")/../data

start_notify_listener 30
write_config "{}" "[]"
loop='trap \"exit 0\" TERM; while true; do sleep 0.2; done'

# The published file's documents up to its DaemonSet, then a DaemonSet of
# the same name the exec runtime can run.
write_install() {  # write_install FILE [EXTRA_DOCUMENTS]
    {
        sed '/^apiVersion: apps\/v1$/,$d' "$data/manifests/cni-install.yaml"
        cat <<DS
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: kube-flannel-ds, namespace: kube-flannel}
spec:
  selector: {matchLabels: {app: flannel}}
  template:
    metadata: {labels: {app: flannel}}
    spec:
      terminationGracePeriodSeconds: 2
      serviceAccountName: flannel
      containers:
        - name: main
          image: none
          command: ["/bin/sh", "-c", "$loop", "it-marker-$$-flannel"]
DS
        printf '%s' "${2:-}"
    } >"$man/$1.tmp"
    mv "$man/$1.tmp" "$man/$1"
}

status_json() { "$dl" status -o json --config "$cfg"; }
pods_json() { "$dl" get pods -A -o json --config "$cfg"; }
flannel_runs() {
    pods_json | jq -e '.items | any(.metadata.namespace == "kube-flannel" and .status.phase == "Running")'
}
# configObjects lists the ConfigMap with KEYS keys, and the Secret.
config_listed() {  # config_listed KEYS
    status_json | jq -e --argjson k "$1" '.configObjects as $c
        | ($c.configMaps | any(.namespace == "kube-flannel" and .name == "kube-flannel-cfg" and .keys == $k))
        and ($c.secrets == [{"namespace": "kube-flannel", "name": "flannel-etcd", "type": "Opaque", "keys": 2,
                             "file": $f}])' --arg f "$man/cni.yaml"
}
reports_broken() {
    status_json | jq -e --arg p "$man/cni.yaml" '.manifests.broken | any(.path == $p and .lastGoodInForce)'
}
count_in_log() { grep -c -- "$1" "$agent_log"; }
# The Secret's values as written (base64 and decoded) and its stringData.
no_secret_in_logs() {
    ! grep -E 'czNjcjN0LXZhbHVlLUlUU0VDUkVU|s3cr3t-value-ITSECRET|IT-STRINGDATA-SECRET|IT-BAD-SECRET' "$work"/agent.*.log
}
stop_agent() {
    kill "-$1" "$agent"
    wait "$agent" 2>/dev/null
    agent=
}

static_pod=$'---\napiVersion: v1\nkind: Pod\nmetadata: {name: static-web, namespace: kube-system}\nspec:\n  restartPolicy: Never\n  containers: [{name: web, image: none, command: [/bin/true]}]\n'
write_install cni.yaml "$static_pod"
start_own_agent
wait_for "the published file's DaemonSet runs" 30 flannel_runs
wait_for "status lists the file's ConfigMap and Secret" 30 config_listed 3
[[ $(count_in_log "7 objects not used on a board: Namespace kube-flannel, ClusterRole flannel") == 1 ]] && ok ||
    fail "the other kinds are not logged once"
# The file's static pod runs (test_static_pods.sh has the rest).
wait_for "the file's static pod has run" 30 bash -c "\"$dl\" get pods -A -o json --config \"$cfg\" |
    jq -e '.items | any(.metadata.name == \"static-web-it-node\" and .status.phase == \"Succeeded\")'"

# A second file with the same ConfigMap: the first path keeps it, said once.
cat >"$man/zz.yaml" <<'EOF2'
apiVersion: v1
kind: ConfigMap
metadata: {name: kube-flannel-cfg, namespace: kube-flannel}
data: {only: one}
EOF2
wait_for "the conflict is logged" 30 grepq "ConfigMap kube-flannel/kube-flannel-cfg is defined in both $man/cni.yaml and $man/zz.yaml" "$agent_log"
config_listed 3 >/dev/null && ok || fail "the second file's ConfigMap replaced the first's"
rm -f "$man/zz.yaml"

# A change to the ConfigMap is seen: 4 keys.
write_install cni.yaml "$static_pod"$'---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: kube-flannel}\ndata: {a: b}\n'
sed -i 's/^  net-conf.json: |$/  extra.json: "{}"\n  net-conf.json: |/' "$man/cni.yaml"
wait_for "the edited ConfigMap's keys" 30 config_listed 4
# Touched, not changed: nothing logged again.
before=$(count_in_log "not used on a board")
touch "$man/cni.yaml"
# rollout status reads the manifest directory at once (control.cpp): the
# touched file has been looked at when it answers.
"$dl" rollout status ds/kube-flannel-ds -n kube-flannel --timeout 20s --config "$cfg" >/dev/null && ok ||
    fail "rollout status of the published file's DaemonSet"
config_listed 4 >/dev/null && ok || fail "status no longer lists 4 keys after a touch"
[[ $(count_in_log "not used on a board") == "$before" ]] && ok || fail "a rescan logged the other kinds again"

# One bad document (a Secret whose data is not base64): the file is broken,
# its last good version stays in force, the bad value is not logged.
cp "$man/cni.yaml" "$work/cni.good"
printf -- '---\napiVersion: v1\nkind: Secret\nmetadata: {name: bad, namespace: kube-flannel}\ndata: {k: "IT-BAD-SECRET-VALUE!"}\n' >>"$man/cni.yaml"
wait_for "a bad Secret breaks the file, its last good version in force" 30 reports_broken
wait_for "...the error names the key and the reason" 30 grepq 'data\[k\]: Invalid value: illegal base64 data at input byte 2' "$agent_log"
config_listed 4 >/dev/null && ok || fail "the last good version's ConfigMap and Secret are no longer listed"
cp "$work/cni.good" "$man/cni.yaml"
wait_for "fixed back to its last good version" 30 bash -c "\"$dl\" status -o json --config \"$cfg\" | jq -e '.manifests.broken == []'"

# An immutable ConfigMap edited in its file: the API server refuses the
# update (ValidateConfigMapUpdate: data: Forbidden: field is immutable when
# `immutable` is set): the file is broken, its last good version in force.
frozen() {  # frozen DATA
    printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: frozen, namespace: kube-flannel}\nimmutable: true\ndata: %s\n' "$1" >"$man/frozen.yaml.tmp"
    mv "$man/frozen.yaml.tmp" "$man/frozen.yaml"
}
frozen_keys() { status_json | jq -e --argjson k "$1" '.configObjects.configMaps | any(.name == "frozen" and .keys == $k)'; }
frozen_refused() {
    status_json | jq -e --arg p "$man/frozen.yaml" '.manifests.broken == [{path: $p, lastGoodInForce: true,
        errors: [$p + ": document 1: ConfigMap kube-flannel/frozen: data: Forbidden: field is immutable when `immutable` is set"]}]'
}
frozen '{a: "1"}'
wait_for "an immutable ConfigMap is listed" 30 frozen_keys 1
frozen '{a: "1", b: "2"}'
wait_for "its edit is refused: the file broken, naming the object and the field" 30 frozen_refused
frozen_keys 1 >/dev/null && ok || fail "the refused edit replaced the immutable ConfigMap"
rm "$man/frozen.yaml"
wait_for "the file removed: nothing broken" 30 bash -c "\"$dl\" status -o json --config \"$cfg\" | jq -e '.manifests.broken == []'"

# kill -9; the file breaks while the agent is down: the ConfigMaps and
# Secrets come from its stored last good version.
stop_agent KILL
printf 'spec: [\n' >>"$man/cni.yaml"
start_own_agent
wait_for "after a restart the file is reported broken" 30 reports_broken
wait_for "...and its last good version's ConfigMap and Secret are listed" 30 config_listed 4
wait_for "...and the DaemonSet still runs" 30 flannel_runs
[[ $(count_in_log "7 objects not used on a board") == 1 ]] && ok ||
    fail "the stored version's other kinds are not logged once at the start"
stop_agent TERM

no_secret_in_logs >/dev/null && ok || fail "a Secret value is in the agent's log"
finish
