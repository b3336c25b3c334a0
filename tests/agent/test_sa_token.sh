#!/usr/bin/env bash
# Pods that talk to the API server (issue 13 §3): an agent following the
# test API server gives each DaemonSet pod what the ServiceAccount admission
# plugin and the kubelet give it, read from the inside (env) and from the
# volume's directory (the exec runtime mounts no volume: the agent writes it
# at <stateDir>/pod-volumes/<pod uid>/kube-api-access-*, which runc and CRI
# bind-mount at /var/run/secrets/kubernetes.io/serviceaccount):
#   1. the `kubernetes` Service's env (envvars.FromServices) at the API
#      server the board uses, and the container's own definition winning;
#   2. the kube-api-access volume (TokenVolumeSource): a token from the
#      TokenRequest API (expirationSeconds 3607, no audience, not bound),
#      the cluster's kube-root-ca.crt (watched: a rotation reaches it),
#      the namespace;
#   3. the token refreshed by token_manager's requiresRefresh (the server
#      grants 5 s: refreshed at 80% of that) and rewritten in place;
#   4. automountServiceAccountToken: false: no volume, the env all the same;
#   5. ConfigMaps and Secrets the manifest directory lacks, from the
#      cluster (the kubelet's watch-based manager: a list and watch per
#      object with fieldSelector metadata.name, kept): env from a
#      ConfigMap, a Secret volume, a pod waiting for a Secret that does
#      not exist until it does, and a ConfigMap replaced with kubectl
#      reaching its volume's file within seconds (the cache-based
#      manager's 1-minute TTL would not), an immutable Secret not watched
#      once read, a deleted Secret forgotten, a Secret no longer watched
#      once the last pod that uses it is gone;
#   6. an offline restart (API server gone, the volumes removed, the
#      container exited): the stored token, CA, ConfigMap and Secret are
#      mounted again;
#   7. without apiServer: a new pod starts without a token or the env, and
#      the agent says so once.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v jq >/dev/null || {
    echo "jq is missing (scripts/setup.sh installs it)"
    exit 1
}
fake=
# KEEP_LOGS=DIR keeps the logs of a run for a post-mortem.
trap '[[ -n ${KEEP_LOGS:-} ]] && cp "$work"/*.log "$KEEP_LOGS"/; [[ -n $fake ]] && kill "$fake" 2>/dev/null
      [[ -n $agent ]] && kill -9 "$agent" 2>/dev/null; unmount_under "$work"; cleanup' EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/key.pem" \
    -out "$work/cert.pem" -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1,DNS:localhost -days 2 2>/dev/null
"$FAKE_APISERVER" --cert "$work/cert.pem" --key "$work/key.pem" --port-file "$work/port" --token s3cret \
    --max-token-expiration-seconds 5 >>"$work/fake.log" 2>&1 &
fake=$!
wait_for "the API server listens" 5 test -s "$work/port"
port=$(cat "$work/port")
ctl() { curl -sS --max-time 5 --cacert "$work/cert.pem" -X "$1" "https://127.0.0.1:$port/_control/$2" ${3:+-d "$3"}; }
ctl PUT configmaps/it/kube-root-ca.crt '{"data": {"ca.crt": "CLUSTER-CA"}}' >/dev/null
ctl PUT configmaps/it/cluster-cm '{"data": {"greeting": "hello"}}' >/dev/null
ctl PUT secrets/it/cluster-secret '{"data": {"password": "cGFzcw=="}, "immutable": true}' >/dev/null

start_notify_listener
write_config "{}" "[]"
follow_test_apiserver
report='env > $out.tmp && mv $out.tmp $out; trap \"exit 0\" TERM; while true; do sleep 0.2; done'
write_ds tok.yaml tok "out=$work/tok-env.txt; $report" \
    "volumes: [{name: creds, secret: {secretName: cluster-secret}}, {name: conf, configMap: {name: cluster-cm}}]" "" \
    "          env: [{name: KUBERNETES_SERVICE_PORT_HTTPS, value: mine}, {name: GREETING, valueFrom: {configMapKeyRef: {name: cluster-cm, key: greeting}}}]"
write_ds late.yaml late "out=$work/late-env.txt; $report" "automountServiceAccountToken: false" "" \
    "          envFrom: [{secretRef: {name: late-secret}}]"
write_ds notok.yaml notok "out=$work/notok-env.txt; $report" "automountServiceAccountToken: false"

uid_of() { pods_json | jq -r ".items[] | select(.metadata.name | startswith(\"$1-\")) | .metadata.uid"; }
vol_dir() { ls -d "$state/pod-volumes/$(uid_of "$1")"/kube-api-access-* 2>/dev/null | head -1; }
token_of() { cat "$(vol_dir tok)/token" 2>/dev/null; }
env_of() { sed -n "s/^$2=//p" "$work/$1-env.txt"; }
check() {  # check WHAT EXPECTED ACTUAL
    if [[ $2 == "$3" ]]; then ok; else fail "$1: expected '$2', got '$3'"; fi
}
export -f pods_json uid_of vol_dir token_of
export dl cfg state

