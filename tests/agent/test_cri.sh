#!/usr/bin/env bash
# runtime: {type: cri} end to end: the real agent talking CRI (gRPC) to
# Debian's containerd, started here with its own temporary configuration,
# root, state and socket, under `tini -s` so that exited shims are reaped.
# The images (busybox, and a busybox "pause" image that sleeps as the pod
# sandbox) are imported into containerd's k8s.io namespace with ctr. The
# pods use hostNetwork, as node agents do, so no CNI network is needed (the
# CNI configuration is only there for containerd to load: a pod network
# needs a real plugin, such as bridge, which this test does not set up).
#
# Checks: the agent keeps running while containerd is down at its start and
# starts the pod once containerd is up; the container runs in its own PID
# and mount namespaces with the image's rootfs; a hostPath volume is
# visible inside; the memory limit is the cgroup's; an exec readiness probe
# runs inside (ctr tasks exec); `daemonlet logs` reads containerd's CRI
# logs; kill -9 of the agent leaves the container running and a new agent
# adopts it (same id, no restart); a rolling update replaces the container
# and removes the old pod's sandbox; an image that cannot be pulled leaves
# its pod in ErrImagePull / ImagePullBackOff with the pull's reason. A StopContainer that fails
# (containerd down) is asked again until the container is gone. 7b: pod and
# container securityContext as containerd gives them, seen from inside. 11:
# the package's purge (dist/debian/postrm) stops the agent's pods in
# containerd, and only those.
# Needs root and containerd; skips without them.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
[[ $(id -u) -eq 0 ]] || { echo "SKIPPED: containerd needs root"; exit 0; }
containerd_bin=$(command -v containerd) || { echo "SKIPPED: containerd is not installed (apt-get install containerd)"; exit 0; }
[[ -z ${EMULATOR:-} ]] || { echo "SKIPPED: not under an emulator"; exit 0; }
source "$here/lib.sh"
source "$here/cri_lib.sh"

