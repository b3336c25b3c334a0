#!/usr/bin/env bash
# runtime: {type: runc} pulling from a registry: Debian's docker-registry
# started here on loopback with TLS (a CA and certificate made here) and
# htpasswd basic auth, a second one with TLS and no auth, the busybox test
# image pushed to them with Debian's skopeo. Checks kubelet's
# imagePullPolicy semantics (pkg/kubelet/images/image_manager.go
# EnsureImageExists): IfNotPresent pulls an absent image and runs it;
# Never never pulls (ErrImageNeverPull); wrong credentials, a missing tag
# and a stopped registry wait as ErrImagePull / ImagePullBackOff with the
# reason in get -o json and describe, the agent and other pods untouched;
# the registry back makes the pod run without an agent restart; Always with
# the registry down runs the local image (our documented edge deviation).
# A corrupted layer is refused on its digest, the store untouched; without
# libcurl4, a pull says to install it. Prints
# the pull time of the busybox image from the loopback registry.
# A third registry takes bearer tokens (a static token endpoint, below).
# Needs root, runc, docker-registry, skopeo, htpasswd (apache2-utils),
# openssl, curl and busybox-static; skips without them.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
[[ $(id -u) -eq 0 ]] || { echo "SKIPPED: runc containers need root"; exit 0; }
runc_bin=$(command -v runc) || { echo "SKIPPED: runc is not installed (apt-get install runc)"; exit 0; }
for tool in docker-registry skopeo htpasswd openssl curl; do
    command -v "$tool" >/dev/null ||
        { echo "SKIPPED: $tool is missing (apt-get install docker-registry skopeo apache2-utils openssl curl)"; exit 0; }
done
[[ -x /bin/busybox ]] || { echo "SKIPPED: /bin/busybox is missing (apt-get install busybox-static)"; exit 0; }
[[ -z ${EMULATOR:-} ]] || { echo "SKIPPED: not under an emulator"; exit 0; }
source "$here/lib.sh"

image_tool=$(dirname "$dl")/../platform/daemonlet-image
declare -A registry_pid=()
registry_cleanup() {
    for name in "${!registry_pid[@]}"; do kill "${registry_pid[$name]}" 2>/dev/null; done
    runc_cleanup
}
trap registry_cleanup EXIT


# A CA, and a server certificate for 127.0.0.1 and localhost signed by it.
pki=$work/pki
mkdir -p "$pki"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=daemonlet test CA" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null &&
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
        -keyout "$pki/server.key" -out "$pki/server.csr" 2>/dev/null &&
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$pki/ext.cnf" &&
    openssl x509 -req -in "$pki/server.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
        -days 2 -extfile "$pki/ext.cnf" -out "$pki/server.crt" 2>/dev/null ||
    { echo "FAIL: cannot make the test certificates"; exit 1; }
password='s3cret:with:colons'  # a password may hold colons (RFC 7617)
htpasswd -Bbc "$work/htpasswd" alice "$password" 2>/dev/null

# start_registry NAME PORT [auth|token DATA]: docker-registry with its own
# config, storage under $work/NAME-data (token: DATA's, read-only in
# effect), TLS; htpasswd auth, or bearer tokens from $token_realm signed by
# $pki/token.crt's key, when asked.
start_registry() {
    local name=$1 port=$2 auth=${3:-} data=$work/$1-data
    [[ $auth == token ]] && data=$work/$4-data
    {
        echo "version: 0.1"
        echo "log: {level: info}"
        echo "storage: {filesystem: {rootdirectory: $data}}"
        echo "http: {addr: 127.0.0.1:$port, tls: {certificate: $pki/server.crt, key: $pki/server.key}}"
        [[ $auth == auth ]] && echo "auth: {htpasswd: {realm: basic-realm, path: $work/htpasswd}}"
        [[ $auth == token ]] && echo "auth: {token: {realm: \"$token_realm\", service: daemonlet-registry," \
            "issuer: daemonlet-test, rootcertbundle: $pki/token.crt}}"
    } >"$work/$name.yaml"
    docker-registry serve "$work/$name.yaml" >>"$work/$name.log" 2>&1 &
    registry_pid[$name]=$!
    wait_for "registry $name answers on 127.0.0.1:$port" 20 \
        curl -s --cacert "$pki/ca.crt" -o /dev/null "https://127.0.0.1:$port/v2/"
}
stop_registry() {
    kill "${registry_pid[$1]}" 2>/dev/null
    wait "${registry_pid[$1]}" 2>/dev/null
    unset "registry_pid[$1]"
}

