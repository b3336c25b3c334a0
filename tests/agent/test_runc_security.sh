#!/usr/bin/env bash
# runtime: {type: runc}: what the kubelet gives a container of its pod's and
# its own securityContext, checked from inside the container (issue 13 §4):
# pod-level runAsUser / runAsGroup / fsGroup / supplementalGroups and
# seccompProfile RuntimeDefault, the container's readOnlyRootFilesystem,
# allowPrivilegeEscalation false and capabilities (`id`, /proc/self/status
# CapEff, CapBnd, NoNewPrivs, Seccomp, the root's mount); an image USER given
# as a name, resolved from the image's /etc/passwd and /etc/group; hostPath
# DirectoryOrCreate and FileOrCreate created as the kubelet creates them
# (FileOrCreate under an existing parent: a missing one waits, not made);
# an emptyDir of medium Memory as a tmpfs with its sizeLimit, or without one
# the node's allocatable memory; sysctls admitted as the kubelet admits them
# (allowedUnsafeSysctls; a forbidden one rejects the pod); a privileged
# container with every capability and the host's devices; /etc/hosts,
# /etc/hostname and /etc/resolv.conf per dnsPolicy and dnsConfig (the pod's
# own name in /etc/hosts); and
# runAsNonRoot with a root image and a missing `Directory` hostPath waiting
# with the kubelet's reasons and messages; lifecycle postStart and preStop
# (exec, in the container), a failing postStart stopping its container; the
# OOM score per QoS class; a pod terminating when the agent is killed -9 is
# stopped by the next agent. Needs root, runc and busybox-static;
# skips without them; the RuntimeDefault check needs
# /usr/share/containers/seccomp.json (golang-github-containers-common).
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/lib.sh"
require_runc
[[ -r /usr/share/containers/seccomp.json ]] ||
    { echo "SKIPPED: /usr/share/containers/seccomp.json is missing (apt-get install golang-github-containers-common)"; exit 0; }

runc_import_busybox
IMAGE_USER=app "$here/../data/make_busybox_image.sh" "$import/named.tar" example.com/edge/named:1 >/dev/null ||
    { echo "FAIL: cannot build the named-user image"; exit 1; }
data=$work/data
mkdir -p "$data" "$work/run" && chmod 0777 "$data"
write_runc_config "$import"
echo "allowedUnsafeSysctls: ['kernel.msg*']" >>"$cfg"

bb=/bin/busybox
# Each container reports what it sees into the hostPath volume at /data, as FILE.<name>.
report="$bb id > /data/id.\$(NAME); $bb grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status > /data/status.\$(NAME);
$bb grep -E '^[^ ]+ / ' /proc/mounts | $bb tail -1 | $bb cut -d' ' -f4 | $bb cut -c1-2 > /data/root.\$(NAME);
[ -f /lock ] && echo file > /data/lock.\$(NAME); cat /etc/hosts > /data/hosts.\$(NAME);
cat /etc/resolv.conf > /data/resolv.\$(NAME); cat /proc/self/oom_score_adj > /data/oom.\$(NAME); cat /etc/hostname > /data/hostname.\$(NAME); $bb grep ' /mem ' /proc/mounts > /data/mem.\$(NAME); cat /proc/sys/kernel/msgmax > /data/msgmax.\$(NAME); echo > /data/done.\$(NAME);
while :; do sleep 1; done"
env_name() { echo "          env: [{name: NAME, value: $1}]"; }

DS_IMAGE=busybox write_ds sec.yaml sec "$report" \
    "securityContext: {runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, supplementalGroups: [4000], seccompProfile: {type: RuntimeDefault}}
      volumes:
        - {name: data, hostPath: {path: $data}}
        - {name: made, hostPath: {path: $work/made/dir, type: DirectoryOrCreate}}
        - {name: lock, hostPath: {path: $work/run/x.lock, type: FileOrCreate}}
        - {name: mem, emptyDir: {medium: Memory, sizeLimit: 16Mi}}" "" \
    "$(env_name sec)
          imagePullPolicy: Never
          securityContext: {readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}}
          volumeMounts: [{name: data, mountPath: /data}, {name: made, mountPath: /made}, {name: lock, mountPath: /lock}, {name: mem, mountPath: /mem}]"