# "$$$$": the agent expands the command as the kubelet does
# (ExpandContainerCommandAndArgs: "$$" is a "$"), so sh sees "$$".
write_image_ds() {  # write_image_ds FILE NAME IMAGE [VERSION]
    DS_IMAGE=$3 write_ds "$1" "$2" 'echo hello from $VERSION; echo $$$$ > /data/pid; while :; do sleep 1; done' \
        "hostNetwork: true
      volumes: [{name: data, hostPath: {path: $data}}]" "" \
        "          env: [{name: VERSION, value: \"${4:-1}\"}]
          volumeMounts: [{name: data, mountPath: /data}]
          resources: {limits: {memory: 64Mi}}
          imagePullPolicy: IfNotPresent
          readinessProbe: {exec: {command: [cat, /data/pid]}, periodSeconds: 1, timeoutSeconds: 5}"
}
# The pod's container id (containerID cri://<id>) and its host pid.
container_id() {
    get_pods_json | jq -r --arg ds "$1" '.items[] | select(.metadata.name | startswith($ds + "-"))
        | .status.containerStatuses[0].containerID // empty' | sed 's|^cri://||'
}
get_pods_json() { "$dl" get pods -A -o json --config "$cfg"; }
restarts() {
    get_pods_json | jq -r --arg ds "$1" '.items[] | select(.metadata.name | startswith($ds + "-"))
        | .status.containerStatuses[0].restartCount'
}
task_pid() { c tasks ls 2>/dev/null | awk -v id="$1" '$1 == id && $3 == "RUNNING" { print $2 }'; }
has_container() { c containers ls -q 2>/dev/null | grepq -x "$1"; }
managed_sandboxes() { c containers ls -q 'labels."io.daemonlet.managed"==true' 2>/dev/null | wc -l; }

# 1. containerd is down when the agent starts: the agent keeps running,
# says why the container did not start, and starts it once containerd is up.
write_image_ds bb.yaml bb busybox:latest
start_agent
wait_for "the agent reports the unreachable runtime" 15 grep -q "did not start: CRI .*not reachable" "$work/agent.log"
kill -0 "$agent" 2>/dev/null && ok || fail "the agent exited while containerd was down"
start_containerd
wait_for "containerd answers on its socket" 20 containerd_up
import_images && ok || fail "ctr cannot import the test images"
wait_for "pod of bb runs (and is ready: its exec probe ran inside)" 30 pod_running it bb
id=$(container_id bb)
pid=$(task_pid "$id")
[[ -n $id && -n $pid ]] && ok || fail "no running CRI container for bb (id '$id', pid '$pid')"
# convertContainerStatus's imageID: containerd's image_ref (a repo digest, or
# the image id for an image without one).
image_id_is_ref() {
    [[ $(get_pods_json | jq -r '.items[] | select(.metadata.name | startswith("bb-")) | .status.containerStatuses[0].imageID') =~ ^(docker\.io/library/busybox@)?sha256:[0-9a-f]{64}$ ]]
}
wait_for "bb's imageID is containerd's image_ref" 10 image_id_is_ref

# 2. Its own PID and mount namespaces, the image's rootfs, the hostPath volume.
wait_for "the container wrote its pid into the hostPath volume" 10 test -s "$data/pid"
[[ $(cat "$data/pid") == 1 ]] && ok || fail "the container's shell is pid $(cat "$data/pid"), not 1: no PID namespace"
[[ $(readlink "/proc/$pid/ns/mnt") != $(readlink /proc/self/ns/mnt) ]] && ok || fail "no mount namespace of its own"
[[ $(readlink "/proc/$pid/ns/pid") != $(readlink /proc/self/ns/pid) ]] && ok || fail "no PID namespace of its own"
[[ -L /proc/$pid/root/bin/sh && ! -e /proc/$pid/root/etc/debian_version ]] && ok || fail "the rootfs is not the busybox image's"

# 3. limits.memory is the cgroup's limit.
cg=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 } $2 == "" { print $3 }' "/proc/$pid/cgroup" | head -1)
if [[ -d /sys/fs/cgroup/memory ]]; then limit_file=/sys/fs/cgroup/memory$cg/memory.limit_in_bytes; else limit_file=/sys/fs/cgroup$cg/memory.max; fi
[[ $(cat "$limit_file" 2>/dev/null) == 67108864 ]] && ok || fail "memory limit in $limit_file: $(cat "$limit_file" 2>&1)"

# 4. daemonlet logs reads what containerd wrote (CRI log format).
wait_for "daemonlet logs prints the container's output" 10 \
    bash -c "'$dl' logs \$('$dl' get pods -n it --config '$cfg' | awk '\$2 ~ /^bb-/ { print \$2 }') -n it --config '$cfg' | grep -qx 'hello from 1'"

# 5. kill -9 of the agent: the container keeps running; a new agent adopts it.
kill -9 "$agent"
wait "$agent" 2>/dev/null
[[ $(task_pid "$id") == "$pid" ]] && ok || fail "the container died with the agent"
start_agent
wait_for "the new agent adopts the container" 15 grep -q 'adopted 1 running container' "$work/agent.log"
wait_for "bb runs after the restart" 15 pod_running it bb
[[ $(container_id bb) == "$id" && $(task_pid "$id") == "$pid" && $(restarts bb) == 0 ]] && ok ||
    fail "adoption changed the container: $(container_id bb) restarts $(restarts bb)"

# 6. An image that cannot be pulled: the pod waits with kubelet's reason,
# and the agent's message gives the pull's.
write_image_ds nope.yaml nope 127.0.0.1:9/daemonlet/absent:1
wait_for "nope waits with ErrImagePull or ImagePullBackOff" 20 pod_waiting_for_image nope
waiting_message() {
    get_pods_json | jq -r --arg ds "$1" '.items[] | select(.metadata.name | startswith($ds + "-"))
        | .status.containerStatuses[0].state.waiting.message // empty'
}
pull_reason_shown() { waiting_message nope | grepq 'pulling image "127.0.0.1:9/daemonlet/absent:1": .*connection refused'; }
wait_for "the pod's message gives the pull's reason" 20 pull_reason_shown
rm -f "$man/nope.yaml"
wait_for "nope goes with its file" 15 no_pod it nope

# 7. A template change rolls: a new container in a new sandbox; the old
# container and the old pod's sandbox are removed from containerd.
write_image_ds bb.yaml bb busybox:latest 2
new_container() { local n; n=$(container_id bb); [[ -n $n && $n != "$id" ]] && pod_running it bb; }
# The stop's grace, the old sandbox's teardown, a new sandbox and the
# readiness probe: a bound with room for ASan beside three other tests on
# two cores (30 s did not hold once in CI).
wait_for "the rollout replaces bb's container" 60 new_container
wait_for "the old container is removed from containerd" 15 bash -c "! '$ctr_bin' --address '$sock' -n k8s.io containers ls -q | grep -qx '$id'"
one_sandbox() { [[ $(c containers ls -q 'labels."io.cri-containerd.kind"==sandbox' 2>/dev/null | wc -l) -eq 1 ]]; }
wait_for "the old pod's sandbox is removed" 20 one_sandbox
wait_for "the new container logs its version" 10 \
    bash -c "'$dl' logs \$('$dl' get pods -n it --config '$cfg' | awk '\$2 ~ /^bb-/ { print \$2 }') -n it --config '$cfg' | grep -qx 'hello from 2'"

# 7b. securityContext through CRI (issue 13 §4), seen from inside, and
# lifecycle postStart / preStop run in the container: pod-level
# runAsUser, runAsGroup, fsGroup, seccompProfile RuntimeDefault (containerd's
# profile), the container's read-only root, allowPrivilegeEscalation false
# and capabilities; a FileOrCreate hostPath made a file (containerd would
# make a directory); runAsNonRoot with a root image waits with the
# kubelet's CreateContainerConfigError; dnsPolicy None with dnsConfig is the
# sandbox's dns_config (GetPodDNS).
chmod 0777 "$data"
mkdir -p "$work/run"  # FileOrCreate makes no parent, as upstream
sec_report="/bin/busybox id > /data/sec-id; /bin/busybox grep -E '^(CapBnd|NoNewPrivs|Seccomp):' /proc/self/status > /data/sec-status;
/bin/busybox grep -E '^[^ ]+ / ' /proc/mounts | /bin/busybox cut -d' ' -f4 | /bin/busybox cut -c1-2 > /data/sec-root;
[ -f /lock ] && echo file > /data/sec-lock; cat /etc/resolv.conf > /data/sec-resolv; /bin/busybox grep ' /mem ' /proc/mounts > /data/sec-mem;
cat /proc/self/oom_score_adj > /data/sec-oom; echo > /data/sec-done; while :; do sleep 1; done"
DS_IMAGE=busybox:latest write_ds sec.yaml sec "$sec_report" \
    "hostNetwork: true
      dnsPolicy: None
      dnsConfig: {nameservers: [203.0.113.1], searches: [x.example]}
      securityContext: {runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, supplementalGroups: [4000], seccompProfile: {type: RuntimeDefault}}
      volumes: [{name: data, hostPath: {path: $data}}, {name: lock, hostPath: {path: $work/run/x.lock, type: FileOrCreate}},
                {name: mem, emptyDir: {medium: Memory, sizeLimit: 16Mi}}]" "" \
    "          imagePullPolicy: IfNotPresent
          securityContext: {readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}}
          lifecycle:
            postStart: {exec: {command: [/bin/sh, -c, 'id -u > /data/sec-poststart']}}
            preStop: {exec: {command: [/bin/sh, -c, 'echo bye > /data/sec-prestop']}}
          volumeMounts: [{name: data, mountPath: /data}, {name: lock, mountPath: /lock}, {name: mem, mountPath: /mem}]"
