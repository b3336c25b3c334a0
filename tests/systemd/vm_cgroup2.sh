#!/usr/bin/env bash
# The runc runtime's resource limits on cgroup v2, checked in a virtual
# machine: where the tests run, the memory controller may be bound to a
# cgroup v1 hierarchy (a hybrid host), so only a kernel of our own shows what
# runc writes on the unified hierarchy. A minimal Debian 12 tree with its
# kernel, initramfs-tools, runc and daemonlet's libraries is made once with
# debootstrap (cached); each run installs the dev build into it with
# `cmake --install`, configures runtime type runc with the busybox test image
# in its import directory and three DaemonSets, makes an ext4 disk image of it
# (mkfs.ext4 -d, no loop mount) and boots it with qemu-system-x86_64, with
# KVM where it can run Debian's kernel, else under TCG (see "accelerator"). Debian's systemd mounts the unified hierarchy with every
# controller; a oneshot unit after daemonlet.service runs
# vm_cgroup2_check.sh, which prints "cg2: PASS/FAIL/INFO: ..." on the serial
# console and powers the VM off. What it checks:
#   - /sys/fs/cgroup is cgroup2fs, with the memory and cpu controllers;
#   - a container with limits memory 64Mi, cpu 500m runs; its cgroup's
#     memory.max is 67108864, cpu.max "50000 100000", cpu.weight 20, and the
#     processes in its cgroup.procs are the container's;
#   - a process beyond the limit is OOM-killed inside the cgroup (memory.events
#     oom_kill), and a container whose own process is exits 137 and is
#     reported OOMKilled (daemonlet get pods -o json).
# Then a power cut (issue 15 §2, vm_powercut.sh): in the same boot, while
# the agent rolls DaemonSet cg2/pc back and forth and imports an image,
# sysrq "b" resets the VM without sync (qemu exits: -no-reboot); the same
# disk boots again with daemonlet.powercut=after on the kernel command line
# (no network either), and checks that the agent is READY with every pod
# running again, the acknowledged rollback in force, each acknowledged
# revision listed once and the Event queued for a cluster DaemonSet while the
# first boot's test API server was gone still queued, once, under its name;
# the host checks the database as the cut left it
# (copied before the agent opened it, read out of the image with debugfs)
# with sqlite3 'PRAGMA integrity_check'.
# The console is read after qemu exits, which it does at the VM's power-off
# or reset (or a kernel panic: panic=-1 with -no-reboot), under a deadline
# (timeout) per boot.
#
# usage: tests/systemd/vm_cgroup2.sh [BUILD_DIR]
#   BUILD_DIR  a configured build with daemonlet, daemonlet-shim and
#              daemonlet-image built (default build/dev).
# Environment:
#   DAEMONLET_VM_CACHE       where the Debian tree is kept between runs
#                            (default build/vm-rootfs); rebuilt when the
#                            package list below changes
#   DAEMONLET_DEBIAN_MIRROR  debootstrap's mirror (debian_tree.sh)
#   DAEMONLET_VM_ACCEL       kvm or tcg (default: kvm where it can boot a
#                            stock kernel, else tcg)
#
# Needs root, qemu-system-x86, debootstrap, e2fsprogs (debugfs) and sqlite3
# (scripts/setup.sh installs them), busybox-static for the image, and the mirror the first time; /dev/kvm
# makes it fast. On x86-64 only. Prints "SKIPPED: reason" and exits 0 when
# this machine cannot run the VM (no root, not x86-64); any other problem is
# a failure.
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=tests/systemd/debian_tree.sh
source "$repo/tests/systemd/debian_tree.sh"
script_start=$SECONDS
need_build "${1:-$repo/build/dev}" agent/daemonlet platform/daemonlet-shim platform/daemonlet-image tests/fake_apiserver
cache="${DAEMONLET_VM_CACHE:-$repo/build/vm-rootfs}"

