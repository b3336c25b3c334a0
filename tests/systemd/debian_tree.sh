# shellcheck shell=bash
# What the boot tests share (sourced by nspawn_boot.sh, nspawn_package.sh
# and vm_cgroup2.sh): their preconditions (a build, tools, root, or
# SKIPPED), a cached minimal Debian tree made with debootstrap (for the
# nspawn tests, with the .deb files of what it has beyond minbase and
# systemd kept beside it as an apt source), daemonlet installed into a tree
# as an operator does (`cmake --install`), and the tree booted with
# systemd-nspawn (boot_tree, ct, poweroff_tree, stop_tree; they use
# checks.sh's checks).
#
# Environment: DAEMONLET_DEBIAN_MIRROR, debootstrap's mirror (default: the
# Debian mirror in this machine's apt sources, else deb.debian.org).

skip() { # skip REASON: this machine cannot run the test
    echo "SKIPPED: $*"
    exit 0
}

# need_build DIR FILE...: sets build to DIR, absolute, a configured build in
# which FILE... (relative to it) are built. Exits on failure.
need_build() {
    build="$(cd "$1" 2>/dev/null && pwd)" || {
        echo "FAIL: build directory $1 does not exist (cmake --preset dev && cmake --build build/dev)"
        exit 1
    }
    shift
    local f
    for f in cmake_install.cmake "$@"; do
        if [[ ! -e $build/$f ]]; then
            echo "FAIL: $build/$f is missing: build ${*##*/} in $build first"
            exit 1
        fi
    done
}

# need_tools HINT TOOL...: exits with a failure naming a missing TOOL and HINT.
need_tools() {
    local hint=$1 tool
    shift
    for tool in "$@"; do
        if ! command -v "$tool" >/dev/null; then
            echo "FAIL: $tool is not installed ($hint)"
            exit 1
        fi
    done
}

# as_root WHAT SCRIPT ARG...: returns as root; else runs SCRIPT ARG... again
# under `sudo -n` (keeping the DAEMONLET_* environment) when it can, or skips:
# WHAT needs root.
as_root() {
    [[ $(id -u) -eq 0 ]] && return 0
    local what=$1
    shift
    if sudo -n true 2>/dev/null; then
        local keep
        mapfile -t keep < <(env | grep -E '^DAEMONLET_[A-Z_]+=')
        exec sudo -n env "${keep[@]}" bash "$@"
    fi
    skip "$what needs root, and sudo -n is not available"
}

apt_mirror() { # the main Debian archive among the apt sources, if any
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
        sed -n -E 's/^URIs:[[:space:]]*([^[:space:]]+).*/\1/p;
                   s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]].*/\2/p' |
        grep -E '/debian/?$' | head -1
}

# lock_cache CACHE: one run at a time per cache (its tree and its run
# directories); waits up to 30 minutes for another run. Exits on failure.
lock_cache() {
    mkdir -p "$1"
    exec {cache_lock}>"$1/lock"
    if ! flock -w 1800 "$cache_lock"; then
        echo "FAIL: another run holds $1/lock for more than 30 minutes"
        exit 1
    fi
}