port=$(free_port)
anon_port=$(free_port)
while [[ $anon_port == "$port" ]]; do anon_port=$(free_port); done
reg=127.0.0.1:$port
anon=127.0.0.1:$anon_port
start_registry auth "$port" auth
start_registry anon "$anon_port"

# Bearer: a registry that trusts tokens signed by a key of ours (RS256 with
# the certificate in the JWT's x5c header, as distribution's
# registry/auth/token verifies them), and a token endpoint (http_serve)
# that answers every request with one such token for pulls of
# edge/busybox. It ignores scope and credentials, so it checks our client's
# side of the flow (401 Bearer challenge, token from the realm, the request
# again with Authorization: Bearer), not a token server's policy.
bearer=
if [[ -n ${HTTP_SERVE:-} && -x ${HTTP_SERVE:-} ]]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=daemonlet test token issuer" \
        -keyout "$pki/token.key" -out "$pki/token.crt" 2>/dev/null
    b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
    now=$(date +%s)
    jwt_header=$(printf '{"typ":"JWT","alg":"RS256","x5c":["%s"]}' \
        "$(openssl x509 -in "$pki/token.crt" -outform DER | base64 -w0)" | b64url)
    jwt_claims=$(printf '{"iss":"daemonlet-test","sub":"alice","aud":"daemonlet-registry","exp":%d,"nbf":%d,"iat":%d,"jti":"it-%d","access":[{"type":"repository","name":"edge/busybox","actions":["pull"]}]}' \
        $((now + 3600)) $((now - 60)) $((now - 60)) $$ | b64url)
    jwt_sig=$(printf '%s.%s' "$jwt_header" "$jwt_claims" | openssl dgst -sha256 -sign "$pki/token.key" -binary | b64url)
    printf '{"token": "%s.%s.%s", "expires_in": 3600}' "$jwt_header" "$jwt_claims" "$jwt_sig" >"$work/token.json"
    touch "$work/token-ready"
    token_port=$("$HTTP_SERVE" --free-port)
    "$HTTP_SERVE" "$token_port" "$work/token-ready" "$work/token.json" &
    registry_pid[token-server]=$!
    token_realm=http://127.0.0.1:$token_port/token
    bearer_port=$(free_port)
    bearer=127.0.0.1:$bearer_port
    start_registry bearer "$bearer_port" token auth
else
    echo "bearer flow not tested end to end here: HTTP_SERVE (tests/agent/http_serve.cpp) is not set"
fi

# Docker's certs.d convention: <dir>/<host:port>/ca.crt.
certs=$work/certs.d
for h in "$reg" "localhost:$port" "$anon" ${bearer:+"$bearer"}; do mkdir -p "$certs/$h" && cp "$pki/ca.crt" "$certs/$h/ca.crt"; done
"$here/../data/make_busybox_image.sh" "$work/busybox.tar" >/dev/null || { echo "FAIL: cannot build the image"; exit 1; }
push() {  # push DEST [CREDS]
    local creds=()
    [[ -n ${2:-} ]] && creds=(--dest-creds "$2")
    skopeo copy -q "${creds[@]}" --dest-cert-dir "$certs/${1%%/*}" "oci-archive:$work/busybox.tar" \
        "docker://$1" >>"$work/skopeo.log" 2>&1
}
if push "$reg/edge/busybox:1" "alice:$password" && push "$reg/edge/busybox:2" "alice:$password" &&
    push "$anon/edge/anon:1"; then
    ok
else
    fail "skopeo cannot push the test image: $(tail -3 "$work/skopeo.log")"
    finish
    exit 1
fi

# Credentials as kubelet's config.json: the right ones for 127.0.0.1:PORT
# (auth: base64 of user:pass), wrong ones for localhost:PORT (username and
# password): the same registry under two names.
auth_b64=$(printf '%s' "alice:$password" | base64 -w0)
cat >"$work/auth.json" <<EOF
{"auths": {
  "$reg": {"auth": "$auth_b64"},
  "https://localhost:$port/v1/": {"username": "alice", "password": "wrong"}
}}
EOF
chmod 600 "$work/auth.json"

