#!/usr/bin/env bash
# daemonlet's Debian package under a real systemd, apt and dpkg: a minimal
# Debian 12 tree booted with systemd-nspawn (as nspawn_boot.sh), in which the
# package made by scripts/package.sh from BUILD_DIR is installed and
# upgraded with `apt-get install ./<file>.deb`, then removed and purged with
# `apt-get remove` and `apt-get purge`, its maintainer scripts run by dpkg
# against the running systemd:
#   - before the install, the tree is made minbase and systemd again: the
#     packages the cached tree has beyond them (daemonlet's libraries and
#     theirs, which nspawn_boot.sh needs) are purged in this run's overlay,
#     and apt's only source is a flat `file:` repository of their .deb files,
#     kept when the tree was made (debian_tree --extras); the container has
#     a private network, so nothing is fetched from anywhere else;
#   - installing resolves the package's dependencies (Depends, Recommends)
#     that minbase lacks from that source, each of them installed again;
#     enables and starts the service with the default configuration (a
#     conffile), and a DaemonSet dropped in runs;
#   - upgrading (apt-get install ./new.deb, a newer build: daemonlet-next, the
#     build's objects linked with the version VERSION+upgrade1, packaged as
#     that version) replaces the binaries and restarts the agent (`daemonlet
#     version` says the new version), and the pod keeps its process: zero
#     restarts; an edited configuration is kept (--force-confold);
#   - removing stops the agent and leaves the configuration and the pods'
#     state (the pod keeps running, as after `systemctl stop`);
#   - purging stops the pod and removes the state and the configuration.
# Every wait is a predicate polled until a deadline.
#
# usage: tests/systemd/nspawn_package.sh [BUILD_DIR]
#   BUILD_DIR  a configured amd64 build with daemonlet, daemonlet-next and
#              daemonlet-shim built (default build/dev; scripts/test.sh's
#              systemd step builds daemonlet-next, else
#              `cmake --build BUILD_DIR --target daemonlet-next`)
# Environment: as nspawn_boot.sh (DAEMONLET_NSPAWN_CACHE, DAEMONLET_DEBIAN_MIRROR).
# Prints "SKIPPED: reason" and exits 0 only when this machine cannot run a
# container; any other problem is a failure.
# The predicates are called indirectly, through wait_for and check.
# shellcheck disable=SC2317
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=tests/systemd/debian_tree.sh
source "$repo/tests/systemd/debian_tree.sh"
need_build "${1:-$repo/build/dev}" agent/daemonlet agent/daemonlet-next platform/daemonlet-shim
cache="${DAEMONLET_NSPAWN_CACHE:-$repo/build/nspawn-rootfs}"

need_tools "scripts/setup.sh installs dpkg-dev and fakeroot" dpkg-deb dpkg-shlibdeps fakeroot
nspawn_run "${BASH_SOURCE[0]}"

# ---- Two builds of the package: the agent, and daemonlet-next (the same
# objects linked with version $version+upgrade1) as the newer version. ----
version="$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")"
for v in "$version" "$version+upgrade1"; do
    agent_arg=()
    [[ $v == "$version" ]] || agent_arg=(--agent "$build/agent/daemonlet-next")
    if ! "$repo/scripts/package.sh" --arch amd64 --build-dir "$build" --version "$v" "${agent_arg[@]}" \
        --out "$run/packages/$v" >"$run/package.log" 2>&1; then
        cat "$run/package.log"
        echo "FAIL: scripts/package.sh --arch amd64 --build-dir $build --version $v ${agent_arg[*]}"
        exit 1
    fi
done
mkdir -p "$root/var/cache/daemonlet-test"
cp "$run/packages/$version/daemonlet_${version}_amd64.deb" "$root/var/cache/daemonlet-test/old.deb"
cp "$run/packages/$version+upgrade1/daemonlet_${version}+upgrade1_amd64.deb" "$root/var/cache/daemonlet-test/new.deb"

# ---- apt's only source: the .deb files of the packages the tree has beyond
# minbase and systemd (nspawn_run's tree keeps them outside the tree, in
# `extras`), a flat repository inside the container. The container has a
# private network (boot_tree), and apt is given nothing else. ----
if [[ ! -s $extras/Packages ]]; then
    echo "FAIL: $extras/Packages is missing: the cached tree was made without --extras"
    exit 1
fi
cp -r "$extras" "$root/var/cache/daemonlet-test/apt"
rm -rf "$root/etc/apt/sources.list.d/"*
echo "deb [trusted=yes] file:/var/cache/daemonlet-test/apt ./" >"$root/etc/apt/sources.list"
# The package's dependencies (Depends, and Recommends, which apt installs
# too) that a minbase tree with systemd lacks: removed before the install,
# and apt must install each of them again.
dep_names() { tr ',' '\n' | sed -E 's/\|.*//; s/\(.*\)//; s/:.*//; s/[[:space:]]//g' | grep -v '^$'; }
mapfile -t missing < <(dpkg-deb -f "$root/var/cache/daemonlet-test/old.deb" Pre-Depends Depends Recommends |
    sed 's/^[A-Za-z-]*: //' | dep_names | LC_ALL=C sort -u | LC_ALL=C comm -12 - "$extras/packages")
mapfile -t beyond <"$extras/packages"