# debian_tree [--extras ROOTS] CACHE SUITE RECIPE PACKAGE...: sets `tree` to
# a minbase tree of SUITE with PACKAGE... (no apt recommends), built by
# debootstrap once and kept in CACHE under a key of everything that makes it
# (RECIPE: bump it when the caller changes the way its tree is made); trees
# of other keys are removed. With --extras, the packages the tree has beyond
# a minbase tree with ROOTS (space-separated) are listed one a line in
# `$extras/packages` and their .deb files kept in `extras` (outside the
# tree) with a `Packages` index: a flat apt repository (`deb [trusted=yes]
# file:DIR ./`) from which a run can install them again without the network.
# Call with the cache locked. Exits on failure.
debian_tree() {
    local roots='' extras_key=()
    if [[ $1 == --extras ]]; then
        roots=$2 extras_key=("extras $2")
        shift 2
    fi
    local cache=$1 suite=$2 recipe=$3
    shift 3
    local packages=("$@") key base mirror old start=$SECONDS
    key="$(printf '%s\n' "recipe $recipe" "$suite" minbase "${packages[@]}" "${extras_key[@]}" | sha256sum | cut -c1-12)"
    base="$cache/$suite-$key"
    tree="$base/tree"
    extras="$base/extras"
    if [[ -e $base/complete ]]; then
        echo "rootfs: reusing $tree"
        return 0
    fi
    for old in "$cache/$suite"-*; do
        [[ -d $old && $old != "$base" ]] || continue
        echo "rootfs: removing $old (another package list)"
        rm -rf --one-file-system "$old"
    done
    rm -rf --one-file-system "$base"
    mkdir -p "$base"
    mirror="${DAEMONLET_DEBIAN_MIRROR:-$(apt_mirror)}"
    mirror="${mirror:-http://deb.debian.org/debian}"
    local include
    include="$(
        IFS=,
        echo "${packages[*]}"
    )"
    echo "rootfs: debootstrap --variant=minbase --include=$include $suite $tree $mirror"
    if ! debootstrap --variant=minbase --include="$include" "$suite" "$tree" "$mirror" >"$base/debootstrap.log" 2>&1; then
        tail -n 30 "$base/debootstrap.log"
        echo "FAIL: debootstrap failed (log: $base/debootstrap.log)"
        exit 1
    fi
    if ((${#extras_key[@]})) && ! keep_extras "$tree" "$extras" "$roots"; then
        echo "FAIL: cannot keep the .deb files of the packages beyond minbase and $roots (in $extras)"
        exit 1
    fi
    # The tree never runs apt: its package cache and lists are dead weight.
    rm -rf "$tree/var/cache/apt/archives/"*.deb "$tree/var/lib/apt/lists/"*
    # debootstrap copies the host's name; without it the machine is named by
    # its boot (nspawn's --machine, the VM's kernel command line), and so is
    # the agent's node.
    rm -f "$tree/etc/hostname"
    touch "$base/complete"
    echo "rootfs: built in $((SECONDS - start))s ($(du -sh "$tree" | cut -f1))"
}

# beyond_minbase STATUS ROOTS: the packages installed in dpkg's STATUS file
# outside the dependency closure (Depends, Pre-Depends; of alternatives, the
# first one installed or provided) of what debootstrap's minbase installs
# (the Essential and Priority: required packages, and apt) and ROOTS.
beyond_minbase() {
    awk -v roots="apt $2" '
        function add(p) { if (!(p in keep)) { keep[p] = 1; queue[++n] = p } }
        function name(d) { sub(/\(.*/, "", d); gsub(/[ \t]/, "", d); sub(/:.*/, "", d); return d }
        BEGIN { RS = ""; FS = "\n" }
        {
            p = ""; ok = 0; root = 0; deps = ""
            for (i = 1; i <= NF; i++) {
                if ($i ~ /^Package: /) p = substr($i, 10)
                else if ($i ~ /^Status: .* installed$/) ok = 1
                else if ($i ~ /^(Pre-)?Depends: /) deps = deps "," substr($i, index($i, ":") + 2)
                else if ($i ~ /^Provides: /) {
                    k = split(substr($i, 11), pv, /,/)
                    for (j = 1; j <= k; j++) provided[name(pv[j])] = p
                }
                else if ($i == "Essential: yes" || $i == "Priority: required") root = 1
            }
            if (!ok) next
            installed[p] = 1; depends[p] = deps
            if (root) add(p)
        }
        END {
            k = split(roots, r, / /)
            for (j = 1; j <= k; j++) if (r[j] in installed) add(r[j])
            for (q = 1; q <= n; q++) {
                k = split(depends[queue[q]], items, /,/)
                for (j = 1; j <= k; j++) {
                    m = split(items[j], alts, /\|/)
                    for (a = 1; a <= m; a++) {
                        d = name(alts[a])
                        if (d in installed) { add(d); break }
                        if (d in provided && provided[d] in installed) { add(provided[d]); break }
                    }
                }
            }
            for (p in installed) if (!(p in keep)) print p
        }' "$1" | LC_ALL=C sort
}

# keep_extras TREE DIR ROOTS: the .deb files debootstrap left in TREE of the
# packages beyond minbase and ROOTS (beyond_minbase) into DIR, with DIR/packages
# (their names) and DIR/Packages (the index apt reads). Fails when one is
# missing.
keep_extras() {
    local tree=$1 dir=$2 p debs
    mkdir -p "$dir"
    beyond_minbase "$tree/var/lib/dpkg/status" "$3" >"$dir/packages" || return 1
    while read -r p; do
        debs=("$tree/var/cache/apt/archives/${p}_"*.deb)
        if [[ ${#debs[@]} -ne 1 || ! -f ${debs[0]} ]]; then
            echo "no single .deb of $p in $tree/var/cache/apt/archives"
            return 1
        fi
        cp "${debs[0]}" "$dir/" || return 1
    done <"$dir/packages"
    (cd "$dir" && dpkg-scanpackages . >Packages 2>scanpackages.log) || return 1
    echo "rootfs: kept the .deb files of $(wc -l <"$dir/packages") packages beyond minbase and $3 in $dir"
}

# install_daemonlet ROOT BUILD LOG: `cmake --install BUILD` into ROOT; sets
# unit_file (the installed daemonlet.service, host path), exec_start and
# config_path (from its ExecStart=) and doc_path (its Documentation=), as
# paths inside ROOT. Exits on failure.
# shellcheck disable=SC2034 # the callers use these
install_daemonlet() {
    local root=$1 build=$2 log=$3
    if ! DESTDIR="$root" cmake --install "$build" >"$log" 2>&1; then
        cat "$log"
        echo "FAIL: cmake --install $build"
        exit 1
    fi
    unit_file="$(find "$root/usr" "$root/lib" -path '*/systemd/system/daemonlet.service' 2>/dev/null | head -1)"
    if [[ -z $unit_file ]]; then
        cat "$log"
        echo "FAIL: cmake --install did not install daemonlet.service into a systemd unit directory"
        exit 1
    fi
    exec_start="$(sed -n -E 's/^ExecStart=([^ ]+).*/\1/p' "$unit_file")"
    config_path="$(sed -n -E 's/^ExecStart=.*--config ([^ ]+).*/\1/p' "$unit_file")"
    doc_path="$(sed -n -E 's|^Documentation=file:(.*)|\1|p' "$unit_file")"
    echo "installed: ${unit_file#"$root"}: ExecStart=$exec_start, --config $config_path"
}

# overlay_root RUN TREE: mounts an overlay of TREE on RUN/root (upper and work
# directories in RUN), so that a run changes nothing in the cached tree. Exits
# on failure.
overlay_root() {
    mkdir -p "$1/upper" "$1/work" "$1/root"
    if ! mount -t overlay overlay -o "lowerdir=$2,upperdir=$1/upper,workdir=$1/work" "$1/root"; then
        echo "FAIL: cannot mount an overlay on $2"
        exit 1
    fi
}

# remove_run RUN: unmounts RUN/root and removes RUN.
remove_run() {
    if mountpoint -q "$1/root"; then
        umount "$1/root" || umount -l "$1/root"
    fi
    rm -rf --one-file-system "$1"
}

# remove_runs CACHE: what runs killed before their cleanup left (call with the
# cache locked: no other run is using them).
remove_runs() {
    local old
    for old in "$1"/run.*; do
        [[ -d $old ]] && remove_run "$old"
    done
}

# boot_tree ROOT CONSOLE_LOG: boots ROOT with systemd-nspawn in the
# background (sets nspawn, its PID); wait_booted then waits for its systemd.
# Commands inside run with ct. stop_tree (from the caller's cleanup) powers
# it off if it still runs.
nspawn=
init=
nspawn_tmpfs=
boot_tree() {
    local root=$1 console=$2
    # systemd-nspawn keeps per-machine state in /run/systemd/nspawn and, on
    # exit, refuses to remove it from anything but a tmpfs ("Attempted to
    # remove disk file system ..., and we can't allow that"). Where /run is
    # not a tmpfs (PID 1 is not systemd, as on this project's CI machine) it
    # gets one here.
    if [[ $(stat -f -c %T /run/systemd/nspawn 2>/dev/null || stat -f -c %T /run) != tmpfs ]]; then
        nspawn_tmpfs=mounted
        [[ -d /run/systemd/nspawn ]] || nspawn_tmpfs=created
        mkdir -p /run/systemd/nspawn
        if ! mount -t tmpfs -o mode=0755 tmpfs /run/systemd/nspawn; then
            [[ $nspawn_tmpfs == created ]] && rmdir /run/systemd/nspawn
            nspawn_tmpfs=
            echo "FAIL: cannot mount a tmpfs on /run/systemd/nspawn"
            exit 1
        fi
    fi
    systemd-nspawn --quiet --register=no --keep-unit --private-network --console=read-only \
        --machine=daemonlet-boot -b -D "$root" >"$console" 2>&1 &
    nspawn=$!
}

# Commands inside the container: its namespaces and root, a clean environment.
ct() {
    nsenter --target "$init" --all env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        SYSTEMD_COLORS=0 SYSTEMD_PAGER= SYSTEMD_LESS= "$@"
}
# daemonlet.service in the container: a property, running, its journal.
prop() { ct systemctl show --property="$1" --value daemonlet.service; }
is_running() { [[ $(prop ActiveState)/$(prop SubState) == active/running ]]; }
journal() { ct journalctl --no-pager -u daemonlet.service "$@"; }
container_init() { # the container's PID 1, a child of systemd-nspawn
    local p
    p="$(pgrep -P "$nspawn" | head -1)"
    [[ -n $p ]] && grep -qE '^NSpid:[[:space:]]+[0-9]+[[:space:]]+1$' "/proc/$p/status" && init=$p
}
booted() {
    local s
    s="$(ct systemctl is-system-running)"
    [[ $s == running || $s == degraded ]]
}
# wait_booted CONSOLE_LOG: the container's init is up and its systemd has
# finished booting (checks); prints the failed units of a degraded boot.
wait_booted() {
    if ! wait_for "systemd-nspawn starts the container's init" 30 container_init; then
        cat "$1"
        return 1
    fi
    wait_for "systemd in the container finishes booting" 120 booted || return 1
    [[ $(ct systemctl is-system-running) == degraded ]] && ct systemctl --failed --no-pager
    return 0
}

# poweroff_tree: SIGRTMIN+4 asks systemd to power off (systemd(1),
# "Signals"); `systemctl poweroff` would first ask logind over D-Bus, which
# the tree does not have. Checks that the container shuts down cleanly.
poweroff_tree() {
    kill -s SIGRTMIN+4 "$init"
    local deadline=$((SECONDS + 60))
    while kill -0 "$nspawn" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    if kill -0 "$nspawn" 2>/dev/null; then
        fail "the container powers off within 60s"
    else
        wait "$nspawn"
        check "the container powers off cleanly" test $? = 0
    fi
}

# stop_tree: for the caller's cleanup: powers off (else kills) a container
# still running, and unmounts the tmpfs boot_tree mounted.
stop_tree() {
    if [[ -n $nspawn ]] && kill -0 "$nspawn" 2>/dev/null; then
        [[ -n $init ]] && kill -s SIGRTMIN+4 "$init" 2>/dev/null
        local deadline=$((SECONDS + 30))
        while kill -0 "$nspawn" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
        if kill -0 "$nspawn" 2>/dev/null; then
            echo "cleanup: the container did not power off within 30s, killing systemd-nspawn"
            kill -KILL "$nspawn" 2>/dev/null
        fi
        wait "$nspawn" 2>/dev/null
    fi
    if [[ -n $nspawn_tmpfs ]]; then
        umount /run/systemd/nspawn && [[ $nspawn_tmpfs == created ]] && rmdir /run/systemd/nspawn
    fi
}

# nspawn_run SCRIPT: what the nspawn tests share before they boot: root
# (SCRIPT runs again under sudo -n), a machine that can run a container
# (else SKIPPED), checks.sh with `finish`, the cached tree (under `cache`)
# locked, and this run's overlay on it: sets run and root, and cleans both
# up at exit.
nspawn_run() {
    as_root "booting a container" "$1" "$build"
    # Root in name only cannot boot a container either: root mapped from a
    # user in a user namespace (as systemd's running_in_userns() tells), root
    # without CAP_SYS_ADMIN (a default Docker container), or namespaces refused.
    if [[ $(awk '{ print $1, $2, $3 }' /proc/self/uid_map) != "0 0 4294967295" ]]; then
        skip "root here is mapped in a user namespace (uid_map $(awk 'NR == 1 { print $1, $2, $3 }' /proc/self/uid_map)), not the host's root"
    fi
    local cap_eff
    cap_eff="$(awk '/^CapEff:/ { print $2 }' /proc/self/status)"
    if ((!((16#$cap_eff >> 21) & 1))); then
        skip "root here lacks CAP_SYS_ADMIN (an unprivileged container?)"
    fi
    if ! unshare --mount --pid --uts --ipc --fork true 2>/dev/null; then
        skip "this machine cannot create mount/PID/UTS/IPC namespaces"
    fi
    need_tools "scripts/setup.sh installs debootstrap, systemd-container and dpkg-dev (build-essential)" \
        debootstrap systemd-nspawn nsenter systemctl mountpoint flock dpkg-scanpackages
    # shellcheck source=tests/systemd/checks.sh
    source "$repo/tests/systemd/checks.sh"
    script_start=$SECONDS

    # The Debian tree, cached under a key of everything that makes it: as
    # few packages as the boot and the dynamically linked agent need:
    # minbase (no apt recommends), systemd as init, and daemonlet's
    # libraries (daemonlet-shim is static; ldd agent/daemonlet).
    # nspawn_package.sh removes daemonlet's libraries in its run and has
    # apt install them again from the .deb files kept in `extras`.
    local packages=(systemd systemd-sysv libuv1 libsqlite3-0 libyaml-0-2 libssl3 libcurl4)
    lock_cache "$cache"
    remove_runs "$cache"
    debian_tree --extras "systemd systemd-sysv" "$cache" bookworm 3 "${packages[@]}"

    # This run: an overlay on the cached tree, so the cache stays clean.
    run="$(mktemp -d "$cache/run.XXXXXX")"
    trap 'stop_tree; remove_run "$run"' EXIT
    trap 'exit 130' INT TERM
    overlay_root "$run" "$tree"
    root="$run/root"
}

# finish: the count of checks, and the exit status.
finish() {
    echo "$passed passed, $failed failed (total $((SECONDS - script_start))s)"
    [[ $failed -eq 0 ]]
    exit
}

# write_loop_ds FILE NAMESPACE NAME MARKER: a DaemonSet whose pod is a shell
# loop with MARKER as its argv[0], for pgrep on the host.
write_loop_ds() {
    cat >"$1" <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: $3, namespace: $2}
spec:
  selector: {matchLabels: {app: $3}}
  template:
    metadata: {labels: {app: $3}}
    spec:
      containers:
        - name: main
          image: none
          command: ["/bin/sh", "-c", "while true; do sleep 1; done", "$4"]
EOF
}