[[ $(uname -m) == x86_64 ]] || skip "the VM is x86-64 with KVM; this machine is $(uname -m)"
as_root "making and booting the VM's disk" "${BASH_SOURCE[0]}" "$build"
# The accelerator: KVM where it runs a stock kernel, else TCG (qemu's own
# emulation: the same kernel and checks, minutes instead of seconds). A /dev/kvm
# of the kvm_pvm module (PVM, pagetable-based virtualisation, which nested
# cloud VMs use in place of hardware virtualisation) runs only kernels built as
# PVM guests (CONFIG_PVM_GUEST, direct boot): Debian's kernel hangs right after
# the BIOS, with no line on the console.
accel="${DAEMONLET_VM_ACCEL:-}"
if [[ -z $accel ]]; then
    if [[ ! -c /dev/kvm ]]; then
        accel=tcg why="no /dev/kvm (no hardware virtualisation, or it is not passed to this machine)"
    elif [[ ! -r /dev/kvm || ! -w /dev/kvm ]]; then
        accel=tcg why="/dev/kvm is not readable and writable here"
    elif [[ -d /sys/module/kvm_pvm ]]; then
        accel=tcg why="/dev/kvm is PVM (module kvm_pvm), which cannot boot Debian's kernel"
    else
        accel=kvm
    fi
fi
case $accel in
    kvm) accel_args=(-enable-kvm) deadline=300 ;;
    tcg)
        echo "NOTE: ${why:-DAEMONLET_VM_ACCEL=tcg}: the VM runs under TCG (software emulation), which takes minutes"
        accel_args=(-accel "tcg,thread=multi") deadline=900
        ;;
    *)
        echo "FAIL: DAEMONLET_VM_ACCEL=$accel: expected kvm or tcg"
        exit 1
        ;;
esac
need_tools "scripts/setup.sh installs debootstrap, qemu-system-x86, e2fsprogs, sqlite3 and openssl" \
    debootstrap qemu-system-x86_64 mkfs.ext4 debugfs sqlite3 flock timeout openssl
[[ -x /bin/busybox ]] || {
    echo "FAIL: /bin/busybox is missing (apt-get install busybox-static): the test image is made from it"
    exit 1
}

# ---- The Debian tree: a bootable system with runc and the agent's libraries. ----
# linux-image-amd64 for the kernel (its modules: virtio_blk, overlay);
# initramfs-tools makes the initrd that loads them (MODULES=most); the
# libraries the installed daemonlet and daemonlet-image link (ldd).
# The power cut's queued Event (vm_powercut.sh): the test API server's
# libraries (libmicrohttpd12, libgnutls30), curl for its /_control endpoints
# and sqlite3 to read the queued Events in the store; mbed TLS, which the
# agent's API server client loads (the package Recommends it: minbase
# installs no recommends).
packages=(systemd systemd-sysv linux-image-amd64 initramfs-tools runc
    libuv1 libsqlite3-0 libyaml-0-2 libssl3 libcurl4 libarchive13 libmbedtls14 libmicrohttpd12 libgnutls30 curl sqlite3)
lock_cache "$cache"
remove_runs "$cache"
debian_tree "$cache" bookworm 1 "${packages[@]}"
kernel="$(find "$tree/boot" -maxdepth 1 -name 'vmlinuz-*' | sort -V | tail -1)"
initrd="$tree/boot/initrd.img-${kernel##*/vmlinuz-}"
if [[ -z $kernel || ! -f $initrd ]]; then
    echo "FAIL: no kernel or initrd in $tree/boot (debootstrap log: ${tree%/tree}/debootstrap.log)"
    exit 1
fi

# ---- This run: an overlay on the cached tree, made into a disk image. ----
run="$(mktemp -d "$cache/run.XXXXXX")"
trap 'remove_run "$run"' EXIT
trap 'exit 130' INT TERM
overlay_root "$run" "$tree"
root="$run/root"
install_daemonlet "$root" "$build" "$run/install.log"

