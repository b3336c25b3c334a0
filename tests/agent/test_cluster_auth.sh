#!/usr/bin/env bash
# Connecting to the API server (issue 4, section 1), end to end against the
# test API server: the kubeconfig's -data fields and a client certificate,
# the in-cluster service account (rest.InClusterConfig), tokenFile, TLS
# verified by default (a wrong CA never connects; insecure-skip-tls-verify
# does, with a warning), a refused credential file named in the error while
# the manifest directory keeps running, and the token in no log or output.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
srv=${FAKE_APISERVER:?}

C=(--config "$cfg")
token=tok-$$-$RANDOM-secret
pki=$work/pki
mkdir -p "$pki"
ossl() { openssl "$@" 2>/dev/null; }
# The server's certificate is its own CA (kubeadm-style: clients trust the CA).
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$pki/server.key" \
    -out "$pki/ca.pem" -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -days 2
# Another CA, which signed nothing the server shows.
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$pki/other.key" \
    -out "$pki/other-ca.pem" -subj /CN=other -days 2
# Client certificates: a client CA and a board's certificate in the agents' group.
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$pki/client-ca.key" \
    -out "$pki/client-ca.pem" -subj /CN=client-ca -days 2
ossl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$pki/board.key" \
    -subj "/O=daemonlet:agents/CN=daemonlet:it-node" -out "$pki/board.csr"
ossl x509 -req -in "$pki/board.csr" -CA "$pki/client-ca.pem" -CAkey "$pki/client-ca.key" -CAcreateserial \
    -out "$pki/board.pem" -days 2