start_own_agent
wait_ready 0
wait_for "pod tok reports its env" 10 test -s "$work/tok-env.txt"
wait_for "pod notok reports its env" 10 test -s "$work/notok-env.txt"
wait_for "the token is written" 10 bash -c 'test -s "$(vol_dir tok)/token"'

# 1. envvars.FromServices for `kubernetes`, the board's API server address.
check "KUBERNETES_SERVICE_HOST" 127.0.0.1 "$(env_of tok KUBERNETES_SERVICE_HOST)"
check "KUBERNETES_SERVICE_PORT" "$port" "$(env_of tok KUBERNETES_SERVICE_PORT)"
check "the container's own KUBERNETES_SERVICE_PORT_HTTPS wins" mine "$(env_of tok KUBERNETES_SERVICE_PORT_HTTPS)"
check "KUBERNETES_PORT (makeLinkVariables)" "tcp://127.0.0.1:$port" "$(env_of tok KUBERNETES_PORT)"
check "KUBERNETES_PORT_<p>_TCP_ADDR" 127.0.0.1 "$(env_of tok "KUBERNETES_PORT_${port}_TCP_ADDR")"

# 2. TokenVolumeSource's three files.
dir=$(vol_dir tok)
check "the volume's name" kube-api-access- "$(basename "$dir" | cut -c1-16)"
t1=$(token_of)
claims=$(cut -d. -f2 <<<"$t1" | tr '_-' '/+' | awk '{ while (length($0) % 4) $0 = $0 "="; print }' | base64 -d 2>/dev/null)
check "a JWT for it:default" system:serviceaccount:it:default "$(jq -r .sub <<<"$claims")"
check "ca.crt: the cluster's kube-root-ca.crt" CLUSTER-CA "$(cat "$dir/ca.crt")"
check "namespace" it "$(cat "$dir/namespace")"
check "token mode 0644 (ProjectedVolumeSourceDefaultMode)" 644 "$(stat -Lc %a "$dir/token")"
req=$(ctl GET token-requests | jq -c '.[0]')
check "TokenRequest: for default, no audience asked, not bound" '"default" false false' \
    "$(jq -r '[.serviceAccount, (.spec | has("boundObjectRef")), (.spec.audiences != ["https://kubernetes.default.svc.cluster.local"])] | map(tojson) | join(" ")' <<<"$req")"
check "TokenRequest: granted 5 s of the 3607 asked" 5 "$(jq -r .spec.expirationSeconds <<<"$req")"

# 3. requiresRefresh: granted 5 s, refreshed after 4 (80%).
export t1
wait_for "the token is refreshed in place" 10 bash -c '[[ -s "$(vol_dir tok)/token" && "$(token_of)" != "$t1" ]]'
check "the refresh went to the TokenRequest API" 1 "$(($(ctl GET token-requests | jq length) >= 2))"
st=$(status_json)
check "daemonlet status: the token's key and requests, no error" '"it" "default" true ""' \
    "$(jq -r '.apiServer.forPods.serviceAccountTokens[0] | [.namespace, .serviceAccount, (.requests >= 2), .lastError] | map(tojson) | join(" ")' <<<"$st")"
check "daemonlet status: never a token" 0 "$(grep -c "$(token_of | cut -d. -f3)" <<<"$st")"

# 4. automountServiceAccountToken: false.
check "no kube-api-access volume" "" "$(vol_dir notok)"
check "the env all the same" 127.0.0.1 "$(env_of notok KUBERNETES_SERVICE_HOST)"

# 5. Objects from the cluster.
check "env from the cluster's ConfigMap" hello "$(env_of tok GREETING)"
check "a volume of the cluster's Secret" pass "$(cat "$state/pod-volumes/$(uid_of tok)/creds/password")"
late_reason() { pods_json | jq -r '.items[] | select(.metadata.name | startswith("late-")) | .status.containerStatuses[0].state.waiting.message // ""'; }
export -f late_reason
wait_for "a pod waits for a Secret the cluster lacks" 5 bash -c '[[ $(late_reason) == "secret \"late-secret\" not found" ]]'
ctl PUT secrets/it/late-secret '{"data": {"LATE": "eWVz"}}' >/dev/null
wait_for "it starts once the Secret exists" 10 test -s "$work/late-env.txt"
check "with its value" yes "$(env_of late LATE)"
check "a volume of the cluster's ConfigMap" hello "$(cat "$state/pod-volumes/$(uid_of tok)/conf/greeting")"
# No GET of a ConfigMap so far (kube-root-ca.crt watched, as the others;
# kubectl replace below GETs one).
check "kube-root-ca.crt and the ConfigMaps never read by GET" 0 "$(ctl GET stats | jq '.requestsByVerb["configmaps get"] // 0')"
k() { kubectl --kubeconfig "$work/kubeconfig" --cache-dir "$work/kcache" --request-timeout 5s "$@"; }
k create configmap cluster-cm -n it --from-literal=greeting=bonjour --dry-run=client -o json |
    k replace --validate=false -f - >/dev/null && ok || fail "kubectl replace of the ConfigMap failed"
