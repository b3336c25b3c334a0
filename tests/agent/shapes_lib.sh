# Shared by test_shapes_runc.sh and test_shapes_cri.sh (sourced after lib.sh,
# the runtime's configuration written to $cfg, and, for CRI, cri_lib.sh):
# five DaemonSets in the shapes that published install files use (issue 13
# §6), each in a manifest file of its own with the documents such a file
# carries (a ServiceAccount, left alone; its ConfigMap or Secret), run
# together by one agent that follows the test API server (tokens):
#   cni       a CNI agent (flannel's shape): hostNetwork, a ConfigMap
#             volume, a FileOrCreate xtables lock, NET_ADMIN added, the
#             downward API env;
#   logs      a log shipper (fluent-bit's): a ConfigMap volume, a read-only
#             hostPath of logs, a DirectoryOrCreate state dir, the token,
#             a pod-level fsGroup;
#   exporter  a node exporter (prometheus' node-exporter): hostNetwork and
#             hostPID, pod-level runAsUser and runAsNonRoot over an image
#             whose USER is a name, read-only root, no privilege escalation,
#             every capability dropped, the host's /proc and /sys read-only;
#   devices   a device plugin (nvidia's): the kubelet's device-plugins
#             directory and its socket (hostPath type Socket), capabilities
#             dropped;
#   keyed     a secret-keyed agent: envFrom a Secret and a prefixed
#             ConfigMap (an invalid key skipped), secretKeyRef, a secret
#             volume of defaultMode 0400 on tmpfs, a pod-level fsGroup.
# Each container writes what it sees from the inside into the hostPath
# $shapes_out as <shape>.<what>: `id`, the capability sets, NoNewPrivs and
# Seccomp of /proc/self/status, whether / takes a write, /etc/hosts and
# /etc/resolv.conf, `stat -L` of every file under its mounts, each mount's
# filesystem type and ro/rw flag, whether it sees the host's pids, and last
# its env (<shape>.env: the "done" file).
# check_shapes compares with what the kubelet (and the CRI runtime under it)
# would give, naming the upstream rule of each check.
# A sixth, reloader (a config-reloading agent), is the dynamic part
# (check_reloader, below): a Secret created after its pod, a ConfigMap
# edited, a token refreshed, all through the test API server, and an
# offline reboot; the script defines shapes_reboot, the runtime's part of
# a reboot, and starts the test API server with 5 s tokens.
#
# The script has the runtime's images ready: busybox, and
# example.com/edge/named:1, whose config has USER app (uid 1234, group app
# 1234 and extra 2345 listing app: tests/data/make_busybox_image.sh
# IMAGE_USER); then run_shapes BUSYBOX_NAME writes the manifests, starts
# the agent and checks.
shapes_out=$work/shapes
host=$work/host
shapes_named_image=example.com/edge/named:1
shapes_fs_group=2500  # logs' and keyed's pod-level fsGroup
# $host/run is the node's /run, which published manifests assume exists
# (FileOrCreate makes no parent: the xtables lock would wait otherwise).
mkdir -p "$shapes_out" "$host/varlog" "$host/device-plugins" "$host/run"
chmod 0777 "$shapes_out"  # the exporter writes as uid 1234
echo "a log line" >"$host/varlog/syslog"
# The kubelet's registration socket in the device-plugins directory: a
# listening unix socket (notify_listen's), for the hostPath of type Socket.
"$listen" "$host/device-plugins/kubelet.sock" "$work/kubelet-sock.log" &
listener=$!