DS_IMAGE=busybox:latest write_ds nonroot.yaml nonroot 'sleep 1000' "hostNetwork: true
      securityContext: {runAsNonRoot: true}" "" "          imagePullPolicy: IfNotPresent"
wait_for "sec reports from inside its container" 30 test -e "$data/sec-done"
[[ $(cat "$data/sec-id" 2>&1) == "uid=1000 gid=3000 groups=2000,3000,4000" ]] && ok ||
    fail "CRI runAsUser/runAsGroup/fsGroup/supplementalGroups: $(cat "$data/sec-id" 2>&1)"
# A Memory emptyDir is a tmpfs of its sizeLimit (emptyDir plugin
# setupTmpfs); BestEffort's oom_score_adj is 1000 (GetContainerOOMScoreAdjust):
# a positive score, which any machine allows.
grep -q '^tmpfs /mem tmpfs .*size=16384k' "$data/sec-mem" && ok || fail "CRI emptyDir Memory: /mem is $(cat "$data/sec-mem" 2>&1)"
[[ $(cat "$data/sec-oom" 2>&1) == 1000 ]] && ok || fail "CRI BestEffort oom_score_adj is $(cat "$data/sec-oom" 2>&1)"
[[ $(cat "$data/sec-status" 2>&1) == $'CapBnd:\t0000000000000400\nNoNewPrivs:\t1\nSeccomp:\t2' ]] && ok ||
    fail "CRI capabilities, no_new_privs, seccomp RuntimeDefault: $(cat "$data/sec-status" 2>&1)"
[[ $(cat "$data/sec-root" 2>&1) == ro && $(cat "$data/sec-lock" 2>&1) == file && -f $work/run/x.lock ]] && ok ||
    fail "CRI read-only root ($(cat "$data/sec-root" 2>&1)) or FileOrCreate not a file ($(ls -la "$work/run" 2>&1))"
