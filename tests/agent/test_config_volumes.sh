#!/usr/bin/env bash
# ConfigMaps and Secrets in the manifest directory reach a pod as the
# kubelet gives them (issue 13 §2): env (configMapKeyRef, secretKeyRef,
# envFrom with a prefix, fieldRef) read from inside the container, the
# configMap and secret volumes' files with their modes, a ConfigMap edit
# rewritten in place, and a missing Secret making the container wait with
# CreateContainerConfigError and the kubelet's message until it appears.
#
# The exec runtime mounts no volume (hostPath and emptyDir neither): the
# agent still writes configMap and secret volumes, at
# <stateDir>/pod-volumes/<pod uid>/<volume>, and this script reads them
# there. runc and CRI bind-mount that directory at the mountPath.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

pods_json() { "$dl" get pods -A -o json --config "$cfg"; }
pod_field() { pods_json | jq -r ".items[] | select(.metadata.name | startswith(\"cfg-\")) | $1"; }
down_field() { pods_json | jq -r ".items[] | select(.metadata.name | startswith(\"down-\")) | $1"; }
is() { [[ $("${@:2}") == "$1" ]]; }  # is EXPECTED COMMAND...
env_file=$work/env.txt
down_env=$work/down-env.txt
reason() { pod_field '.status.containerStatuses[0].state.waiting.reason // ""'; }
message() { pod_field '.status.containerStatuses[0].state.waiting.message // ""'; }

# 1. Without any ConfigMap or Secret: the downward API (env and a
# downwardAPI volume), and a Secret that does not exist.
write_config "{}" "[]"
cat >"$man/down.yaml" <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: down, namespace: it}
spec:
  selector: {matchLabels: {app: down}}
  template:
    metadata: {labels: {app: down, tier: edge}, annotations: {note: hi}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
        - name: main
          image: none
          command: ["/bin/sh", "-c", "env > $down_env.tmp && mv $down_env.tmp $down_env; trap 'exit 0' TERM; while true; do sleep 0.2; done", "it-marker-$$-down"]
          resources: {limits: {memory: 64Mi}}
          env:
            - {name: MY_NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
            - {name: MY_SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}
            - {name: MY_TIER, valueFrom: {fieldRef: {fieldPath: "metadata.labels['tier']"}}}
            - {name: MEM_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
            - {name: HELLO, value: "\$(MY_TIER)-x"}
      volumes:
        - name: info
          downwardAPI:
            items:
              - {path: labels, fieldRef: {fieldPath: metadata.labels}}
              - {path: sub/name, fieldRef: {fieldPath: metadata.name}, mode: 0400}
EOF
cat >"$man/needs-secret.yaml" <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: cfg, namespace: it}
spec:
  selector: {matchLabels: {app: cfg}}
  template:
    metadata: {labels: {app: cfg}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
        - name: main
          image: none
          command: ["/bin/sh", "-c", "touch $env_file; exec sleep 1000", "it-marker-$$-cfg"]
          env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: agent-creds, key: token}}}]
EOF
start_agent
wait_for "down runs" 15 pod_running it down
wait_for "down wrote its env" 10 test -s "$down_env"
for want in "MY_NODE=it-node" "MY_SA=default" "MY_TIER=edge" "MEM_MI=64" "HELLO=edge-x"; do
    grep -qx "$want" "$down_env" && ok || fail "down env: no $want in $(tr '\n' ' ' <"$down_env")"
done
down_vol=$state/pod-volumes/$(down_field .metadata.uid)/info
hash=$(down_field '.metadata.labels["controller-revision-hash"]')
[[ $(cat "$down_vol/labels" 2>/dev/null) == "app=\"down\""$'\n'"controller-revision-hash=\"$hash\""$'\n'"tier=\"edge\"" ]] &&
    ok || fail "info/labels: $(cat "$down_vol/labels")"
[[ $(cat "$down_vol/sub/name") == $(down_field .metadata.name) && $(stat -L -c %a "$down_vol/sub/name") == 400 ]] &&
    ok || fail "info/sub/name"
wait_for "a missing Secret: the pod waits with CreateContainerConfigError" 15 is CreateContainerConfigError reason
is 'secret "agent-creds" not found' message && ok || fail "waiting message: '$(message)'"
get_pods | grep -E "^it +cfg-[a-z0-9]+ +0/1 +CreateContainerConfigError " >/dev/null && ok ||
    fail "get pods: $(get_pods)"
[[ ! -e $env_file ]] && ok || fail "the container ran without its Secret"
"$dl" describe ds cfg -n it --config "$cfg" | grep -E 'Warning +Failed .*Error: secret "agent-creds" not found' >/dev/null &&
    ok || fail "describe: no Failed event: $("$dl" describe ds cfg -n it --config "$cfg" | tail -5)"
# describe pod: the container's state as kubectl describe prints it.
cfg_pod=$(pod_field .metadata.name)
"$dl" describe pod "$cfg_pod" -n it --config "$cfg" |
    grep -A2 -E '^ +State: +Waiting$' | tr -s ' ' | tr '\n' '|' |
    grepq -F ' State: Waiting| Reason: CreateContainerConfigError| Message: secret "agent-creds" not found|' &&
    ok || fail "describe pod: $("$dl" describe pod "$cfg_pod" -n it --config "$cfg" | grep -A2 State:)"
