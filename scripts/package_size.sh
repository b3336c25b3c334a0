#!/usr/bin/env bash
# What installing daemonlet's packages costs on a fresh minimal Debian 12
# (debootstrap --variant=minbase: the Priority: required packages and apt,
# with their dependencies): the packages' own Installed-Size plus that of
# every package their Depends: bring in that minbase does not have, read from
# apt's metadata for ARCH (this machine's, or a foreign one that dpkg has
# added: arm64).
#
# usage: scripts/package_size.sh ARCH DEB... [-- EXTRA_PACKAGE...]
#   EXTRA_PACKAGE  a Debian package installed with them (runc)
# Prints one line: "<KiB> KiB (<MiB> MiB): <own> KiB in the packages, <deps> KiB
# in N dependencies: name=KiB ..." and exits 0.
set -euo pipefail
arch=${1:?usage: package_size.sh ARCH DEB... [-- PACKAGE...]}
shift
debs=() extra=()
while (($#)); do
    if [[ $1 == -- ]]; then
        shift
        extra=("$@")
        break
    fi
    debs+=("$1")
    shift
done

# Names in a Depends: field, first alternative of each, without versions.
dep_names() { tr ',' '\n' | sed -E 's/\|.*//; s/\(.*\)//; s/:.*//; s/[[:space:]]//g' | grep -v '^$' || true; }
# The dependency closure of packages (Depends and Pre-Depends), on ARCH.
closure() {
    (($#)) || return 0
    apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
        --no-enhances "${@/%/:$arch}" 2>/dev/null |
        sed -n -E 's/^([^ <][^ ]*)$/\1/p; s/^ +(Pre)?Depends: ([^<][^ ]*)$/\2/p' | sed 's/:.*//' | sort -u
}

# minbase: the required packages and apt, with their closure.
mapfile -t required < <(apt-cache dumpavail | awk -v RS= -v a="$arch" '
    /\nPriority: required/ && ($0 ~ ("\nArchitecture: (" a "|all)")) {
        if (match($0, /^Package: [^\n]+/)) print substr($0, 10, RLENGTH - 9) }' | sort -u)
base="$(closure "${required[@]}" apt)"

own=0
ours=()
wanted=("${extra[@]}")
for deb in "${debs[@]}"; do
    own=$((own + $(dpkg-deb -f "$deb" Installed-Size)))
    ours+=("$(dpkg-deb -f "$deb" Package)")
    mapfile -t -O "${#wanted[@]}" wanted < <(dpkg-deb -f "$deb" Pre-Depends Depends | sed 's/^[A-Za-z-]*: //' | dep_names)
done
# Our own packages depend on each other: they are counted above.
mapfile -t wanted < <(printf '%s\n' "${wanted[@]}" | grep -vxF -f <(printf '%s\n' "${ours[@]}") | sort -u)
deps=0 list="" n=0
for p in $(comm -23 <(closure "${wanted[@]}") <(echo "$base")); do
    size="$(apt-cache show --no-all-versions "$p:$arch" 2>/dev/null | sed -n 's/^Installed-Size: //p' | head -1)"
    [[ -n $size ]] || continue
    deps=$((deps + size))
    n=$((n + 1))
    list+=" $p=$size"
done
total=$((own + deps))
printf '%d KiB (%d.%d MiB): %d KiB in the packages, %d KiB in %d dependencies:%s\n' \
    "$total" $((total / 1024)) $((total % 1024 * 10 / 1024)) "$own" "$deps" "$n" "$list"