# The pull time of the busybox image from the loopback registry (TLS,
# basic auth) into an empty store: what a board pays on its first start.
t0=$(date +%s%N)
"$image_tool" pull --store "$work/bench-store" --auth-file "$work/auth.json" --certs-dir "$certs" \
    "$reg/edge/busybox:1" >/dev/null 2>"$work/bench.err" && ok || fail "daemonlet-image pull: $(cat "$work/bench.err")"
t1=$(date +%s%N)
echo "pull of the busybox image ($(stat -c %s "$work/busybox.tar") bytes as an archive) from the loopback" \
    "registry into an empty store: $(((t1 - t0) / 1000000)) ms"
# A failed pull (anonymous, where auth is needed) says why and leaves the
# store as it was: nothing but its empty directories (and its lock file).
"$image_tool" pull --store "$work/fail-store" --certs-dir "$certs" "$reg/edge/busybox:1" >/dev/null 2>"$work/fail.err"
[[ $? -eq 1 ]] && grep -q '^daemonlet-image: unauthorized: ' "$work/fail.err" && ok ||
    fail "an anonymous pull from the auth registry: $(cat "$work/fail.err")"
[[ -z $(find "$work/fail-store" -not -type d -not -name import.lock) ]] && ok ||
    fail "a failed pull left files in the store: $(find "$work/fail-store" -not -type d)"
# Without the registry's CA: a certificate error, named.
"$image_tool" pull --store "$work/fail-store" --auth-file "$work/auth.json" "$reg/edge/busybox:1" \
    >/dev/null 2>"$work/fail.err"
grep -q "TLS certificate" "$work/fail.err" && ok || fail "no CA: $(cat "$work/fail.err")"
# Without libcurl4 (daemonlet-image loads it for a pull only, so that a
# board that only imports needs none: docs/dependencies.md), a pull says
# what to install: libcurl.so.4 hidden in a mount namespace of its own.
libcurl=$(ldconfig -p | sed -n 's/.*libcurl\.so\.4 (.*=> //p' | head -1)
if [[ -n $libcurl ]]; then
    unshare -m bash -c 'mount --bind /dev/null "$1" && exec "${@:2}"' _ "$libcurl" \
        "$image_tool" pull --store "$work/fail-store" --auth-file "$work/auth.json" --certs-dir "$certs" \
        "$reg/edge/busybox:1" >/dev/null 2>"$work/nocurl.err"
    [[ $? -eq 1 ]] && grep -q 'registry pulls need libcurl4: apt-get install libcurl4' "$work/nocurl.err" && ok ||
        fail "a pull without libcurl4: $(cat "$work/nocurl.err")"
else
    fail "ldconfig -p finds no libcurl.so.4"
fi

cat >"$cfg" <<EOF
nodeName: it-node
manifestDir: $man
stateDir: $state
metricsBindAddress: $metrics_bind
runtime: {type: runc, registryAuthFile: $work/auth.json, registryCertsDir: $certs}
fileCheckFrequency: 2s
crashLoopBackoff: {initial: 1s, max: 2s}
EOF
write_image_ds() {  # write_image_ds FILE NAME IMAGE [PULL_POLICY]
    DS_IMAGE=$3 write_ds "$1" "$2" 'while :; do sleep 1; done' "" "" \
        "          imagePullPolicy: ${4:-IfNotPresent}"
}
pods_json() { "$dl" get pods -n it -o json --config "$cfg"; }
waiting_with() {  # waiting_with NAME REASON_REGEX MESSAGE_SUBSTRING
    pod_waiting_for_image "$1" "$2" && pods_json | grepq "$3"
}
describe_has() { "$dl" describe ds "$1" -n it --config "$cfg" | grepq "$2"; }
main_pid() { pgrep -f "it-marker-$$-$1\$" | head -1; }

write_image_ds pulled.yaml pulled "$reg/edge/busybox:1"
write_image_ds anon.yaml anon "$anon/edge/anon:1"
write_image_ds never.yaml never "$reg/edge/busybox:never" Never
start_agent

# 1. IfNotPresent and absent: pulled (TLS, basic auth), then it runs; anonymous too.
wait_for "an image from the auth registry is pulled and runs" 30 pod_running it pulled
wait_for "an image from the anonymous registry is pulled and runs" 30 pod_running it anon
grep -o "image $reg/edge/busybox:1: pulled in [0-9]* ms" "$work/agent.log" | head -1
if [[ -n $bearer ]]; then
    write_image_ds bearer.yaml bearer "$bearer/edge/busybox:1"
    wait_for "an image from the bearer-token registry is pulled and runs" 30 pod_running it bearer
    grep -q 'msg="authorized request".*vars.name=edge/busybox' "$work/bearer.log" && ok ||
        fail "the bearer registry authorised no request: $(tail -3 "$work/bearer.log")"