rm "$man/needs-secret.yaml"
wait_for "cfg is removed" 20 no_pod it cfg

config_map() {  # config_map LEVEL: the ConfigMap and the DaemonSet in one file
    cat >"$man/agent.yaml.tmp" <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: agent-config, namespace: it}
data:
  agent.conf: "level=$1"
  LOG_LEVEL: "$1"
  1bad: "skipped from envFrom without a prefix"
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: cfg, namespace: it}
spec:
  selector: {matchLabels: {app: cfg}}
  template:
    metadata: {labels: {app: cfg}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
        - name: main
          image: none
          command: ["/bin/sh", "-c", "cat /proc/\$\$\$\$/environ > $env_file.tmp && mv $env_file.tmp $env_file; trap 'exit 0' TERM; while true; do sleep 0.2; done", "it-marker-$$-cfg"]
          env:
            - {name: TOKEN, valueFrom: {secretKeyRef: {name: agent-creds, key: token}}}
            - {name: LEVEL, valueFrom: {configMapKeyRef: {name: agent-config, key: LOG_LEVEL}}}
            - {name: NOPE, valueFrom: {configMapKeyRef: {name: agent-config, key: absent, optional: true}}}
            - {name: MY_POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
            - {name: MY_APP, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
          envFrom: [{prefix: CFG_, configMapRef: {name: agent-config}}, {configMapRef: {name: agent-config}}]
          volumeMounts:
            - {name: config, mountPath: /etc/agent}
            - {name: creds, mountPath: /etc/creds}
      volumes:
        - {name: config, configMap: {name: agent-config}}
        - {name: creds, secret: {secretName: agent-creds, defaultMode: 0400}}
        - {name: maybe, secret: {secretName: not-there, optional: true}}
EOF
    mv "$man/agent.yaml.tmp" "$man/agent.yaml"
}
config_map info

# 2. With its ConfigMap in the same file and its Secret missing: it waits.
wait_for "the pod waits with CreateContainerConfigError" 15 is CreateContainerConfigError reason
is 'secret "agent-creds" not found' message && ok || fail "waiting message: '$(message)'"
get_pods | grep -E "^it +cfg-[a-z0-9]+ +0/1 +CreateContainerConfigError " >/dev/null && ok ||
    fail "get pods: $(get_pods)"
[[ ! -e $env_file ]] && ok || fail "the container ran without its Secret"

# 3. The Secret arrives (another file): the container starts.
cat >"$man/secret.yaml" <<EOF
apiVersion: v1
kind: Secret
metadata: {name: agent-creds, namespace: it}
stringData: {token: s3cr3t-t0ken}
EOF
wait_for "the pod runs once its Secret exists" 20 pod_running it cfg
wait_for "the container wrote its env" 10 test -s "$env_file"
# The environment the shell was started with (/proc/PID/environ: sh itself
# would drop names that are not shell identifiers, such as CFG_agent.conf;
# "$$$$" is "$$" once the agent expands the command).
env_lines() { tr '\0' '\n' <"$env_file"; }
has_env() { env_lines | grep -qx "$1"; }
for want in "TOKEN=s3cr3t-t0ken" "LEVEL=info" "CFG_LOG_LEVEL=info" "CFG_agent.conf=level=info" \
    "CFG_1bad=skipped from envFrom without a prefix" "LOG_LEVEL=info" "agent.conf=level=info" "MY_APP=cfg"; do
    has_env "$want" && ok || fail "env: no $want in $(env_lines | tr '\n' ' ')"
done
env_lines | grep -q "^MY_POD=cfg-" && ok || fail "env: MY_POD"
! env_lines | grep -q "^NOPE=\|^1bad=" && ok || fail "env: an optional missing key or an invalid name is set"
grepq "Keys \[1bad\] from the EnvFrom configMap it/agent-config were skipped" "$work/agent.log" && ok ||
    fail "the skipped envFrom key is not reported"
grepq "s3cr3t-t0ken" "$work/agent.log" && fail "the Secret's value is in the log" || ok

uid=$(pod_field .metadata.uid)
vol=$state/pod-volumes/$uid
[[ $(cat "$vol/config/agent.conf" 2>/dev/null) == "level=info" ]] && ok || fail "config/agent.conf"
[[ -L $vol/config/agent.conf && -L $vol/config/..data ]] && ok || fail "config: not the atomic writer's layout"
[[ $(cat "$vol/creds/token" 2>/dev/null) == "s3cr3t-t0ken" ]] && ok || fail "creds/token"
[[ $(stat -L -c %a "$vol/creds/token" 2>/dev/null) == 400 ]] && ok || fail "creds/token mode $(stat -L -c %a "$vol/creds/token")"
[[ -d $vol/maybe && -z $(ls "$vol/maybe") ]] && ok || fail "an optional missing Secret is not an empty volume"

# 4. A ConfigMap edit reaches the file in place; the pod keeps running.
before=$(pod_field '.status.containerStatuses[0].restartCount')
config_map debug
wait_for "the edit reaches config/agent.conf" 15 grepq -x "level=debug" "$vol/config/agent.conf"
is "$before" pod_field '.status.containerStatuses[0].restartCount' && ok || fail "the edit restarted the container"

# 5. The pod goes: its volumes go.
rm "$man/agent.yaml"
wait_for "the pod is removed" 20 no_pod it cfg
wait_for "its volumes are removed" 10 test ! -e "$vol"
finish