[[ $(grep -E '^(search|nameserver)' "$data/sec-resolv" 2>&1) == $'search x.example\nnameserver 203.0.113.1' ]] && ok ||
    fail "CRI dnsPolicy None with dnsConfig: resolv.conf is $(cat "$data/sec-resolv" 2>&1)"
nonroot_waits() {
    local w
    w=$(get_pods_json | jq -r '.items[] | select(.metadata.name | startswith("nonroot-"))
        | .status.containerStatuses[0].state.waiting | "\(.reason)|\(.message)"')
    [[ $w == "CreateContainerConfigError|container has runAsNonRoot and image will run as root "* ]]
}
wait_for "CRI runAsNonRoot with a root image waits with CreateContainerConfigError" 20 nonroot_waits
rm -f "$man/sec.yaml" "$man/nonroot.yaml"
wait_for "sec goes with its file" 20 no_pod it sec
# Its lifecycle hooks ran in the container (ctr tasks exec, as the container's user).
[[ $(cat "$data/sec-poststart" 2>&1) == 1000 && $(cat "$data/sec-prestop" 2>&1) == bye ]] && ok ||
    fail "CRI postStart ($(cat "$data/sec-poststart" 2>&1)) or preStop ($(cat "$data/sec-prestop" 2>&1)) did not run in the container"
wait_for "nonroot goes with its file" 20 no_pod it nonroot

# 8. A container that exits is restarted (restartPolicy Always) in its
# pod's sandbox, with the next attempt (kuberuntime: ContainerMetadata
# attempt = restart count; the sandbox is kept while it is ready).
DS_IMAGE=busybox:latest write_ds crash.yaml crash '[ -e /data/crashed ] || { touch /data/crashed; exit 3; }; while :; do sleep 1; done' \
    "hostNetwork: true
      volumes: [{name: data, hostPath: {path: $data}}]" "" \
    "          volumeMounts: [{name: data, mountPath: /data}]
          imagePullPolicy: IfNotPresent"
# Meanwhile a static pod (issue 13 §5) through CRI: restartPolicy OnFailure,
# its container exits 0, the pod is Succeeded and not restarted (the
# kubelet's getPhase, as under runc in test_runc.sh).
cat >"$man/static.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: stat, namespace: it}
spec:
  restartPolicy: OnFailure
  hostNetwork: true
  containers:
    - {name: main, image: busybox:latest, imagePullPolicy: IfNotPresent, command: [/bin/sh, -c, "exit 0"]}
EOF
static_done() {
    get_pods_json | jq -e '.items[] | select(.metadata.name == "stat-it-node")
        | .status.phase == "Succeeded" and .status.containerStatuses[0].restartCount == 0
          and .status.containerStatuses[0].state.terminated.exitCode == 0' >/dev/null
}
crash_restarted() { [[ $(restarts crash) == 1 ]] && pod_running it crash; }
wait_for "the exited container is restarted once and runs" 30 crash_restarted
crash_uid=$(get_pods_json | jq -r '.items[] | select(.metadata.name | startswith("crash-")) | .metadata.uid')
# ctr's filters: one argument, its conditions joined by commas, is an AND.
crash_sandboxes() { c containers ls -q "labels.\"io.kubernetes.pod.uid\"==$crash_uid,labels.\"io.cri-containerd.kind\"==sandbox" 2>/dev/null | wc -l; }
[[ $(crash_sandboxes) -eq 1 ]] && ok || fail "the restart made $(crash_sandboxes) sandboxes for the pod, not 1"
crash_containers() { c containers ls -q "labels.\"io.kubernetes.pod.uid\"==$crash_uid,labels.\"io.kubernetes.container.name\"==main" 2>/dev/null | wc -l; }
[[ $(crash_containers) -eq 1 ]] && ok || fail "the exited container was not removed at its restart: $(crash_containers) containers"
wait_for "a static pod under CRI exits 0 and is Succeeded" 20 static_done
rm -f "$man/static.yaml"
wait_for "the static pod goes with its file" 20 no_pod it stat

# 9. A stop that fails is asked again (kubelet's pod worker retries killPod
# at each sync): containerd is down when crash's file goes, so the agent's
# one StopContainer fails; once containerd is back, the container stops and
# the pod goes. (containerd's end leaves the containers to their shims.)
crash_id=$(container_id crash)
[[ -n $(task_pid "$crash_id") ]] && ok || fail "crash's container does not run"
kill "$containerd_pid"
wait "$containerd_pid" 2>/dev/null
containerd_pid=
rm -f "$man/crash.yaml"
wait_for "crash stops while containerd is down" 15 grep -qE "pod it/crash-[a-z0-9]+ stopping" "$work/agent.log"
start_containerd
wait_for "containerd answers again" 20 containerd_up
crash_stopped() { [[ -z $(task_pid "$crash_id") ]]; }
wait_for "the failed stop is asked again once containerd answers" 20 crash_stopped
wait_for "crash's pod goes" 15 no_pod it crash
# Polled: bb's readiness probe (an exec through containerd) failed while
# containerd was down, and the pod is ready again at its next success.
wait_for "bb runs and is ready again after containerd's restart" 20 pod_running it bb

# 10. SIGTERM: the agent stops at once (its worker threads joined, every
# handle closed) and the container runs on.
kill -TERM "$agent"
agent_gone() { [[ ! -e /proc/$agent ]] || grep -q '^[0-9]* (.*) Z' "/proc/$agent/stat"; }
wait_for "the agent stops on SIGTERM" 10 agent_gone
wait "$agent"
status=$?
agent=
[[ $status -eq 0 ]] && ok || fail "the agent exited with status $status on SIGTERM"
grep -q 'handles still open' "$work/agent.log" && fail "the agent left libuv handles open" || ok
bb_id=$(container_id bb)
# Polled: ctr's first answers after containerd's restart (step 9) can fail
# on a loaded machine, and an empty answer is not a stopped container.
# A shim slow to answer is listed UNKNOWN for a while on a loaded machine
# (seen once with four tests at once beside two builds): 30 s, and what ctr
# listed if it never says RUNNING.
bb_runs() { [[ -n $(task_pid "$bb_id") ]]; }
wait_for "the container runs on after the agent stopped" 30 bb_runs ||
    echo "bb's container ${bb_id:-(no id)}; ctr tasks ls: $(c tasks ls 2>&1 | tr '\n' ';')"

# 11. The package's purge, the agent's binary gone (dist/debian/postrm's
# stop_cri_pods: crictl where installed, else ctr, as here): the pods the
# agent ran are stopped, found through the endpoint it recorded and their
# label io.daemonlet.managed; a container of containerd's not the agent's
# runs on.
[[ $(cat "$state/runtime/cri-endpoint" 2>/dev/null) == "unix://$sock" ]] && ok ||
    fail "the agent did not record its endpoint in $state/runtime/cri-endpoint"
c run -d --snapshotter native docker.io/library/busybox:latest "other-$$" sleep 600 >/dev/null 2>&1
other_runs() { [[ -n $(task_pid "other-$$") ]]; }
wait_for "a container not the agent's runs" 10 other_runs
running_managed() {
    local id n=0
    for id in $(c containers ls -q 'labels."io.daemonlet.managed"==true' 2>/dev/null); do
        [[ -n $(task_pid "$id") ]] && n=$((n + 1))
    done
    echo "$n"
}
managed_run() { (($(running_managed) >= 2)); }
wait_for "before the purge: bb's sandbox and container run" 20 managed_run || {
    echo "---- containerd's managed containers, then its tasks"
    c containers ls -q 'labels."io.daemonlet.managed"==true' 2>&1
    c tasks ls 2>&1
    echo "---- containerd's log (last 20 lines)"
    tail -n 20 "$work/containerd.log"
}
(
    # postrm stops here when sourced with this set: its functions only.
    DAEMONLET_POSTRM_FUNCTIONS=1
    # shellcheck source=dist/debian/postrm
    . "$here/../../dist/debian/postrm"
    set -x
    PATH=$(dirname "$ctr_bin"):/usr/bin:/bin stop_cri_pods "$state"
) 2>"$work/stop_cri_pods.trace"
# Polled: a task SIGKILLed by stop_cri_pods is STOPPED once its shim has
# reaped it, a moment after ctr returns.
no_managed_run() { (($(running_managed) == 0)); }
wait_for "after the purge's stop_cri_pods: no managed task runs" 10 no_managed_run || {
    echo "---- containerd's managed containers, then its tasks"
    c containers ls 'labels."io.daemonlet.managed"==true' 2>&1
    c tasks ls 2>&1
    echo "---- stop_cri_pods, traced"
    cat "$work/stop_cri_pods.trace"
}
other_runs && ok || fail "the purge stopped a container that is not the agent's"
c tasks kill --signal SIGKILL "other-$$" >/dev/null 2>&1

finish