chmod 600 "$pki"/*.key

"$srv" --cert "$pki/ca.pem" --key "$pki/server.key" --port-file "$work/port" --token "$token" \
    --client-ca "$pki/client-ca.pem" >"$work/fake.log" 2>&1 &
fake=$!
trap 'kill $fake 2>/dev/null; cleanup' EXIT
wait_for "fake API server up" 5 test -s "$work/port"
port=$(cat "$work/port")
server=https://127.0.0.1:$port
ctl() { curl -sS --max-time 5 --cacert "$pki/ca.pem" "$@"; }
ctl -X PUT "$server/_control/daemonsets/it/from-cluster" -o /dev/null -d "{
  \"apiVersion\": \"apps/v1\", \"kind\": \"DaemonSet\", \"metadata\": {\"name\": \"from-cluster\", \"namespace\": \"it\"},
  \"spec\": {\"selector\": {\"matchLabels\": {\"app\": \"from-cluster\"}},
    \"template\": {\"metadata\": {\"labels\": {\"app\": \"from-cluster\"}},
      \"spec\": {\"terminationGracePeriodSeconds\": 1, \"containers\": [{\"name\": \"main\", \"image\": \"none\",
        \"command\": [\"/bin/sh\", \"-c\", \"while :; do sleep 1; done\", \"it-marker-$$-from-cluster\"]}]}}}}"

b64() { base64 -w0 <"$1"; }
# kubeconfig FILE USER_YAML [CA_YAML]: a kubeconfig for the test server.
kubeconfig() {
    cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: it, cluster: {server: "$server", ${3:-certificate-authority: $pki/ca.pem}}}]
users: [{name: it, user: {$2}}]
contexts: [{name: it, context: {cluster: it, user: it}}]
current-context: it
EOF
    chmod 600 "$1"
}
# with_api YAML_LINES: the base configuration plus an apiServer section.
with_api() {
    write_config "{}" "[]"
    printf 'apiServer:\n%s\n  requestTimeout: 3s\n' "$1" >>"$cfg"
}
state_is() { "$dl" status -o json "${C[@]}" | grepq "\"state\": \"$1\""; }
stop_agent() {
    kill "$agent" 2>/dev/null
    wait "$agent" 2>/dev/null
    agent=
}
write_ds local.yaml local-only "while :; do sleep 1; done"

# 1. A client certificate and the CA, all as -data fields (base64 in the file).
kubeconfig "$work/kc-cert" "client-certificate-data: $(b64 "$pki/board.pem"), client-key-data: $(b64 "$pki/board.key")" \
    "certificate-authority-data: $(b64 "$pki/ca.pem")"
with_api "  kubeconfig: $work/kc-cert"
start_agent
wait_for "client certificate (-data fields): connected" 10 state_is connected
wait_for "client certificate: the cluster's DaemonSet runs" 5 pod_running it from-cluster
stop_agent

# 2. In-cluster: KUBERNETES_SERVICE_HOST/PORT, the service account's token and CA.
sa=$work/serviceaccount
mkdir -p "$sa"
printf '%s\n' "$token" >"$sa/token"
cp "$pki/ca.pem" "$sa/ca.crt"
chmod 600 "$sa/token"
with_api "  inCluster: true
  serviceAccountDir: $sa"
KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=$port start_agent
wait_for "in-cluster service account: connected" 10 state_is connected
stop_agent

# 3. tokenFile in the kubeconfig.
printf '%s' "$token" >"$work/token"
chmod 600 "$work/token"
kubeconfig "$work/kc-tokenfile" "tokenFile: $work/token"
with_api "  kubeconfig: $work/kc-tokenfile"
start_agent
wait_for "tokenFile: connected" 10 state_is connected
stop_agent

# 4. TLS is verified: a CA that did not sign the server's certificate never
#    connects, and the error says why; the cached and local pods run on.
kubeconfig "$work/kc-wrongca" "token: $token" "certificate-authority: $pki/other-ca.pem"
with_api "  kubeconfig: $work/kc-wrongca"
start_agent
wait_for "wrong CA: the reason is a certificate problem" 10 \
    bash -c "'$dl' status -o json --config '$cfg' | grep -i '\"lastError\": \".*certificate'"
if state_is disconnected; then ok; else fail "wrong CA: not disconnected"; fi
wait_for "wrong CA: the manifest directory's pod runs" 5 pod_running it local-only
wait_for "wrong CA: the cached cluster DaemonSet still runs" 5 pod_running it from-cluster
stop_agent

# 5. insecure-skip-tls-verify: connects with the wrong CA, and says so.
kubeconfig "$work/kc-insecure" "token: $token" "insecure-skip-tls-verify: true"
with_api "  kubeconfig: $work/kc-insecure"
start_agent
wait_for "insecure-skip-tls-verify: connected" 10 state_is connected
wait_for "insecure-skip-tls-verify: a warning" 5 grep -q "insecure-skip-tls-verify: the API server's identity is not checked" "$work/agent.log"
stop_agent

# 6. A wrong token: 401, disconnected, named.
kubeconfig "$work/kc-badtoken" "token: wrong-$token"
with_api "  kubeconfig: $work/kc-badtoken"
start_agent
wait_for "a wrong token: HTTP 401 in status" 10 \
    bash -c "'$dl' status -o json --config '$cfg' | grep -q '\"lastError\": \".*HTTP 401'"
stop_agent

# 7. A kubeconfig anyone in its group can write is refused, named in the
#    log and in status; everything else keeps running.
kubeconfig "$work/kc-writable" "token: $token"
chmod 620 "$work/kc-writable"
with_api "  kubeconfig: $work/kc-writable"
start_agent
wait_for "writable kubeconfig: refused, naming the file" 5 \
    grep -q "$work/kc-writable.*writable" "$work/agent.log"
wait_for "writable kubeconfig: status says error" 5 state_is error
wait_for "writable kubeconfig: the pods run on" 5 pod_running it local-only
stop_agent

# The token never reached a log or an operator's output.
if grep -q -- "$token" "$work/agent.log"; then fail "the token is in the agent's log"; else ok; fi
start_agent
wait_for "agent up for status" 5 state_is error
if "$dl" status -o json "${C[@]}" | grepq -- "$token"; then fail "the token is in status"; else ok; fi
stop_agent

finish