boot_tree "$root" "$run/console.log"
diagnose() {
    echo "---- systemctl status daemonlet (in the container)"
    ct systemctl status --no-pager --lines=0 daemonlet.service
    echo "---- journalctl -u daemonlet (last 40)"
    journal -n 40
    echo "---- dpkg and apt-get (last 20)"
    tail -n 20 "$run/dpkg.log"
}
# dpkg without an fsync per unpacked file (--force-unsafe-io, as Debian's
# build chroots do): the overlay is thrown away after the run.
dpkg_in() { ct dpkg --force-unsafe-io "$@" >>"$run/dpkg.log" 2>&1; }
apt_in() {
    ct DEBIAN_FRONTEND=noninteractive apt-get -y -o Dpkg::Options::=--force-confold \
        -o Dpkg::Options::=--force-unsafe-io "$@" >>"$run/dpkg.log" 2>&1
}
status_of() { ct dpkg-query -W -f "\${db:Status-Abbrev}" "$1" 2>/dev/null; }
all_installed() {
    local p
    for p in "$@"; do [[ $(status_of "$p") == "ii " ]] || return 1; done
}
none_installed() {
    local p
    for p in "$@"; do [[ -z $(status_of "$p") ]] || return 1; done
}
pkg_version() { ct dpkg-query -W -f '${Version} ${db:Status-Abbrev}' daemonlet 2>/dev/null; }
marker="daemonlet-package-$$"
pod_pid() { pgrep -f -- "$marker"; }
pod_alive() { [[ -n $1 && $(pod_pid) == "$1" ]]; }
pod_gone() { [[ -z $(pod_pid) ]]; }
# The pod Running with RESTARTS N, by the installed CLI.
pod_line() { ct daemonlet get pods -A | grep -E "^pkg +pkg-probe-[a-z0-9]+ +1/1 +Running +$1 "; }
enabled() { [[ $(ct systemctl is-enabled daemonlet.service) == enabled ]]; }

if ! wait_booted "$run/console.log"; then
    finish
fi

# 0. The tree as minbase and systemd: what apt will have to install, gone.
check "the package needs libraries a minbase tree lacks (${missing[*]})" test "${#missing[@]}" -gt 0
check "dpkg -P removes the ${#beyond[@]} packages beyond minbase and systemd" dpkg_in -P "${beyond[@]}"
check "...none of them is installed" none_installed "${beyond[@]}"
check "apt-get update reads the file: source only" apt_in update

# 1. Install: enabled and started, with the default configuration.
check "apt-get install ./old.deb installs the package" apt_in install /var/cache/daemonlet-test/old.deb
check "...and, from the file: source, each library it needs: ${missing[*]}" all_installed "${missing[@]}"
check "...version $version installed" test "$(pkg_version)" = "$version ii "
agent_version() { ct daemonlet version | head -1; }
check "...daemonlet version says $version" test "$(agent_version)" = "daemonlet $version"
check "...the service is enabled" enabled
wait_for "...and active (running)" 60 is_running || diagnose
check "...the configuration is a conffile" grep -q '^ /etc/daemonlet/config.yaml ' <<<"$(ct dpkg-query -W -f '${Conffiles}\n' daemonlet)"
manifest_dir="$(sed -n -E 's/^manifestDir:[[:space:]]*([^[:space:]#]+).*/\1/p' "$root/etc/daemonlet/config.yaml")"
state_dir="$(sed -n -E 's/^stateDir:[[:space:]]*([^[:space:]#]+).*/\1/p' "$root/etc/daemonlet/config.yaml")"
write_loop_ds "$root$manifest_dir/pkg-probe.yaml" pkg pkg-probe "$marker"
wait_for "a DaemonSet dropped into $manifest_dir runs" 60 pod_line 0 || diagnose
pod="$(pod_pid)"
check "...one process" test "$(wc -w <<<"$pod")" = 1
main="$(prop MainPID)"

# 2. Upgrade: the binaries replaced, the agent restarted, the pod kept.
echo "# edited by the operator" >>"$root/etc/daemonlet/config.yaml"
check "apt-get install ./new.deb upgrades to $version+upgrade1" apt_in install /var/cache/daemonlet-test/new.deb
check "...version $version+upgrade1 installed" test "$(pkg_version)" = "$version+upgrade1 ii "
check "...daemonlet version says the newer build's $version+upgrade1" \
    test "$(agent_version)" = "daemonlet $version+upgrade1"
restarted_from() { is_running && [[ $(prop MainPID) != "$1" ]]; }
wait_for "...the agent restarted: active (running), a new main process" 60 restarted_from "$main"
check "...the edited configuration kept" grep -qx '# edited by the operator' "$root/etc/daemonlet/config.yaml"
check "...the pod's process unchanged" pod_alive "$pod"
wait_for "...adopted by the new agent with zero restarts" 30 pod_line 0 || diagnose

# 3. Remove: the agent stops; the configuration, the state and the pod stay.
check "apt-get remove removes the package" apt_in remove daemonlet
check "...its status is rc (configuration kept)" test "$(pkg_version)" = "$version+upgrade1 rc "
check "...the service is stopped" bash -c "[[ \$0 != active ]]" "$(prop ActiveState)"
check "...the binary is gone" test ! -e "$root/usr/bin/daemonlet"
check "...the configuration stays" test -f "$root/etc/daemonlet/config.yaml"
check "...the state stays" test -f "$root$state_dir/daemonlet.db"
check "...the pod keeps running" pod_alive "$pod"

# 4. Purge: the pod stopped, the state and the configuration removed.
check "apt-get purge purges the package" apt_in purge daemonlet
check "...the pod is stopped" pod_gone
check "...the state is removed" test ! -e "$root$state_dir"
check "...the configuration is removed" test ! -e "$root/etc/daemonlet"
check "...nothing of it in dpkg" bash -c "[[ -z \$0 ]]" "$(pkg_version)"

((failed > 0)) && diagnose
poweroff_tree
finish