# runtime type runc, the image store's import directory with the test image.
state_dir="$(sed -n -E 's/^stateDir:[[:space:]]*([^[:space:]#]+).*/\1/p' "$root$config_path")"
manifest_dir="$(sed -n -E 's/^manifestDir:[[:space:]]*([^[:space:]#]+).*/\1/p' "$root$config_path")"
import_dir=/var/lib/daemonlet-import
sed -i -E "s|^runtime:.*|runtime: {type: runc, imageImportDir: $import_dir}|" "$root$config_path"
grep -q "^runtime: {type: runc" "$root$config_path" || {
    echo "FAIL: cannot set the runtime in $root$config_path"
    exit 1
}
mkdir -p "$root$import_dir"
if ! "$repo/tests/data/make_busybox_image.sh" "$root$import_dir/busybox.tar" >"$run/image.log" 2>&1; then
    cat "$run/image.log"
    echo "FAIL: tests/data/make_busybox_image.sh"
    exit 1
fi
# write_ds FILE NAME LIMITS SCRIPT: a DaemonSet of the busybox image whose
# script's $0 is a marker the check finds the container by.
write_ds() {
    cat >"$root$manifest_dir/$1" <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: $2, namespace: cg2}
spec:
  selector: {matchLabels: {app: $2}}
  template:
    metadata: {labels: {app: $2}}
    spec:
      containers:
        - name: main
          image: busybox
          imagePullPolicy: Never
          command: ["/bin/sh", "-c", "$4", "cg2-$2-marker"]
          resources: {limits: $3}
EOF
}
write_ds limits.yaml limits '{memory: 64Mi, cpu: 500m}' 'while :; do sleep 1; done'
# dd's 96 MiB buffer is filled from /dev/zero: charged to the cgroup.
write_ds hog.yaml hog '{memory: 64Mi}' \
    'while :; do /bin/busybox dd if=/dev/zero of=/dev/null bs=96M count=1; sleep 1; done'
write_ds oomexit.yaml oomexit '{memory: 64Mi}' 'exec /bin/busybox dd if=/dev/zero of=/dev/null bs=96M count=1'

# The checks, run once the agent is up. The first boot's: the cgroup v2
# checks, then the power cut (which resets the VM; a failure powers it off).
# The second boot's (daemonlet.powercut=after on the kernel command line):
# the database copied aside before the agent opens it, then the checks after
# the cut; the VM powers off when they end.
lib=/usr/local/lib/daemonlet-cg2
install -D -m 0755 -t "$root$lib" "$repo/tests/systemd/vm_cgroup2_check.sh" \
    "$repo/tests/systemd/vm_powercut.sh" "$repo/tests/systemd/checks.sh"
# The first boot's cluster (the power cut's queued Event): the test API
# server on the guest's loopback (port 16443, its certificate made here, token
# s3cret), started before the agent in the first boot only; the agent
# follows it in namespace it. The second boot starts it only once its checks
# found the Events still queued (daemonlet-pc-apiserver-after, started by
# vm_powercut.sh, answering 503 until it holds the cluster's DaemonSet
# again): then the cluster receives them.
install -m 0755 "$build/tests/fake_apiserver" "$root$lib/"
if ! openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$root$lib/key.pem" \
    -out "$root$lib/cert.pem" -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -days 2 >"$run/openssl.log" 2>&1; then
    cat "$run/openssl.log"
    echo "FAIL: openssl req (the test API server's certificate)"
    exit 1
fi
# (As tests/agent/lib.sh write_kubeconfig, whose CA is under $work.)
cat >"$root$lib/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: fake
    cluster: {server: "https://127.0.0.1:16443", certificate-authority: $lib/cert.pem}
users:
  - name: board
    user: {token: s3cret}
contexts:
  - name: fake
    context: {cluster: fake, user: board}