DS_IMAGE=example.com/edge/named:1 write_ds named.yaml named "$report" \
    "volumes: [{name: data, hostPath: {path: $data}}, {name: mem, emptyDir: {medium: Memory}}]
      hostname: web
      dnsPolicy: None
      dnsConfig: {nameservers: [203.0.113.1], searches: [x.example], options: [{name: ndots, value: '2'}]}
      securityContext: {sysctls: [{name: kernel.msgmax, value: '12345'}]}" "" \
    "$(env_name named)
          imagePullPolicy: Never
          volumeMounts: [{name: data, mountPath: /data}, {name: mem, mountPath: /mem}]"
DS_IMAGE=busybox write_ds priv.yaml priv "$report" \
    "volumes: [{name: data, hostPath: {path: $data}}]" "" \
    "$(env_name priv)
          imagePullPolicy: Never
          securityContext: {privileged: true}
          volumeMounts: [{name: data, mountPath: /data}]"
DS_IMAGE=busybox write_ds forbidden.yaml forbidden 'sleep 1000' \
    "securityContext: {sysctls: [{name: net.core.somaxconn, value: '1024'}]}" "" "          imagePullPolicy: Never"
DS_IMAGE=busybox write_ds nonroot.yaml nonroot 'sleep 1000' "securityContext: {runAsNonRoot: true}" "" \
    "          imagePullPolicy: Never"
DS_IMAGE=busybox write_ds missing.yaml missing 'sleep 1000' \
    "volumes: [{name: gone, hostPath: {path: $work/nope, type: Directory}}]" "" \
    "          imagePullPolicy: Never
          volumeMounts: [{name: gone, mountPath: /gone}]"
DS_IMAGE=busybox write_ds noparent.yaml noparent 'sleep 1000' \
    "volumes: [{name: lock, hostPath: {path: $work/np/x.lock, type: FileOrCreate}}]" "" \
    "          imagePullPolicy: Never
          volumeMounts: [{name: lock, mountPath: /lock}]"
# Guaranteed (cpu and memory limits), with lifecycle hooks run in the container.
DS_IMAGE=busybox write_ds hooks.yaml hooks 'while :; do sleep 1; done' \
    "volumes: [{name: data, hostPath: {path: $data}}]" "" \
    "          imagePullPolicy: Never
          resources: {limits: {cpu: 100m, memory: 64Mi}}
          lifecycle:
            postStart: {exec: {command: [/bin/sh, -c, 'cat /proc/1/oom_score_adj > /data/oom.hooks; echo up > /data/poststart.hooks']}}
            preStop: {exec: {command: [/bin/sh, -c, 'echo bye > /data/prestop.hooks']}}
          volumeMounts: [{name: data, mountPath: /data}]"
# A preStop hook that outlasts the agent (its first run only), 30 s of grace.
DS_IMAGE=busybox write_ds slowstop.yaml slowstop "trap 'exit 0' TERM; while :; do sleep 1; done" \
    "volumes: [{name: data, hostPath: {path: $data}}]" "" \
    "          imagePullPolicy: Never
          lifecycle: {preStop: {exec: {command: [/bin/sh, -c, 'test -e /data/slowstop.hook || { touch /data/slowstop.hook; sleep 60; }']}}}
          volumeMounts: [{name: data, mountPath: /data}]"
sed -i 's/terminationGracePeriodSeconds: 2$/terminationGracePeriodSeconds: 30/' "$man/slowstop.yaml"
DS_IMAGE=busybox write_ds badhook.yaml badhook 'while :; do sleep 1; done' "" "" \
    "          imagePullPolicy: Never
          lifecycle: {postStart: {exec: {command: [/bin/sh, -c, 'exit 3']}}}"
start_agent