# The report each container runs: busybox sh, its applets as they are in
# the image (bin/busybox, sh, sleep, cat, echo; the others by busybox's
# standalone shell). LIST: the files and directories whose files it
# stats; MOUNTS: its mounts, each reported as "PATH FSTYPE ro|rw" (the
# mount's own flag, /proc/mounts), and written to where a directory.
# WAIT_FOR: a file to wait for first: the token, which the agent writes
# into the mounted volume once the API server answers when the pod started
# before (its documented departure, core/pod_env.h start_without_token).
shapes_script='o=/out/$SHAPE
while [ -n "$WAIT_FOR" ] && [ ! -e "$WAIT_FOR" ]; do sleep 0.05; done
id > $o.id
grep -E "^(Cap(Prm|Eff|Bnd)|NoNewPrivs|Seccomp):" /proc/self/status > $o.status
if touch /root-write-check 2>/dev/null; then echo rw; else echo ro; fi > $o.root
cat /etc/hosts > $o.hosts
cat /etc/resolv.conf > $o.resolv
for d in $LIST; do
  if [ -d $d ]; then for f in $d/*; do echo "$f $(stat -L -c "%a %u %g %F" $f)"; done; else echo "$d $(stat -L -c "%a %u %g %F" $d)"; fi
done > $o.files
for d in $MOUNTS; do grep " $d " /proc/mounts | tail -1 | while read -r _ _ t opts _; do echo "$d $t ${opts%%,*}"; done; done > $o.mounts
for d in $MOUNTS; do [ -d $d ] && touch $d/.write-check-$SHAPE 2>/dev/null; done
[ -d /proc/$TEST_PID ] && echo host > $o.pidns || echo own > $o.pidns
env | sort > $o.env.tmp && mv $o.env.tmp $o.env
while :; do sleep 1; done'

# The container's command: the report as a YAML block scalar.
shapes_command() {  # shapes_command SHAPE
    printf '          command:\n            - /bin/sh\n            - -c\n            - |\n'
    sed 's/^/              /' <<<"$shapes_script"
    printf '            - it-marker-%s-%s\n' "$$" "$1"
}
# shapes_env SHAPE LIST MOUNTS [WAIT_FOR]: the env every report reads.
shapes_env() {
    printf '            - {name: SHAPE, value: %s}\n            - {name: LIST, value: "%s"}\n' "$1" "$2"
    printf '            - {name: MOUNTS, value: "%s"}\n' "$3"
    printf '            - {name: TEST_PID, value: "%s"}\n' "$$"
    printf '            - {name: WAIT_FOR, value: "%s"}\n' "${4:-}"
}
shapes_write() {  # shapes_write FILE < YAML: as tools write, a temp file renamed
    cat >"$man/$1.tmp" && mv "$man/$1.tmp" "$man/$1"
}

write_shapes() {
    shapes_write cni.yaml <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: kube-flannel, labels: {pod-security.kubernetes.io/enforce: privileged}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: flannel, namespace: kube-flannel}
---
kind: ConfigMap
apiVersion: v1
metadata:
  name: kube-flannel-cfg
  namespace: kube-flannel
  labels: {tier: node, app: flannel}
data:
  cni-conf.json: |
    {"name": "cbr0", "cniVersion": "0.3.1", "plugins": [{"type": "flannel"}]}
  net-conf.json: |
    {"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: kube-flannel-ds, namespace: kube-flannel, labels: {tier: node, app: flannel}}
spec:
  selector: {matchLabels: {app: flannel}}
  template:
    metadata: {labels: {tier: node, app: flannel}}
    spec:
      hostNetwork: true
      priorityClassName: system-node-critical
      tolerations: [{operator: Exists, effect: NoSchedule}]
      serviceAccountName: flannel
      terminationGracePeriodSeconds: 2
      containers:
        - name: kube-flannel
          image: $shapes_image
$(shapes_command cni)
          resources: {requests: {cpu: 100m, memory: 50Mi}}
          securityContext:
            privileged: false
            capabilities: {add: [NET_ADMIN, NET_RAW]}
          env:
            - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
            - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
            - {name: EVENT_QUEUE_DEPTH, value: "5000"}
$(shapes_env cni "/etc/kube-flannel /run/xtables.lock" "/etc/kube-flannel /run/xtables.lock")
          volumeMounts:
            - {name: run, mountPath: /run/flannel}
            - {name: flannel-cfg, mountPath: /etc/kube-flannel/}
            - {name: xtables-lock, mountPath: /run/xtables.lock}
            - {name: out, mountPath: /out}
      volumes:
        - {name: run, hostPath: {path: $host/run/flannel}}
        - {name: flannel-cfg, configMap: {name: kube-flannel-cfg}}
        - {name: xtables-lock, hostPath: {path: $host/run/xtables.lock, type: FileOrCreate}}
        - {name: out, hostPath: {path: $shapes_out}}
EOF
    shapes_write logs.yaml <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: fluent-bit, namespace: logging}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: fluent-bit, namespace: logging, labels: {app.kubernetes.io/name: fluent-bit}}
data:
  fluent-bit.conf: |
    [SERVICE]
        Flush 1
    @INCLUDE input-kubernetes.conf
  input-kubernetes.conf: |
    [INPUT]
        Name tail
        Path /var/log/containers/*.log
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: fluent-bit, namespace: logging, labels: {app.kubernetes.io/name: fluent-bit}}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: fluent-bit}}
  template:
    metadata: {labels: {app.kubernetes.io/name: fluent-bit}}
    spec:
      serviceAccountName: fluent-bit
      securityContext: {fsGroup: $shapes_fs_group}
      terminationGracePeriodSeconds: 2
      containers:
        - name: fluent-bit
          image: $shapes_image
          imagePullPolicy: IfNotPresent
$(shapes_command logs)
          env:
            - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
$(shapes_env logs "/fluent-bit/etc /var/log /var/run/secrets/kubernetes.io/serviceaccount" "/fluent-bit/etc /var/log /var/fluent-bit/state /var/run/secrets/kubernetes.io/serviceaccount" /var/run/secrets/kubernetes.io/serviceaccount/token)
          volumeMounts:
            - {name: config, mountPath: /fluent-bit/etc/}
            - {name: varlog, mountPath: /var/log, readOnly: true}
            - {name: state, mountPath: /var/fluent-bit/state}
            - {name: out, mountPath: /out}
      volumes:
        - {name: config, configMap: {name: fluent-bit}}
        - {name: varlog, hostPath: {path: $host/varlog}}
        - {name: state, hostPath: {path: $host/fluent-bit/state, type: DirectoryOrCreate}}
        - {name: out, hostPath: {path: $shapes_out}}
EOF
    shapes_write exporter.yaml <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: node-exporter, namespace: monitoring}
automountServiceAccountToken: false
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: node-exporter, namespace: monitoring, labels: {app.kubernetes.io/name: node-exporter}}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: node-exporter}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 10%}}
  template:
    metadata: {labels: {app.kubernetes.io/name: node-exporter}}
    spec:
      hostNetwork: true
      hostPID: true
      serviceAccountName: node-exporter
      automountServiceAccountToken: true
      terminationGracePeriodSeconds: 2
      securityContext: {runAsNonRoot: true, runAsUser: 1234}
      containers:
        - name: node-exporter
          image: $shapes_named_image
$(shapes_command exporter)
          env:
$(shapes_env exporter /var/run/secrets/kubernetes.io/serviceaccount "/host/proc /host/sys /var/run/secrets/kubernetes.io/serviceaccount" /var/run/secrets/kubernetes.io/serviceaccount/token)
          securityContext:
            readOnlyRootFilesystem: true
            allowPrivilegeEscalation: false
            capabilities: {drop: [ALL]}
          volumeMounts:
            - {name: proc, mountPath: /host/proc, readOnly: true}
            - {name: sys, mountPath: /host/sys, readOnly: true}
            - {name: out, mountPath: /out}
      volumes:
        - {name: proc, hostPath: {path: /proc}}
        - {name: sys, hostPath: {path: /sys}}
        - {name: out, hostPath: {path: $shapes_out}}
EOF
    shapes_write devices.yaml <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nvidia-device-plugin-daemonset, namespace: kube-system}
spec:
  selector: {matchLabels: {name: nvidia-device-plugin-ds}}
  updateStrategy: {type: RollingUpdate}
  template:
    metadata: {labels: {name: nvidia-device-plugin-ds}}
    spec:
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      priorityClassName: system-node-critical
      terminationGracePeriodSeconds: 2
      containers:
        - name: nvidia-device-plugin-ctr
          image: $shapes_image
$(shapes_command devices)
          env:
            - {name: FAIL_ON_INIT_ERROR, value: "false"}
$(shapes_env devices "/var/lib/kubelet/device-plugins /kubelet.sock" "/var/lib/kubelet/device-plugins /kubelet.sock")
          securityContext:
            allowPrivilegeEscalation: false
            capabilities: {drop: [ALL]}
          volumeMounts:
            - {name: device-plugin, mountPath: /var/lib/kubelet/device-plugins}
            - {name: kubelet-sock, mountPath: /kubelet.sock}
            - {name: out, mountPath: /out}
      volumes:
        - {name: device-plugin, hostPath: {path: $host/device-plugins}}
        - {name: kubelet-sock, hostPath: {path: $host/device-plugins/kubelet.sock, type: Socket}}
        - {name: out, hostPath: {path: $shapes_out}}
EOF
    shapes_write keyed.yaml <<EOF
apiVersion: v1
kind: Secret
metadata: {name: agent-keys, namespace: agents}
type: Opaque
data:
  API_KEY: $(printf 'k-123' | base64)
  1BAD: $(printf 'skipped' | base64)
stringData:
  SITE: edge.example
---
apiVersion: v1
kind: ConfigMap
metadata: {name: agent-env, namespace: agents}
data: {LOG_LEVEL: debug, SITE: from-configmap}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: agent, namespace: agents}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: agents}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      serviceAccountName: agent
      automountServiceAccountToken: false
      securityContext: {fsGroup: $shapes_fs_group}
      terminationGracePeriodSeconds: 2
      containers:
        - name: agent
          image: $shapes_image
$(shapes_command keyed)
          envFrom:
            - secretRef: {name: agent-keys}
            - {prefix: CFG_, configMapRef: {name: agent-env}}
          env:
            - {name: DD_API_KEY, valueFrom: {secretKeyRef: {name: agent-keys, key: API_KEY}}}
            - {name: SITE, value: explicit}
$(shapes_env keyed /etc/agent/keys /etc/agent/keys)
          volumeMounts:
            - {name: keys, mountPath: /etc/agent/keys, readOnly: true}
            - {name: out, mountPath: /out}
      volumes:
        - {name: keys, secret: {secretName: agent-keys, defaultMode: 0400, items: [{key: API_KEY, path: api_key}]}}
        - {name: out, hostPath: {path: $shapes_out}}
EOF
}

# The checks, once the agent runs.
shapes_check() {  # shapes_check WHAT EXPECTED ACTUAL
    if [[ $2 == "$3" ]]; then ok; else fail "$1: expected '$2', got '$3'"; fi
}
seen() {  # seen SHAPE WHAT PATH: the report's line for PATH, without PATH
    sed -n "s|^$3 ||p" "$shapes_out/$1.$2"
}
caps_of() {  # caps_of SHAPE: "CapPrm CapEff CapBnd" of its /proc/self/status
    local f
    for f in CapPrm CapEff CapBnd; do sed -n "s/^$f:\t//p" "$shapes_out/$1.status"; done | paste -sd' '
}
status_of() { sed -n "s/^$2:\t//p" "$shapes_out/$1.status"; }
env_of() { sed -n "s/^$2=//p" "$shapes_out/$1.env"; }
pod_in() { pods_json | jq -r --arg ns "$1" '.items[] | select(.metadata.namespace == $ns) | .metadata.name'; }
shapes=(cni logs exporter devices keyed)
shapes_reported() {
    local s
    for s in "${shapes[@]}"; do test -s "$shapes_out/$s.env" || return 1; done
}

check_shapes() {
    local s
    wait_for "the five pods report what they see" 30 shapes_reported || {
        for s in "${shapes[@]}"; do [[ -s $shapes_out/$s.env ]] || echo "# $s did not report"; done
        get_pods
        return
    }
    local sa=/var/run/secrets/kubernetes.io/serviceaccount file='644 0 0 regular file'
    # The capability set the kubelet leaves to the runtime (kuberuntime asks
    # for none by default; containerd's and runc's default set: CHOWN
    # DAC_OVERRIDE FSETID FOWNER MKNOD NET_RAW SETGID SETUID SETFCAP SETPCAP
    # NET_BIND_SERVICE SYS_CHROOT KILL AUDIT_WRITE), and a root process's
    # permitted and effective sets are its bounding set.
    local defaults=00000000a80425fb none=0000000000000000
    # An image without /etc/passwd: uid and gid 0, nothing more.
    local root_id='uid=0 gid=0 groups=0'
    local nameservers
    nameservers=$(grep '^nameserver' /etc/resolv.conf | awk '{print "nameserver " $2}' | head -3)
    { printf '# Kubernetes-managed hosts file (host network).\n'; cat /etc/hosts; } >"$work/hosts.hostnet"

    # cni. A ConfigMap volume: configmap.MakePayload's files at the API
    # server's defaultMode 0644, root's; mounted read-only whatever the
    # volumeMount says (kubelet makeMounts: the plugin's ReadOnly attribute).
    shapes_check "cni: the ConfigMap's files" "$file|$file" \
        "$(seen cni files /etc/kube-flannel/cni-conf.json)|$(seen cni files /etc/kube-flannel/net-conf.json)"
    shapes_check "cni: the ConfigMap volume is read-only" ro "$(seen cni mounts /etc/kube-flannel | cut -d' ' -f2)"
    # hostPath FileOrCreate (hostpath's FileTypeChecker makeFile: a regular
    # file of mode 0644 in its existing parent), mounted read-write.
    shapes_check "cni: the FileOrCreate lock, inside and on the host" "${file/regular/regular empty}|${file/regular/regular empty}" \
        "$(seen cni files /run/xtables.lock)|$(stat -c '%a %u %g %F' "$host/run/xtables.lock" 2>&1)"
    shapes_check "cni: the lock's mount is read-write" rw "$(seen cni mounts /run/xtables.lock | cut -d' ' -f2)"
    # capabilities add NET_ADMIN (bit 12) to the runtime's defaults; no
    # seccomp filter (the kubelet's default profile is Unconfined while
    # SeccompDefault is off); no_new_privs only for allowPrivilegeEscalation
    # false (securitycontext.AddNoNewPrivileges).
    shapes_check "cni: capabilities, the defaults and NET_ADMIN" "00000000a80435fb 00000000a80435fb 00000000a80435fb" \
        "$(caps_of cni)"
    shapes_check "cni: NoNewPrivs, Seccomp" "0 0" "$(status_of cni NoNewPrivs) $(status_of cni Seccomp)"
    shapes_check "cni: id, the root writable" "$root_id|rw" "$(cat "$shapes_out/cni.id")|$(cat "$shapes_out/cni.root")"
    shapes_check "cni: env from the downward API and a value" "$(pod_in kube-flannel) kube-flannel 5000" \
        "$(env_of cni POD_NAME) $(env_of cni POD_NAMESPACE) $(env_of cni EVENT_QUEUE_DEPTH)"
    # hostNetwork: the node's /etc/hosts under the kubelet's header
    # (kubelet_pods.go nodeHostsFileContent); ClusterFirst on the host
    # network is the node's resolver (dns.go getPodDNSType: podDNSHost).
    shapes_check "cni: hostNetwork /etc/hosts" "$(cat "$work/hosts.hostnet")" "$(cat "$shapes_out/cni.hosts")"
    shapes_check "cni: hostNetwork /etc/resolv.conf" "$nameservers" "$(grep '^nameserver' "$shapes_out/cni.resolv")"

    # logs. Its ConfigMap; a readOnly hostPath of logs; DirectoryOrCreate
    # (makeDir: 0755) read-write; the kube-api-access volume the
    # ServiceAccount admission plugin adds (TokenVolumeSource: defaultMode
    # 0644), read-only, on tmpfs as secret data is (the projected plugin's
    # wrapped emptyDir of medium Memory). With the pod's fsGroup each
    # plugin's SetUpAt calls volume_linux.go SetVolumeOwnership: every file
    # the group's, mode |= 0440 (changeFilePermission, roMask: the volumes
    # are read-only), so 0644 stays 0644; the token root's (no single
    # runAsUser: no fsUser), made 0600 for the fsGroup (projected.go
    # collectData), then 0640. A hostPath gets no fsGroup.
    local g=$shapes_fs_group
    local gfile="644 0 $g regular file"
    shapes_check "logs: the ConfigMap's files, fsGroup's" "$gfile|$gfile" \
        "$(seen logs files /fluent-bit/etc/fluent-bit.conf)|$(seen logs files /fluent-bit/etc/input-kubernetes.conf)"
    shapes_check "logs: the hostPath of logs, read-only" "$file|ro" \
        "$(seen logs files /var/log/syslog)|$(seen logs mounts /var/log | cut -d' ' -f2)"
    shapes_check "logs: DirectoryOrCreate, on the host and its mount" "755 0 0 directory|rw" \
        "$(stat -c '%a %u %g %F' "$host/fluent-bit/state" 2>&1)|$(seen logs mounts /var/fluent-bit/state | cut -d' ' -f2)"
    shapes_check "logs: the kube-api-access volume, fsGroup's" "$gfile|$gfile|640 0 $g regular file|tmpfs ro" \
        "$(seen logs files $sa/ca.crt)|$(seen logs files $sa/namespace)|$(seen logs files $sa/token)|$(seen logs mounts $sa)"
    shapes_check "logs: KUBERNETES_SERVICE_HOST:PORT, NODE_NAME" "127.0.0.1:$port it-node" \
        "$(env_of logs KUBERNETES_SERVICE_HOST):$(env_of logs KUBERNETES_SERVICE_PORT) $(env_of logs NODE_NAME)"
    shapes_check "logs: capabilities, the runtime's defaults" "$defaults $defaults $defaults" "$(caps_of logs)"
    # Not on the host network: the kubelet's hosts file with the pod's own
    # name (managedHostsFileContent); the node's resolver, as no clusterDNS
    # is configured (dns.go GetPodDNS: ClusterFirst without a cluster DNS
    # IP falls back to Default, with a MissingClusterDNS event).
    shapes_check "logs: /etc/hosts is the kubelet's, with the pod's name" "# Kubernetes-managed hosts file.|1" \
        "$(head -1 "$shapes_out/logs.hosts")|$(grep -cE $'\t'"$(pod_in logging)\$" "$shapes_out/logs.hosts")"
    shapes_check "logs: ClusterFirst without clusterDNS: the node's nameservers" "$nameservers" \
        "$(grep '^nameserver' "$shapes_out/logs.resolv")"

    # exporter. Pod-level runAsUser over the image's named USER: uid 1234
    # with its group and supplementary groups from the image's /etc/passwd
    # and /etc/group (containerd's WithUserID and WithAdditionalGIDs).
    shapes_check "exporter: id" "uid=1234(app) gid=1234(app) groups=1234(app),2345(extra)" \
        "$(cat "$shapes_out/exporter.id")"
    # drop ALL: nothing in the bounding set; allowPrivilegeEscalation false:
    # no_new_privs; readOnlyRootFilesystem; hostPID; the host's /proc and
    # /sys read-only as their mounts say.
    shapes_check "exporter: capabilities dropped" "$none $none $none" "$(caps_of exporter)"
    shapes_check "exporter: NoNewPrivs, Seccomp, the root" "1 0 ro" \
        "$(status_of exporter NoNewPrivs) $(status_of exporter Seccomp) $(cat "$shapes_out/exporter.root")"
    shapes_check "exporter: hostPID (the test's own pid is seen)" host "$(cat "$shapes_out/exporter.pidns")"
    shapes_check "exporter: the host's /proc and /sys read-only" "proc ro|sysfs ro" \
        "$(seen exporter mounts /host/proc)|$(seen exporter mounts /host/sys)"
    # The token of a pod whose containers all run as one runAsUser: mode
    # 0600, that user's (projected.go collectData: FsUser, mode 0600 when
    # fsUser or fsGroup is set), so that it can read it and no one else.
    shapes_check "exporter: the token, its user's" "600 1234 0 regular file|$file" \
        "$(seen exporter files $sa/token)|$(seen exporter files $sa/ca.crt)"
    shapes_check "exporter: hostNetwork /etc/hosts" "$(cat "$work/hosts.hostnet")" "$(cat "$shapes_out/exporter.hosts")"

    # devices. The kubelet's device-plugins directory read-write, with the
    # kubelet's socket in it, and the socket's own hostPath (type Socket,
    # checked before the start); what the plugin writes there is the host's.
    shapes_check "devices: the kubelet's socket, twice" "socket|socket" \
        "$(seen devices files /var/lib/kubelet/device-plugins/kubelet.sock | awk '{print $NF}')|$(seen devices files /kubelet.sock | awk '{print $NF}')"
    shapes_check "devices: its directory read-write, written on the host" "rw|0 0" \
        "$(seen devices mounts /var/lib/kubelet/device-plugins | cut -d' ' -f2)|$(stat -c '%u %g' "$host/device-plugins/.write-check-devices" 2>&1)"
    # Root with every capability dropped: empty sets; no_new_privs.
    shapes_check "devices: id" "$root_id" "$(cat "$shapes_out/devices.id")"
    shapes_check "devices: capabilities dropped, NoNewPrivs" "$none $none $none 1" \
        "$(caps_of devices) $(status_of devices NoNewPrivs)"

    # keyed. envFrom (kubelet_pods.go makeEnvironmentVariables): the
    # Secret's keys (stringData's too), the ConfigMap's under their prefix,
    # a key that is no env var name (1BAD) skipped, env over envFrom;
    # secretKeyRef. A secret volume: its item at defaultMode 0400, read-only,
    # on tmpfs (the secret plugin's emptyDir of medium Memory); the pod's
    # fsGroup's, 0400 | 0440 = 0440 (SetVolumeOwnership, as for logs);
    # automountServiceAccountToken false: no token, the Service's env all the same.
    shapes_check "keyed: envFrom and env" "k-123|debug|from-configmap|explicit|k-123|no 1BAD|127.0.0.1" \
        "$(env_of keyed API_KEY)|$(env_of keyed CFG_LOG_LEVEL)|$(env_of keyed CFG_SITE)|$(env_of keyed SITE)|$(env_of keyed DD_API_KEY)|$(grep -q '^1BAD=' "$shapes_out/keyed.env" || echo no 1BAD)|$(env_of keyed KUBERNETES_SERVICE_HOST)"
    shapes_check "keyed: the secret volume, fsGroup's" "/etc/agent/keys/api_key 440 0 $g regular file|tmpfs ro" \
        "$(cat "$shapes_out/keyed.files")|$(seen keyed mounts /etc/agent/keys)"
    shapes_check "keyed: capabilities, NoNewPrivs, Seccomp" "$defaults $defaults $defaults 0 0" \
        "$(caps_of keyed) $(status_of keyed NoNewPrivs) $(status_of keyed Seccomp)"
    # No Secret value in the agent's log.
    ! grep -q 'k-123' "$agent_log" && ok || fail "a Secret's value is in the agent's log"
}

# The dynamic part (issue 13 §6: "a ConfigMap edit reaches the mounted
# file; a missing Secret makes the pod wait, and its arrival starts it; a
# token is refreshed; an offline reboot mounts the cached ones"), on a sixth
# DaemonSet in the shape of a config-reloading agent (stakater's reloader,
# vector, promtail): its config from a ConfigMap the cluster holds (and one
# of its keys pinned by a subPath mount), its credentials from a Secret the
# cluster does not hold yet, and the service-account token. The test API
# server grants tokens of 5 s (run with --max-token-expiration-seconds 5,
# as kube-apiserver's --service-account-max-token-expiration), so that the
# kubelet's refresh rule (80% of the TTL, in whole seconds: (5*20)/100 = 1 s
# before expiry, at 4 s; with 3 s it would be 0, at expiry) comes within
# the test. The
# container reads its files every 0.1 s and writes what it sees into
# $shapes_out/reloader.now ("conf", "pinned", "secret", "env" (the
# Secret's key as env), "token" lines),
# and a line into reloader.starts at each start.
reloader_script='sa=/var/run/secrets/kubernetes.io/serviceaccount
echo start >> /out/reloader.starts
while :; do
  { echo "conf $(cat /etc/reloader/reloader.conf)"; echo "pinned $(cat /etc/reloader-pinned.conf)"
    echo "secret $(cat /etc/reloader-creds/password)"; echo "env $PASSWORD"; echo "token $(cat $sa/token)"
  } > /out/reloader.now.tmp
  mv /out/reloader.now.tmp /out/reloader.now
  sleep 0.1
done'
write_reloader() {
    shapes_write reloader.yaml <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: reloader, namespace: it}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: reloader, namespace: it, labels: {app: reloader}}
spec:
  selector: {matchLabels: {app: reloader}}
  template:
    metadata: {labels: {app: reloader}}
    spec:
      serviceAccountName: reloader
      terminationGracePeriodSeconds: 2
      containers:
        - name: reloader
          image: $shapes_image
          command:
            - /bin/sh
            - -c
            - |
$(sed 's/^/              /' <<<"$reloader_script")
            - it-marker-$$-reloader
          env:
            - {name: PASSWORD, valueFrom: {secretKeyRef: {name: reloader-creds, key: password}}}
          volumeMounts:
            - {name: config, mountPath: /etc/reloader}
            - {name: config, mountPath: /etc/reloader-pinned.conf, subPath: reloader.conf}
            - {name: creds, mountPath: /etc/reloader-creds, readOnly: true}
            - {name: out, mountPath: /out}
      volumes:
        - {name: config, configMap: {name: reloader-config}}
        - {name: creds, secret: {secretName: reloader-creds}}
        - {name: out, hostPath: {path: $shapes_out}}
EOF
}
shapes_ctl() {  # shapes_ctl METHOD PATH [BODY]: the test API server's /_control
    curl -fsS --max-time 5 --cacert "$work/cert.pem" -X "$1" "https://127.0.0.1:$port/_control/$2" ${3:+-d "$3"}
}
reloader_json() { pods_json | jq -c '.items[] | select(.metadata.name | startswith("reloader-"))'; }
reloader_waiting() { reloader_json | jq -r '.status.containerStatuses[0].state.waiting | "\(.reason // "") \(.message // "")"'; }
reloader_waiting_is() { [[ $(reloader_waiting) == "$1" ]]; }
reloader_restarts() { reloader_json | jq -r '.status.containerStatuses[0].restartCount'; }
reloader_sees() { sed -n "s/^$1 //p" "$shapes_out/reloader.now" 2>/dev/null; }
reloader_sees_is() { [[ $(reloader_sees "$1") == "$2" ]]; }
reloader_token_is_not() { local t; t=$(reloader_sees token); [[ -n $t && $t != "$1" ]]; }
jwt_claims() {  # jwt_claims TOKEN
    cut -d. -f2 <<<"$1" | tr '_-' '/+' | awk '{ while (length($0) % 4) $0 = $0 "="; print }' | base64 -d 2>/dev/null
}
reloader_starts() { if [[ -e $shapes_out/reloader.starts ]]; then wc -l <"$shapes_out/reloader.starts"; else echo 0; fi; }
all_reported() { shapes_reported && test -s "$shapes_out/reloader.now"; }
token_dir_token() { cat "$state/pod-volumes/$1"/kube-api-access-*/token 2>/dev/null; }