fi
describe_has pulled "Pulling" && describe_has pulled "Successfully pulled image" && ok ||
    fail "describe shows no Pulling / Pulled events: $("$dl" describe ds pulled -n it --config "$cfg" 2>&1 | sed -n "/^Events/,\$p")"

# 2. Never: ErrImageNeverPull, and no pull is ever asked for.
wait_for "imagePullPolicy Never waits with ErrImageNeverPull" 10 pod_waiting_for_image never ErrImageNeverPull
grep -q "busybox:never: pulling" "$work/agent.log" && fail "imagePullPolicy Never pulled" || ok

# 3. Wrong credentials: unauthorized, back-off; the agent and the others untouched.
has_main_pid() { [[ -n $(main_pid "$1") ]]; }
wait_for "pulled's main process is seen" 10 has_main_pid pulled
pulled_pid=$(main_pid pulled)
write_image_ds wrong.yaml wrong "localhost:$port/edge/busybox:1"
wait_for "wrong credentials: ImagePullBackOff, unauthorized" 20 waiting_with wrong ImagePullBackOff unauthorized
wait_for "describe says why" 5 describe_has wrong "Failed to pull image \"localhost:$port/edge/busybox:1\".*unauthorized"
kill -0 "$agent" && ok || fail "the agent died"
[[ -n $pulled_pid && $(main_pid pulled) == "$pulled_pid" ]] && pod_running it pulled >/dev/null && ok ||
    fail "wrong credentials disturbed the running pod ($pulled_pid, now $(main_pid pulled))"
grep -q -e "$password" -e "$auth_b64" -e '"wrong"' "$work/agent.log" && fail "a secret is in the agent's log" || ok

# 4. A tag that does not exist: not found.
write_image_ds missing.yaml missing "$reg/edge/busybox:nope"
wait_for "a missing tag: ErrImagePull / ImagePullBackOff, not found" 20 \
    waiting_with missing '(ErrImagePull|ImagePullBackOff)' 'not found'

# 5. The registry stopped: unreachable, back-off.
rm -f "$man/wrong.yaml" "$man/missing.yaml"
stop_registry auth
write_image_ds late.yaml late "$reg/edge/busybox:2"
wait_for "a stopped registry: ImagePullBackOff, unreachable" 20 waiting_with late ImagePullBackOff unreachable

# 6. Always with the registry down and the image present: the local image
# runs, with one warning.
write_image_ds always.yaml always "$reg/edge/busybox:1" Always
wait_for "Always, registry down, image present: the local image runs" 20 pod_running it always
[[ $(grep -c "imagePullPolicy Always but the registry is unreachable" "$work/agent.log") -eq 1 ]] && ok ||
    fail "expected one warning about running the local image"

# 5, continued: the registry back, the waiting pod runs without an agent restart.
agent_before=$agent
start_registry auth "$port" auth
wait_for "the registry back: late runs without an agent restart" 20 pod_running it late
[[ $agent == "$agent_before" ]] && kill -0 "$agent" && ok || fail "the agent was restarted"
pod_running it pulled >/dev/null && pod_running it anon >/dev/null && ok || fail "the other pods stopped"
[[ -z $bearer ]] || pod_running it bearer >/dev/null && ok || fail "the bearer pod stopped"

# 7. A registry that serves a corrupted layer (one byte changed on its disk):
# the pull fails on the layer's digest and leaves the store as it was.
layer=$(find "$work/anon-data" -path '*/blobs/sha256/*' -name data -size +100k | head -1)
printf 'X' | dd of="$layer" bs=1 seek=4096 conv=notrunc 2>/dev/null
"$image_tool" pull --store "$work/tamper-store" --certs-dir "$certs" "$anon/edge/anon:1" >/dev/null 2>"$work/tamper.err"
grep -q '^daemonlet-image: invalid: .*digest mismatch' "$work/tamper.err" && ok ||
    fail "a corrupted layer: $(cat "$work/tamper.err")"
[[ -z $(find "$work/tamper-store" -not -type d -not -name import.lock) ]] && ok ||
    fail "a corrupted pull left files in the store: $(find "$work/tamper-store" -not -type d)"

finish