conf_of_tok() { cat "$state/pod-volumes/$(uid_of tok)/conf/greeting" 2>/dev/null; }
export -f conf_of_tok
wait_for "the ConfigMap's change reaches the volume's file (watched, not a 60 s TTL)" 10 \
    bash -c '[[ $(conf_of_tok) == bonjour ]]'
# kube-root-ca.crt rotated: watched as the other ConfigMaps (the kube-api-access
# volume's configMap source, the watch-based manager), not read again by GET.
ctl PUT configmaps/it/kube-root-ca.crt '{"data": {"ca.crt": "ROTATED-CA"}}' >/dev/null
ca_of_tok() { cat "$(vol_dir tok)/ca.crt" 2>/dev/null; }
export -f ca_of_tok
wait_for "a rotated kube-root-ca.crt reaches the volume's ca.crt" 10 bash -c '[[ $(ca_of_tok) == ROTATED-CA ]]'
verbs=$(ctl GET stats | jq -c .requestsByVerb)
check "followed by list and watch, never a GET of the Secrets" '1 1 1 1 0' \
    "$(jq -r '[(.["configmaps list"] // 0) >= 1, (.["configmaps watch"] // 0) >= 1, (.["secrets list"] // 0) >= 1, (.["secrets watch"] // 0) >= 1, .["secrets get"] // 0] | map(if . == true then 1 elif . == false then 0 else . end) | join(" ")' <<<"$verbs")"
st=$(status_json)
check "daemonlet status: the ConfigMap watched, read, no error" 'true true ""' \
    "$(jq -r '.apiServer.forPods.objects[] | select(.name == "cluster-cm") | [.watched, .read, .lastError] | map(tojson) | join(" ")' <<<"$st")"
check "daemonlet status: never a Secret's value" 0 "$(grep -c 'cGFzcw==\|"pass"' <<<"$st")"
check "an immutable Secret: read, then no longer watched (objectCacheItem.stop)" 'true false true' \
    "$(jq -r '.apiServer.forPods.objects[] | select(.name == "cluster-secret") | [.read, .watched, .immutable] | map(tojson) | join(" ")' <<<"$st")"
ctl DELETE secrets/it/late-secret >/dev/null
late_read() { status_json | jq -r '.apiServer.forPods.objects[] | select(.name == "late-secret") | .read'; }
export -f late_read status_json
wait_for "a DELETED event forgets the Secret (as a GET's 404)" 10 bash -c '[[ $(late_read) == false ]]'
check "the agent's log: never a Secret's value" 0 "$(grep -c 'cGFzcw==\|eWVz' "$agent_log")"
# The last pod that uses it gone: its watch stops and it is forgotten
# (watch_based_manager's DeleteReference stops the reflector).
rm "$man/late.yaml"
late_known() { status_json | jq -r '[.apiServer.forPods.objects[] | select(.name == "late-secret")] | length'; }
export -f late_known
wait_for "the late pod's Secret is no longer watched once the pod is gone" 10 bash -c '[[ $(late_known) == 0 ]]'

# 6. Offline restart: the stored token, CA and objects are mounted again.
stop_agent TERM
kill "$fake"
wait "$fake" 2>/dev/null
fake=
last=$(token_of)
tok_pid=$(pid_of tok)
unmount_under "$state/pod-volumes/$(uid_of tok)"
rm -rf "$state/pod-volumes/$(uid_of tok)"
rm -f "$work/tok-env.txt"
[[ -n $tok_pid ]] && kill "$tok_pid"
start_own_agent
wait_ready 1
wait_for "the container starts again offline" 15 test -s "$work/tok-env.txt"
wait_for "its token is written again" 5 bash -c 'test -s "$(vol_dir tok)/token"'
check "the stored token" "$last" "$(token_of)"
check "the stored CA" ROTATED-CA "$(cat "$(vol_dir tok)/ca.crt")"
check "the stored ConfigMap" bonjour "$(env_of tok GREETING)"
check "the stored ConfigMap's volume" bonjour "$(conf_of_tok)"
check "the stored Secret" pass "$(cat "$state/pod-volumes/$(uid_of tok)/creds/password")"

# 7. No cluster configured.
stop_agent TERM
write_config "{}" "[]"
write_ds solo.yaml solo "out=$work/solo-env.txt; $report"
start_own_agent
wait_for "a pod of an agent without apiServer starts" 10 test -s "$work/solo-env.txt"
check "no kubernetes Service env" "" "$(grep ^KUBERNETES_ "$work/solo-env.txt")"
check "no kube-api-access volume" "" "$(vol_dir solo)"
check "said once for the pod" 1 "$(grep -c 'solo-.*starts without a service-account token' "$agent_log")"
finish