current-context: fake
EOF
chmod 600 "$root$lib/kubeconfig"
printf '%s\n' "apiServer:" "  kubeconfig: $lib/kubeconfig" "  namespaces: [it]" "  requestTimeout: 3s" >>"$root$config_path"
srv_exec="$lib/fake_apiserver --cert $lib/cert.pem --key $lib/key.pem --port 16443 --port-file /run/pc-apiserver.port --token s3cret --bookmark-ms 500"
cat >"$root/etc/systemd/system/daemonlet-pc-apiserver.service" <<EOF
[Unit]
Description=the test API server of the power cut's first boot (tests/systemd/vm_cgroup2.sh)
Before=daemonlet.service
ConditionKernelCommandLine=!daemonlet.powercut=after

[Service]
ExecStart=$srv_exec

[Install]
WantedBy=multi-user.target
EOF
cat >"$root/etc/systemd/system/daemonlet-pc-apiserver-after.service" <<EOF
[Unit]
Description=the test API server after the power cut (tests/systemd/vm_cgroup2.sh)
ConditionKernelCommandLine=daemonlet.powercut=after

[Service]
ExecStart=$srv_exec --fault '{"match": "any", "status": 503, "count": -1}'
EOF
pc_args="$exec_start $config_path $state_dir $manifest_dir $import_dir"
snapshot=/var/lib/daemonlet-powercut/snapshot
# check_unit NAME DESCRIPTION CONDITION EXEC_START...: a oneshot after the
# agent, on the console, that powers the VM off when it ends.
check_unit() {
    local name=$1 description=$2 condition=$3 cmd
    shift 3
    {
        printf '%s\n' "[Unit]" "Description=$description (tests/systemd/vm_cgroup2.sh)" \
            "Wants=daemonlet.service" "After=daemonlet.service daemonlet-pc-snapshot.service" \
            "ConditionKernelCommandLine=$condition" "SuccessAction=poweroff-force" \
            "FailureAction=poweroff-force" "" "[Service]" "Type=oneshot"
        for cmd in "$@"; do echo "ExecStart=$cmd"; done
        printf '%s\n' "StandardOutput=journal+console" "StandardError=journal+console" \
            "TimeoutStartSec=600s" "" "[Install]" "WantedBy=multi-user.target"
    } >"$root/etc/systemd/system/$name.service"
}
check_unit daemonlet-cg2-check "daemonlet cgroup v2 checks and power cut" '!daemonlet.powercut=after' \
    "$lib/vm_cgroup2_check.sh $exec_start $config_path $state_dir" "$lib/vm_powercut.sh cut $pc_args"
check_unit daemonlet-pc-after "daemonlet after the power cut" daemonlet.powercut=after \
    "$lib/vm_powercut.sh after $pc_args"
cat >"$root/etc/systemd/system/daemonlet-pc-snapshot.service" <<EOF
[Unit]
Description=the database as the power cut left it (tests/systemd/vm_cgroup2.sh)
Before=daemonlet.service
ConditionKernelCommandLine=daemonlet.powercut=after

[Service]
Type=oneshot
ExecStart=/bin/sh -c 'mkdir -p $snapshot && cp -a $state_dir/daemonlet.db $snapshot/ && { cp -a $state_dir/daemonlet.db-wal $snapshot/ || true; } && sync'

[Install]
WantedBy=multi-user.target
EOF
units=(daemonlet.service daemonlet-cg2-check.service daemonlet-pc-snapshot.service daemonlet-pc-after.service
    daemonlet-pc-apiserver.service)
if ! systemctl --root="$root" enable "${units[@]}" >"$run/enable.log" 2>&1; then
    cat "$run/enable.log"
    echo "FAIL: systemctl --root enable ${units[*]}"
    exit 1
fi
echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" >"$root/etc/fstab"

# The disk: an ext4 image of the overlay, sparse, with room for the run.
image_start=$SECONDS
size_mib=$(($(du -sm "$root" | cut -f1) + 512))
truncate -s "${size_mib}M" "$run/disk.img"
if ! mkfs.ext4 -q -F -L daemonlet-vm -d "$root" "$run/disk.img" >"$run/mkfs.log" 2>&1; then
    cat "$run/mkfs.log"
    echo "FAIL: mkfs.ext4 -d $root"
    exit 1
