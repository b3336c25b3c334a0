#!/usr/bin/env bash
# Builds the armhf sysroot under sysroots/armhf: daemonlet's target libraries
# (libuv, sqlite3, systemd, yaml, CppUTest, nlohmann-json) and the runtime
# libraries they need to link and run, unpacked from Debian's :armhf packages.
#
# Why not multiarch, as for arm64: adding armhf to dpkg's architectures makes
# the system's `apt-get update` fail on the mirror's broken armhf security
# index. So this script never touches the system's apt or dpkg state. It runs
# apt with a private state under sysroots/.armhf-apt (its own sources, lists,
# cache and an empty dpkg status), downloads the dependency closure and
# unpacks it with `dpkg -x`. The C library and the compiler runtime come from
# the cross toolchain (crossbuild-essential-armhf): they are declared
# installed in the private status file, so apt neither downloads them nor
# follows their dependencies.
#
# Idempotent: a stamp records what the sysroot was built from; rerunning with
# nothing changed does nothing. Pass --force to rebuild.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sysroot="$repo/sysroots/armhf"
apt_dir="$repo/sysroots/.armhf-apt"

# What daemonlet links against; apt adds the closure (libuv1, libsqlite3-0,
# libsystemd0, libcap2, libgcrypt20, libgpg-error0, liblz4-1, liblzma5,
# libzstd1, libyaml-0-2, libcurl4, libssl3, libarchive13, ...).
wanted=(libuv1-dev libsqlite3-dev libsystemd-dev libyaml-dev libcpputest-dev nlohmann-json3-dev libcurl4-openssl-dev libssl-dev libarchive-dev)
# Provided by the cross toolchain in /usr/arm-linux-gnueabihf.
from_toolchain=(libc6 libc6-dev libgcc-s1 libstdc++6 gcc-12-base linux-libc-dev libcrypt1 libcrypt-dev)
# Bump when the way the sysroot is built changes, so that old sysroots are rebuilt.
recipe_version=2

stamp="$sysroot/.daemonlet-sysroot"
expected_stamp="recipe=$recipe_version wanted=${wanted[*]} from_toolchain=${from_toolchain[*]}"

force=0
if [[ ${1:-} == --force ]]; then
    force=1
fi
if [[ $force == 0 && -f $stamp && $(head -n1 "$stamp") == "$expected_stamp" ]]; then
    echo "armhf-sysroot: $sysroot is up to date"
    exit 0
fi

for tool in apt-get apt-cache dpkg-deb awk; do
    command -v "$tool" >/dev/null || {
        echo "armhf-sysroot: ERROR: $tool not found" >&2
        exit 1
    }
done

echo "armhf-sysroot: building $sysroot"
mkdir -p "$apt_dir"/{etc/sources.list.d,etc/preferences.d,etc/apt.conf.d,state/lists/partial,cache/archives/partial,log}
: >"$apt_dir/etc/sources.list"