get_pods_json() { "$dl" get pods -A -o json --config "$cfg"; }
waiting_as() {  # waiting_as DS REASON MESSAGE: the first container waits with them
    [[ $(get_pods_json | jq -r --arg ds "$1" '.items[] | select(.metadata.name | startswith($ds + "-"))
        | .status.containerStatuses[0].state.waiting | "\(.reason)|\(.message)"') == "$2|$3" ]]
}

# 1. Pod and container securityContext, merged (DetermineEffectiveSecurityContext).
wait_for "sec reports" 20 test -e "$data/done.sec"
[[ $(cat "$data/id.sec") == "uid=1000 gid=3000 groups=2000,3000,4000" ]] && ok ||
    fail "runAsUser/runAsGroup/fsGroup/supplementalGroups: id says $(cat "$data/id.sec")"
grep -qx $'CapBnd:\t0000000000000400' "$data/status.sec" && grep -qx $'CapEff:\t0000000000000000' "$data/status.sec" &&
    ok || fail "capabilities drop ALL add NET_BIND_SERVICE, non-root: $(cat "$data/status.sec")"
grep -qx $'NoNewPrivs:\t1' "$data/status.sec" && ok || fail "allowPrivilegeEscalation false: $(cat "$data/status.sec")"
grep -qx $'Seccomp:\t2' "$data/status.sec" && ok || fail "seccompProfile RuntimeDefault is no filter: $(cat "$data/status.sec")"
[[ $(cat "$data/root.sec") == ro ]] && ok || fail "readOnlyRootFilesystem: the root is mounted $(cat "$data/root.sec")"
[[ $(cat "$data/lock.sec" 2>/dev/null) == file && -f $work/run/x.lock ]] && ok ||
    fail "hostPath FileOrCreate is not a file: $(ls -la "$work/run" 2>&1)"
[[ $(stat -c %a "$work/run/x.lock") == 644 && $(stat -c %a "$work/made/dir") == 755 ]] && ok ||
    fail "modes of the created hostPaths: $(stat -c '%n %a' "$work/run/x.lock" "$work/made/dir" 2>&1)"
grep -q '^tmpfs /mem tmpfs .*size=16384k' "$data/mem.sec" && ok || fail "emptyDir Memory: /mem is $(cat "$data/mem.sec")"

# 2. An image USER given as a name: the image's /etc/passwd and /etc/group.
wait_for "named reports" 20 test -e "$data/done.named"
[[ $(cat "$data/id.named") == "uid=1234(app) gid=1234(app) groups=1234(app),2345(extra)" ]] && ok ||
    fail "image USER app: id says $(cat "$data/id.named")"
# A Memory emptyDir without sizeLimit, BestEffort: the node's allocatable
# memory, here the machine's, sysconf's as the agent's (calculateEmptyDirMemorySize).
grep -q "^tmpfs /mem tmpfs .*size=$(($(getconf _PHYS_PAGES) * $(getconf PAGESIZE) / 1024))k" "$data/mem.named" && ok ||
    fail "emptyDir Memory without sizeLimit: /mem is $(cat "$data/mem.named")"
# kernel.msgmax through allowedUnsafeSysctls kernel.msg* (the allowlist's prefixes).
[[ $(cat "$data/msgmax.named") == 12345 ]] && ok || fail "sysctl kernel.msgmax is $(cat "$data/msgmax.named")"
grep -qx $'Seccomp:\t0' "$data/status.named" && grep -qx $'NoNewPrivs:\t0' "$data/status.named" &&
    [[ $(cat "$data/root.named") == rw ]] && ok ||
    fail "no securityContext: Unconfined, no_new_privs off: $(cat "$data/status.named")"

# 2b. privileged: every capability the agent has, no seccomp, the host's
# devices (containerd's WithDevices(HostDevices())).
wait_for "priv reports" 20 test -e "$data/done.priv"
[[ $(grep CapEff "$data/status.priv" | cut -f2) == $(grep CapEff /proc/self/status | cut -f2) ]] && ok ||
    fail "privileged: CapEff $(grep CapEff "$data/status.priv") is not the agent's"
grep -qx $'Seccomp:\t0' "$data/status.priv" && ok || fail "privileged: a seccomp filter: $(cat "$data/status.priv")"
priv_id=$("$dl" get pods -A -o json --config "$cfg" | jq -r '.items[] | select(.metadata.name | startswith("priv-"))
    | .status.containerStatuses[0].containerID' | sed 's|^runc://||')
if [[ -c /dev/kmsg ]]; then
    [[ -n $priv_id ]] && rc exec "$priv_id" /bin/busybox test -c /dev/kmsg && ok ||
        fail "privileged: the host's /dev/kmsg is not in the container ($priv_id)"
fi

# 3. /etc/hosts, /etc/hostname, /etc/resolv.conf as the kubelet manages them
# (managedHostsFileContent, GetPodDNS): no clusterDNS configured, so the
# ClusterFirst pod gets the node's resolver, said once in the log.
[[ $(head -1 "$data/hosts.sec") == "# Kubernetes-managed hosts file." ]] && grep -qx $'127.0.0.1\tlocalhost' "$data/hosts.sec" &&
    ok || fail "sec's /etc/hosts: $(cat "$data/hosts.sec")"
# The pod's own name (no pod IP under runc: at the loopback address).
grep -qx $'127.0.0.1\t'"$(cat "$data/hostname.sec")" "$data/hosts.sec" && grep -qx $'127.0.0.1\tweb' "$data/hosts.named" &&
    ok || fail "the own-name line: $(cat "$data/hosts.sec" "$data/hosts.named")"
[[ $(grep '^nameserver' "$data/resolv.sec") == "$(grep '^nameserver' /etc/resolv.conf | awk '{print "nameserver " $2}' | head -3)" ]] &&
    ok || fail "ClusterFirst without clusterDNS: the node's nameservers, not $(cat "$data/resolv.sec")"
[[ $(grep -c 'no clusterDNS configured' "$agent_log") -eq 1 ]] && ok || fail "the fallback to the node's resolver is not said once"
[[ $(cat "$data/hostname.sec") == sec-* && $(cat "$data/hostname.named") == web ]] && ok ||
    fail "hostnames: $(cat "$data/hostname.sec") and $(cat "$data/hostname.named")"
[[ $(cat "$data/resolv.named") == $'search x.example\nnameserver 203.0.113.1\noptions ndots:2' ]] && ok ||
    fail "dnsPolicy None with dnsConfig: $(cat "$data/resolv.named")"

# 4. Waiting with the kubelet's reasons and messages, never started.
wait_for "runAsNonRoot with a root image: CreateContainerConfigError" 20 waiting_as nonroot CreateContainerConfigError \
    "container has runAsNonRoot and image will run as root (pod: \"$(get_pods_json | jq -r '.items[] | select(.metadata.name | startswith("nonroot-")) | "\(.metadata.name)_it(\(.metadata.uid))"')\", container: main)"
wait_for "a missing Directory hostPath waits with the kubelet's message" 20 waiting_as missing ContainerCreating \
    "MountVolume.SetUp failed for volume \"gone\" : hostPath type check failed: $work/nope is not a directory"
[[ ! -e $work/nope ]] && ok || fail "a Directory hostPath was created"
# FileOrCreate makes no parent (hostpath makeFile: os.OpenFile(path,
# O_CREATE, 0644), no MkdirAll): the mount fails with Go's open error and
# the container waits, retried at its back-off (60 s here: `delete pod`
# retries now, its DaemonSet making a new pod). Once the parent is there
# the file is made and the pod runs.
wait_for "FileOrCreate with a missing parent waits with the kubelet's message" 20 waiting_as noparent ContainerCreating \
    "MountVolume.SetUp failed for volume \"lock\" : open $work/np/x.lock: no such file or directory"
[[ ! -e $work/np ]] && ok || fail "FileOrCreate made the missing parent $work/np"
mkdir "$work/np"
"$dl" delete pod "$(get_pods_json | jq -r '.items[] | select(.metadata.name | startswith("noparent-")) | .metadata.name')" \
    -n it --config "$cfg" >/dev/null
noparent_runs() {
    get_pods_json | jq -e '.items[] | select(.metadata.name | startswith("noparent-"))
        | .status.containerStatuses[0].state.running != null' >/dev/null && test -f "$work/np/x.lock"
}
wait_for "once its parent exists, the FileOrCreate pod runs with its file" 20 noparent_runs ||
    get_pods_json | jq -c '.items[] | select(.metadata.name | startswith("noparent-")) | .status'
# A sysctl neither safe nor allowed: the kubelet's admission rejects the pod
# (allowlist.go Admit), which never starts; describe shows the event.
rejected_sysctl() {
    [[ $(get_pods_json | jq -r '.items[] | select(.metadata.name | startswith("forbidden-"))
        | "\(.status.phase)|\(.status.reason)|\(.status.message)|\(.status.containerStatuses // [] | length)"' |
        head -1) == 'Failed|SysctlForbidden|forbidden sysctl: "net.core.somaxconn" not allowlisted|0' ]]
}
wait_for "a forbidden sysctl: the pod is rejected (SysctlForbidden)" 20 rejected_sysctl
"$dl" describe daemonset forbidden -n it --config "$cfg" | grep -q 'SysctlForbidden .*kubelet .*forbidden sysctl: "net.core.somaxconn"' &&
    ok || fail "describe: $("$dl" describe daemonset forbidden -n it --config "$cfg" | tail -5)"

# 5. Lifecycle hooks (kuberuntime_container.go): postStart in the container
# once it started; preStop before the stop signal when the pod goes; a
# failing postStart stops its container, which restarts (restartPolicy Always).
wait_for "postStart ran in the container" 20 test -e "$data/poststart.hooks"
rm "$man/hooks.yaml"
wait_for "preStop ran before the stop" 20 test -e "$data/prestop.hooks"
[[ $(cat "$data/prestop.hooks") == bye ]] && ok || fail "preStop wrote $(cat "$data/prestop.hooks")"
restarts() { get_pods_json | jq -r '.items[] | select(.metadata.name | startswith("badhook-")) | .status.containerStatuses[0].restartCount'; }
restarted() { [[ $(restarts) -ge 1 ]]; }
wait_for "a failing postStart restarts its container" 20 restarted
grep -q 'Exec lifecycle hook (\[/bin/sh -c exit 3\]) for Container "main" in Pod "badhook-.*_it(.*)" failed - error: command '"'"'/bin/sh -c exit 3'"'"' exited with 3: , message: ""; stopping the container' "$agent_log" &&
    ok || fail "the failed postStart is not said with the kubelet's message: $(grep -i 'lifecycle hook' "$agent_log" | head -3)"

# 6. OOM score per QoS class (GetContainerOOMScoreAdjust), as the kernel set
# it: BestEffort 1000; Guaranteed -997 where the agent may set a negative
# score (CAP_SYS_RESOURCE), else raised to the agent's own (0 here: runc
# 1.1.5 would fail the start), said once.
[[ $(cat "$data/oom.named") == 1000 ]] && ok || fail "BestEffort oom_score_adj is $(cat "$data/oom.named")"
if (( 0x$(grep CapEff /proc/self/status | cut -f2) >> 24 & 1 )); then
    [[ $(cat "$data/oom.hooks") == -997 ]] && ok || fail "Guaranteed oom_score_adj is $(cat "$data/oom.hooks")"
else
    echo "# this machine refuses negative OOM scores (no CAP_SYS_RESOURCE): Guaranteed asks -997, gets $(cat /proc/self/oom_score_adj)"
    [[ $(cat "$data/oom.hooks") == "$(cat /proc/self/oom_score_adj)" ]] && ok ||
        fail "Guaranteed oom_score_adj is $(cat "$data/oom.hooks")"
    [[ $(grep -c 'refuses an oom_score_adj below' "$agent_log") -eq 1 ]] && ok || fail "the restricted OOM score is not said once"
fi

# 7. kill -9 of the agent while a pod terminates (its DaemonSet removed, its
# preStop hook running): the next agent resumes the termination, as the
# kubelet's pod worker resumes killPod for a pod known to be terminating;
# the container is stopped and the pod goes.
slowstop_id() {
    get_pods_json | jq -r '.items[] | select(.metadata.name | startswith("slowstop-"))
        | .status.containerStatuses[0] | select(.state.running != null) | .containerID | sub("^[a-z]+://"; "")'
}
has_slowstop_id() { [[ -n $(slowstop_id) ]]; }
wait_for "slowstop runs" 20 has_slowstop_id
slow_id=$(slowstop_id)
rm "$man/slowstop.yaml"
wait_for "slowstop's preStop hook runs" 10 test -e "$data/slowstop.hook"
kill -9 "$agent"
wait "$agent" 2>/dev/null
rc state "$slow_id" 2>/dev/null | grep -q '"status": "running"' && ok || fail "slowstop's container $slow_id did not outlive the agent"
start_own_agent
slowstop_gone() {
    local j
    j=$(get_pods_json) || return 1
    ! jq -e '.items[] | select(.metadata.name | startswith("slowstop-"))' <<<"$j" >/dev/null &&
        ! rc list -q | grep -qx "$slow_id"
}
wait_for "after the restart slowstop's container is stopped and its pod gone" 20 slowstop_gone

finish
