#!/usr/bin/env bash
# The daemonlet CLI driven as a user drives it: the real binary on the
# example manifests shipped in the repo. Under a cross build, EMULATOR holds
# CMake's CROSSCOMPILING_EMULATOR (a ;-list) and the binary runs under qemu.
set -uo pipefail
root=${1:?usage: test_cli.sh REPO_ROOT}
ex="$root/examples"
emu=${EMULATOR:-}
emu=${emu//;/ }
dl() { $emu "$DAEMONLET" "$@"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

passed=0 failed=0
check() {  # check NAME EXPECTED_STATUS COMMAND... ; output in $tmp/out, $tmp/err
    local name=$1 want=$2
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local got=$?
    if [[ $got -eq $want ]]; then
        return 0
    fi
    echo "FAIL: $name: exit status $got, want $want"
    sed 's/^/  stdout: /' "$tmp/out"
    sed 's/^/  stderr: /' "$tmp/err"
    failed=$((failed + 1))
    return 1
}
expect() {  # expect NAME FILE PATTERN (grep -E)
    if grep -Eq -- "$3" "$tmp/$2"; then
        passed=$((passed + 1))
    else
        echo "FAIL: $1: $2 does not match /$3/"
        sed "s/^/  $2: /" "$tmp/$2"
        failed=$((failed + 1))
    fi
}

check "version" 0 dl version && expect "version names the libraries" out '^libraries: libuv .*SQLite .*libyaml'
for c in eval validate version; do
    check "$c --help" 0 dl "$c" --help && expect "$c --help shows usage" out '^Usage: daemonlet'
done
check "no command" 2 dl && expect "usage on stderr" err 'Usage: daemonlet COMMAND'
check "unknown command" 2 dl frobnicate && expect "names the command" err 'unknown command "frobnicate"'

# A DaemonSet that tolerates the node's NoSchedule taint, selects it and matches its affinity (Gt on RAM).
check "eval places sensor-reader on edge-01" 0 \
    dl eval --node "$ex/node-edge-01.yaml" --daemonset "$ex/daemonsets.yaml" --name plant/sensor-reader &&
    expect "shouldRun true" out '"shouldRun": true' && expect "shouldContinueRunning true" out '"shouldContinueRunning": true' &&
    expect "reasons empty" out '"reasons": \[\]' && expect "template hash" out '"templateHash": "[bcdfghjklmnpqrstvwxz2456789]+"'

# Untolerated NoSchedule taint: not placed, but a running pod keeps running.
check "eval log-shipper on edge-01" 0 \
    dl eval --node "$ex/node-edge-01.yaml" --daemonset "$ex/daemonsets.yaml" --name=log-shipper &&
    expect "shouldRun false" out '"shouldRun": false' && expect "keeps running" out '"shouldContinueRunning": true' &&
    expect "names the taint" out 'dedicated'

# Untolerated NoExecute taint: the pod must go.
check "eval log-shipper on edge-02" 0 \
    dl eval --node "$ex/node-edge-02-tainted.yaml" --daemonset "$ex/daemonsets.yaml" --name kube-system/log-shipper &&
    expect "shouldRun false" out '"shouldRun": false' && expect "must stop" out '"shouldContinueRunning": false' &&
    expect "names the NoExecute taint" out 'maintenance'

# Node selector mismatch (disktype sd vs ssd).
check "eval sensor-reader on edge-02" 0 \
    dl eval --node "$ex/node-edge-02-tainted.yaml" --daemonset "$ex/daemonsets.yaml" --name sensor-reader &&
    expect "not placed" out '"shouldRun": false' && expect "not kept" out '"shouldContinueRunning": false'

check "eval needs --name with several DaemonSets" 2 dl eval --node "$ex/node-edge-01.yaml" --daemonset "$ex/daemonsets.yaml" &&
    expect "explains" err 'choose one with --name'
check "eval of an invalid DaemonSet" 2 dl eval --node "$ex/node-edge-01.yaml" --daemonset "$ex/invalid.yaml" &&
    expect "names file, document and field" err 'invalid.yaml: document 1: spec.template.spec.containers\[0\].ports\[0\].containerPort: Invalid value: "eighty"'
check "eval with a missing file" 2 dl eval --node "$tmp/nope.yaml" --daemonset "$ex/daemonsets.yaml" &&
    expect "names the file" err 'nope.yaml: No such file or directory'
check "eval without flags" 2 dl eval && expect "says what is missing" err '--node and --daemonset are required'

check "validate the examples" 0 dl validate "$ex/daemonsets.yaml" "$ex/node-edge-01.yaml" "$ex/kubectl-dry-run.yaml" &&
    expect "lists each object" out 'daemonsets.yaml: document 3: DaemonSet kube-system/log-shipper: valid' &&
    expect "accepts kubectl dry-run output" out 'kubectl-dry-run.yaml: document 1: DaemonSet default/web: valid'
check "validate an invalid file" 1 dl validate "$ex/invalid.yaml" &&
    expect "type error with path" err 'spec.template.spec.containers\[0\].ports\[0\].containerPort: Invalid value: "eighty"'
# Fix the type error: the API validation errors then show, all of them.
sed 's/"eighty"/80/' "$ex/invalid.yaml" >"$tmp/invalid2.yaml"
check "validate reports every API error" 1 dl validate "$tmp/invalid2.yaml" &&
    expect "name" err 'metadata.name: Invalid value: "Bad_Name"' &&
    expect "selector" err 'selector` does not match template `labels`' &&
    expect "surge and unavailable both zero" err 'maxUnavailable: Required value: cannot be 0 when maxSurge is 0' &&
    expect "Exists with a value" err 'tolerations\[0\].operator: Invalid value' &&
    expect "image" err 'containers\[0\].image: Required value'
printf 'apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec: [\n' >"$tmp/broken.yaml"
check "validate malformed YAML" 1 dl validate "$tmp/broken.yaml" && expect "line number" err 'broken.yaml: document 1: line [0-9]+'
check "validate a missing file" 1 dl validate "$tmp/missing.yaml" && expect "names it" err 'missing.yaml: No such file'
check "validate unknown option" 2 dl validate --frob && expect "names it" err 'unknown option "--frob"'

# A published install file (issue 13 §1): every kind taken, each named as
# what it is; the ones a board does not use are not errors.
cni="$root/tests/data/manifests/cni-install.yaml"
check "validate a published install file" 0 dl validate "$cni" &&
    expect "the DaemonSet" out 'cni-install.yaml: document [0-9]+: DaemonSet kube-flannel/kube-flannel-ds: valid$' &&
    expect "a ConfigMap is data for pods" out 'ConfigMap kube-flannel/kube-flannel-cfg: valid \(3 keys, data for pods\)' &&
    expect "a Secret with its key count" out 'Secret kube-flannel/flannel-etcd: valid \(Opaque, 2 keys, data for pods\)' &&
    expect "a Namespace is not used" out 'Namespace kube-flannel: valid \(not used on a board\)' &&
    expect "an RBAC name with ':'" out 'ClusterRole system:aggregated-flannel-view: valid \(not used on a board\)' &&
    expect "a CRD is not used" out 'CustomResourceDefinition networkpolicies.crd.example.org: valid \(not used on a board\)'
if grep -Eq 'czNjcjN0|ITSECRET|IT-STRINGDATA' "$tmp/out" "$tmp/err"; then
    echo "FAIL: validate printed a Secret value"; failed=$((failed + 1))
else passed=$((passed + 1)); fi
check "validate -o json a published install file" 0 dl validate -o json "$cni" &&
    if jq -e '.valid == true and (.files | length) == 1 and (.files[0].errors == [])
        and ([.files[0].objects[] | select(.usedOnBoard == false) | .kind] | sort
             == ["ClusterRole", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Namespace",
                 "Service", "ServiceAccount"])
        and ([.files[0].objects[] | select(.usedOnBoard) | .kind] | sort == ["ConfigMap", "DaemonSet", "Secret"])
        and (.files[0].objects[] | select(.kind == "Secret") | .keys == 2 and .type == "Opaque")
        and (.files[0].objects[] | select(.kind == "ServiceAccount") | .namespace == "kube-flannel" and .name == "flannel")
        and (.files[0].objects[] | select(.kind == "Namespace") | .namespace == "")' "$tmp/out" >/dev/null; then
        passed=$((passed + 1))
    else
        echo "FAIL: validate -o json:"; cat "$tmp/out"; failed=$((failed + 1))
    fi
grepq_secret() { grep -Eq 'czNjcjN0|ITSECRET|IT-STRINGDATA' "$tmp/out" "$tmp/err"; }
if grepq_secret; then echo "FAIL: validate -o json printed a Secret value"; failed=$((failed + 1)); else passed=$((passed + 1)); fi
# The RBAC file the docs tell users to apply: valid, and on ConfigMaps and
# Secrets exactly the verbs the agent uses (list and watch, never a GET).
check "validate dist/rbac.yaml" 0 dl validate "$root/dist/rbac.yaml" &&
    expect "its ClusterRole" out 'ClusterRole daemonlet-agent: valid' &&
    if grep -A1 -F 'resources: ["configmaps", "secrets"]' "$root/dist/rbac.yaml" | grep -qxF '    verbs: ["list", "watch"]'; then
        passed=$((passed + 1))
    else
        echo "FAIL: dist/rbac.yaml: configmaps and secrets: not exactly list and watch"; failed=$((failed + 1))
    fi
check "eval takes a published install file" 0 dl eval --node "$ex/node-edge-01.yaml" --daemonset "$cni" &&
    expect "its DaemonSet" out '"daemonSet": "kube-flannel/kube-flannel-ds"'
# One bad document: exit 1, the error in the JSON with its document, the
# other objects still listed; the Secret's bad value is not shown.
{ cat "$cni"; printf -- '---\napiVersion: v1\nkind: Secret\nmetadata: {name: bad, namespace: x}\ndata: {k: "IT-STRINGDATA-BAD!"}\n'; } >"$tmp/cni-bad.yaml"
check "validate -o json with one bad Secret" 1 dl validate -o json "$tmp/cni-bad.yaml" &&
    if jq -e '.valid == false and (.files[0].objects | length) == 10
        and .files[0].errors == [{"document": 11, "field": "data[k]", "message": "Invalid value: illegal base64 data at input byte 2"}]' \
        "$tmp/out" >/dev/null; then passed=$((passed + 1)); else echo "FAIL: validate -o json, one bad Secret:"; cat "$tmp/out"; failed=$((failed + 1)); fi
if grepq_secret; then echo "FAIL: a bad Secret's value was printed"; failed=$((failed + 1)); else passed=$((passed + 1)); fi
check "validate -o yaml is refused" 2 dl validate -o yaml "$cni" && expect "names it" err 'unsupported output "yaml"'

# The operator commands: argument errors are caught before any agent or
# store is needed (kubectl's messages where kubectl has one).
for c in describe delete rollout get logs run; do
    check "$c --help" 0 dl "$c" --help && expect "$c --help shows usage" out '^Usage: daemonlet'
done
for c in describe delete rollout get logs; do
    check "$c --help lists the shared flags" 0 dl "$c" --help && expect "$c: -A" out 'all-namespaces' &&
        expect "$c: \$DAEMONLET_CONFIG" out 'DAEMONLET_CONFIG'
done
check "delete without a pod" 2 dl delete && expect "asks which" err 'which pod'
check "delete ds is refused" 2 dl delete ds agent && expect "DaemonSets come from files" err 'come from the manifest files'
check "delete an unknown kind" 2 dl delete deployment x && expect "names it" err 'unknown resource "deployment"'
check "delete by name across namespaces" 2 dl delete pod x -A &&
    expect "kubectl's message" err '^error: a resource cannot be retrieved by name across all namespaces$'
check "delete --wait with a bad value" 2 dl delete pod x --wait=maybe && expect "names the flag" err '--wait: invalid boolean "maybe"'
check "delete --timeout with a bad value" 2 dl delete pod x --timeout=soon && expect "names the flag" err '--timeout: invalid duration'
check "delete -n without a value" 2 dl delete pod x -n && expect "unexpected" err 'unexpected argument "-n"'
check "rollout without a subcommand" 2 dl rollout && expect "usage" err 'Usage: daemonlet rollout'
check "rollout with an unknown subcommand" 2 dl rollout restart ds/x && expect "names it" err 'unknown subcommand "restart"'
check "rollout undo without a DaemonSet" 2 dl rollout undo && expect "asks which" err 'which DaemonSet'
check "rollout undo of another kind" 2 dl rollout undo deployment/x && expect "names the kind" err 'resource type "deployment"'
check "rollout undo ds/ without a name" 2 dl rollout undo ds/ && expect "says a name is needed" err 'a name is needed'
check "rollout undo --to-revision not a number" 2 dl rollout undo ds/x --to-revision=two &&
    expect "names the flag" err '--to-revision: invalid number "two"'
check "rollout status --watch with a bad value" 2 dl rollout status ds/x --watch=perhaps && expect "names the flag" err '--watch: invalid boolean'
check "rollout history --to-revision is undo's" 2 dl rollout history ds/x --to-revision=1 && expect "unexpected" err 'unexpected argument'
check "describe another kind" 2 dl describe deployment x && expect "names the kind" err 'resource type "deployment"'
dl_config_env() { DAEMONLET_CONFIG="$1" dl "${@:2}"; }
check "a missing \$DAEMONLET_CONFIG is named" 2 dl_config_env "$tmp/nope.yaml" get pods &&
    expect "names the file and where it came from" err 'nope.yaml: No such file or directory \(from \$DAEMONLET_CONFIG\)'
check "a missing --config is named" 2 dl rollout history ds/x --config "$tmp/nope.yaml" && expect "names the file" err 'nope.yaml: No such file'

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