# Rewrites the system's sources (one-line .list and deb822 .sources) for
# armhf: binary entries only, architecture forced to armhf, entries limited
# to other architectures dropped. With skip_security=1, security suites are
# dropped as well.
write_sources() {
    local skip_security=$1 out="$apt_dir/etc/sources.list.d/armhf.sources" f
    : >"$out"
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f $f ]] || continue
        awk -v skip_security="$skip_security" '
            /^[ \t]*deb[ \t]/ {
                line = $0
                sub(/^[ \t]*deb[ \t]+/, "", line)
                opts = ""
                if (line ~ /^\[/) {
                    end = index(line, "]")
                    opts = substr(line, 2, end - 2)
                    line = substr(line, end + 1)
                }
                sub(/[ \t]*#.*$/, "", line)
                n = split(line, w, /[ \t]+/)
                # split() on a leading blank yields an empty first word.
                k = 0
                for (i = 1; i <= n; i++) if (w[i] != "") word[++k] = w[i]
                if (k < 2) next
                uri = word[1]; suite = word[2]; comps = ""
                for (i = 3; i <= k; i++) comps = comps (comps == "" ? "" : " ") word[i]
                if (skip_security == 1 && (suite ~ /-security$/ || suite ~ /\/updates$/)) next
                signed = ""
                m = split(opts, o, /[ \t]+/)
                for (i = 1; i <= m; i++) {
                    if (o[i] ~ /^arch=/) {
                        if (("," substr(o[i], 6) ",") !~ /,armhf,/) next
                    } else if (o[i] ~ /^signed-by=/) {
                        signed = substr(o[i], 11)
                    }
                }
                print "Types: deb"
                print "URIs: " uri
                print "Suites: " suite
                if (comps != "") print "Components: " comps
                if (signed != "") print "Signed-By: " signed
                print "Architectures: armhf"
                print ""
            }' "$f" >>"$out"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        awk -v skip_security="$skip_security" '
            function flush(   i) {
                if (n > 0 && keep && has_deb && suites != "") {
                    for (i = 1; i <= n; i++) print out[i]
                    print "Suites: " suites
                    print "Architectures: armhf"
                    print ""
                }
                n = 0; keep = 1; has_deb = 0; suites = ""; dropping = 0
            }
            BEGIN { n = 0; keep = 1; has_deb = 0; suites = ""; dropping = 0 }
            /^[ \t]*$/ { flush(); next }
            /^#/ { next }
            /^[ \t]/ { if (!dropping) out[++n] = $0; next }
            {
                key = tolower($0); sub(/:.*/, "", key)
                val = $0; sub(/^[^:]*:[ \t]*/, "", val)
                dropping = 0
                if (key == "types") {
                    if ((" " val " ") ~ /[ \t]deb[ \t]/) has_deb = 1
                    out[++n] = "Types: deb"
                } else if (key == "architectures") {
                    if ((" " val " ") !~ /[ \t]armhf[ \t]/) keep = 0
                    dropping = 1
                } else if (key == "enabled") {
                    if (tolower(val) ~ /^no/) keep = 0
                    dropping = 1
                } else if (key == "suites") {
                    c = split(val, s, /[ \t]+/)
                    for (i = 1; i <= c; i++) {
                        if (s[i] == "") continue
                        if (skip_security == 1 && (s[i] ~ /-security$/ || s[i] ~ /\/updates$/)) continue
                        suites = suites (suites == "" ? "" : " ") s[i]
                    }
                    dropping = 1
                } else {
                    out[++n] = $0
                }
            }
            END { flush() }' "$f" >>"$out"
    done
    if ! grep -q '^URIs:' "$out"; then
        echo "armhf-sysroot: ERROR: no usable Debian source in /etc/apt/sources.list(.d)" >&2
        return 1
    fi
}

apt_opts=(
    -o "APT::Architecture=armhf"
    -o "APT::Architectures=armhf"
    -o "Dir::Etc::SourceList=$apt_dir/etc/sources.list"
    -o "Dir::Etc::SourceParts=$apt_dir/etc/sources.list.d"
    -o "Dir::Etc::Preferences=$apt_dir/etc/preferences"
    -o "Dir::Etc::PreferencesParts=$apt_dir/etc/preferences.d"
    -o "Dir::State=$apt_dir/state"
    -o "Dir::State::status=$apt_dir/state/status"
    -o "Dir::Cache=$apt_dir/cache"
    -o "Dir::Cache::pkgcache="
    -o "Dir::Cache::srcpkgcache="
    -o "Dir::Log=$apt_dir/log"
    -o "Debug::NoLocking=1"
    # The private directories are not writable by apt's _apt download user.
    -o "APT::Sandbox::User=root"
    -o "Acquire::Languages=none"
    -o "APT::Install-Recommends=false"
    -o "APT::Install-Suggests=false"
)

# The private dpkg status starts empty: nothing of the build machine counts as
# installed for armhf.
: >"$apt_dir/state/status"

write_sources 0
echo "armhf-sysroot: apt-get update (private state in $apt_dir)"
if ! apt-get "${apt_opts[@]}" -q update; then
    echo "armhf-sysroot: apt-get update failed, retrying without the security suite" >&2
    write_sources 1
    apt-get "${apt_opts[@]}" -q update
    echo "armhf-sysroot: NOTE: built without security updates (the armhf security index is unusable)"
fi

# Declare the toolchain's packages installed, at the versions the index has
# and with what they provide (libc6-dev provides libc-dev), so that
# dependencies on them are satisfied without downloading them.
{
    for pkg in "${from_toolchain[@]}"; do
        apt-cache "${apt_opts[@]}" show --no-all-versions "$pkg" 2>/dev/null |
            awk -v pkg="$pkg" '
                /^Version:/ { version = $0 }
                /^Provides:/ { provides = $0 }
                /^$/ { exit }
                END {
                    if (version == "") exit
                    print "Package: " pkg
                    print "Status: install ok installed"
                    print "Priority: optional"
                    print "Architecture: armhf"
                    print "Multi-Arch: same"
                    print version
                    if (provides != "") print provides
                    print "Description: provided by crossbuild-essential-armhf"
                    print ""
                }'
    done
} >"$apt_dir/state/status"

rm -f "$apt_dir"/cache/archives/*.deb
echo "armhf-sysroot: downloading ${wanted[*]} and their dependencies"
apt-get "${apt_opts[@]}" -q -y --download-only install "${wanted[@]}"

shopt -s nullglob
debs=("$apt_dir"/cache/archives/*.deb)
if ((${#debs[@]} == 0)); then
    echo "armhf-sysroot: ERROR: apt downloaded nothing" >&2
    exit 1
fi

# Unpack into a fresh tree and swap it in only when complete, so that an
# interrupted run never leaves a half sysroot that looks usable.
tmp="$sysroot.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
for deb in "${debs[@]}"; do
    echo "armhf-sysroot: unpacking $(basename "$deb")"
    dpkg-deb -x "$deb" "$tmp"
done

# Documentation is of no use to a linker.
rm -rf "$tmp/usr/share/doc" "$tmp/usr/share/man"

# Absolute symlinks (/usr/lib/x/libfoo.so -> /lib/x/libfoo.so.1) would point
# into the build machine: make them relative inside the sysroot.
while IFS= read -r -d '' link; do
    target="$(readlink "$link")"
    if [[ $target == /* ]]; then
        ln -sfn --relative "$tmp$target" "$link"
    fi
done < <(find "$tmp" -type l -print0)

{
    echo "$expected_stamp"
    for deb in "${debs[@]}"; do
        basename "$deb"
    done
} >"$tmp/.daemonlet-sysroot"

rm -rf "$sysroot"
mv "$tmp" "$sysroot"
echo "armhf-sysroot: done, ${#debs[@]} packages in $sysroot"