check_reloader() {
    # A Secret that does not exist: the container waits and never runs, with
    # the kubelet's reason and message for its secretKeyRef env
    # (kubelet_pods.go makeEnvironmentVariables: the secret manager's
    # NotFound, kuberuntime's CreateContainerConfigError). For its secret
    # volume the kubelet would stop earlier, ContainerCreating with a
    # FailedMount event; the agent shows the same reason for both (a
    # departure docs/runtimes.md states).
    wait_for "reloader waits for its Secret" 10 \
        reloader_waiting_is 'CreateContainerConfigError secret "reloader-creds" not found' ||
        echo "# reloader: $(reloader_waiting)"
    shapes_check "reloader: not started without its Secret" 0 "$(reloader_starts)"
    # Its arrival through the API (the watch-based manager's per-object
    # watch: an ADDED event) starts it, with the Secret's file.
    shapes_ctl PUT secrets/it/reloader-creds "{\"data\": {\"password\": \"$(printf 's3cr3t-1' | base64)\"}}" >/dev/null ||
        fail "PUT secrets/it/reloader-creds"
    wait_for "reloader starts once its Secret exists, and sees it" 10 reloader_sees_is secret s3cr3t-1 || return
    shapes_check "reloader: the Secret's key as env" s3cr3t-1 "$(reloader_sees env)"
    shapes_check "reloader: its ConfigMap and the subPath of it" "level=info|level=info" \
        "$(reloader_sees conf)|$(reloader_sees pinned)"
    local t1
    t1=$(reloader_sees token)
    shapes_check "reloader: a token for it:reloader" system:serviceaccount:it:reloader "$(jwt_claims "$t1" | jq -r .sub)"
    # A ConfigMap edit through the API reaches the mounted file in the
    # running container within seconds (watch-based manager; the atomic
    # writer's ..data swap, atomic_writer.go); a subPath mount keeps the file
    # it was started with (the kubelet does not update subPath mounts).
    shapes_ctl PUT configmaps/it/reloader-config '{"data": {"reloader.conf": "level=debug"}}' >/dev/null ||
        fail "PUT configmaps/it/reloader-config"
    wait_for "the ConfigMap edit reaches the file inside the container" 10 reloader_sees_is conf level=debug
    shapes_check "reloader: the subPath mount is not updated" level=info "$(reloader_sees pinned)"
    # A token refreshed (token_manager.go requiresRefresh: 80% of its 5 s
    # TTL, at 4 s) reaches the running container's file: a token issued later.
    wait_for "the token inside the container is refreshed" 10 reloader_token_is_not "$t1"
    local t2 j1 j2
    t2=$(reloader_sees token)
    # Each jti checked to be a number before the comparison: bash's
    # arithmetic on an empty one is a syntax error that would end run_shapes
    # with the test passing.
    j1=$(jwt_claims "$t1" | jq -r .jti 2>/dev/null)
    j2=$(jwt_claims "$t2" | jq -r .jti 2>/dev/null)
    if [[ $j1 =~ ^[0-9]+$ && $j2 =~ ^[0-9]+$ ]]; then
        shapes_check "reloader: the new token is a later TokenRequest's, for it:reloader" \
            "1 system:serviceaccount:it:reloader" "$((j2 > j1)) $(jwt_claims "$t2" | jq -r .sub)"
    else
        fail "reloader: the tokens' jti are not numbers: '$j1' '$j2'"
    fi
    shapes_check "reloader: the same container throughout (one start, restartCount 0)" "1 0" \
        "$(reloader_starts) $(reloader_restarts)"

    # An offline reboot: the agent stopped, the API server gone, then what a
    # reboot takes (shapes_reboot, the runtime's: every container; then the
    # agent's mounts and its pod volumes, which live on tmpfs); the agent
    # started with the API server still down runs every pod again, and the
    # reloader's container mounts the ConfigMap, the Secret and the token
    # from the store (issue 13 §2/§3: kept in SQLite; upstream keeps no
    # cache across kubelet restarts: a departure).
    local uid
    uid=$(reloader_json | jq -r .metadata.uid)
    stop_agent TERM
    kill "$fake"
    wait "$fake" 2>/dev/null
    fake=
    local last
    last=$(token_dir_token "$uid")
    wait_for "the container sees the agent's last token" 5 reloader_sees_is token "$last"
    shapes_reboot
    unmount_under "$state"
    rm -rf "$state/pod-volumes" "$shapes_out"/*.env "$shapes_out/reloader.now"
    start_agent
    wait_for "after the offline reboot the six pods run again and report" 30 all_reported || { get_pods; return; }
    wait_for "the reloader's new container sees its token" 10 reloader_token_is_not ""
    shapes_check "after the offline reboot: a new container, with the stored ConfigMap, Secret and token" \
        "2|level=debug|level=debug|s3cr3t-1|s3cr3t-1|$last" \
        "$(reloader_starts)|$(reloader_sees conf)|$(reloader_sees pinned)|$(reloader_sees secret)|$(reloader_sees env)|$(reloader_sees token)"
}

run_shapes() {  # run_shapes BUSYBOX_IMAGE_NAME
    shapes_image=$1
    write_shapes
    shapes_ctl PUT configmaps/it/reloader-config '{"data": {"reloader.conf": "level=info"}}' >/dev/null ||
        fail "PUT configmaps/it/reloader-config"
    write_reloader
    start_agent
    check_shapes
    check_reloader
}