fi
echo "disk: ${size_mib} MiB ext4 image made in $((SECONDS - image_start))s"

# ---- Boot, cut the power, boot again. ----
# boot NAME EXTRA_CMDLINE: boots the disk until qemu exits (the VM's
# power-off, its reset with -no-reboot, or a kernel panic: panic=-1), under
# the deadline; adds the check's lines to passed and failed; sets results,
# qemu_rc and boot_secs. The check's lines reach the console through
# journald, after a prefix ("[   76.1] sh[218]: "); the console is CRLF.
boot() {
    local start=$SECONDS console="$run/console-$1.log"
    timeout --kill-after=10 "$deadline" qemu-system-x86_64 "${accel_args[@]}" -smp 2 -m 512 \
        -nographic -no-reboot -nic none \
        -drive "file=$run/disk.img,format=raw,if=virtio" \
        -kernel "$kernel" -initrd "$initrd" \
        -append "root=/dev/vda rw console=ttyS0 panic=-1 noresume systemd.hostname=cg2-vm systemd.mask=serial-getty@ttyS0.service$2" \
        </dev/null >"$console" 2>&1
    qemu_rc=$?
    cp "$console" "$cache/last-console-$1.log" # kept for a look after the run
    boot_secs=$((SECONDS - start))
    results="$(tr -d '\r' <"$console" | grep -aoE 'cg2: (PASS|FAIL|INFO|DONE): .*')"
    [[ -n $results ]] && echo "$results"
    passed=$((passed + $(grep -c '^cg2: PASS: ' <<<"$results")))
    failed=$((failed + $(grep -c '^cg2: FAIL: ' <<<"$results")))
    if ! grep -q '^cg2: DONE: ' <<<"$results"; then
        echo "---- console of the $1 boot (last 60 lines)"
        tr -d '\r' <"$console" | tail -n 60
        if [[ $qemu_rc == 124 || $qemu_rc == 137 ]]; then
            echo "FAIL: the VM ($1 boot) did not finish its checks within ${deadline}s ($accel)"
        else
            echo "FAIL: the VM ($1 boot) stopped (qemu exit status $qemu_rc) before its checks finished"
        fi
        failed=$((failed + 1))
        return 1
    elif [[ $qemu_rc != 0 ]]; then
        echo "FAIL: qemu exited with status $qemu_rc ($1 boot)"
        failed=$((failed + 1))
        return 1
    fi
}
passed=0 failed=0
echo "boot ($accel): $(basename "$kernel"), $(basename "$initrd"); consoles kept in $cache/last-console-*.log"
if boot first ""; then
    first_secs=$boot_secs
    boot after " daemonlet.powercut=after"
    echo "figures: first boot, checks and power cut ${first_secs}s; second boot, checks and power-off ${boot_secs}s ($accel)"
    # The database as the cut left it (copied before the agent opened it),
    # read out of the powered-off disk without mounting it.
    mkdir -p "$run/snapshot"
    for f in daemonlet.db daemonlet.db-wal; do
        debugfs -R "dump /var/lib/daemonlet-powercut/snapshot/$f $run/snapshot/$f" "$run/disk.img" >/dev/null 2>&1
    done
    if [[ ! -s $run/snapshot/daemonlet.db ]]; then
        echo "FAIL: powercut: no copy of the database as the cut left it on the disk"
        failed=$((failed + 1))
    else
        integrity="$(sqlite3 "$run/snapshot/daemonlet.db" 'PRAGMA integrity_check' 2>&1)"
        if [[ $integrity == ok ]]; then
            echo "PASS: powercut: the database as the cut left it passes PRAGMA integrity_check"
            passed=$((passed + 1))
        else
            echo "FAIL: powercut: PRAGMA integrity_check of the database as the cut left it: $integrity"
            failed=$((failed + 1))
        fi
    fi
fi
echo "$passed passed, $failed failed (total $((SECONDS - script_start))s)"
((failed == 0 && passed > 0))
