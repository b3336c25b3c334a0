# shellcheck shell=bash
# The caller's settings (below) are assigned before sourcing:
# shellcheck disable=SC2154
# Sourced, not run: builds a private tree of target libraries unpacked from
# Debian packages of another architecture, without touching the system's apt
# or dpkg state. Used by scripts/armhf-sysroot.sh (the armhf target
# libraries) and scripts/arm64-cri-sysroot.sh (gRPC and protobuf for the
# aarch64 cross build).
#
# apt runs with a private state under sysroots/.<name>-apt (its own sources,
# lists, cache and dpkg status), downloads the dependency closure of the
# wanted packages (--download-only) and the closure is unpacked with
# `dpkg-deb -x`. What the target already has elsewhere is declared installed
# in the private status file, so apt neither downloads it nor follows its
# dependencies: the cross toolchain's C library and compiler runtime, and,
# with from_multiarch=1, every package the build machine has installed for
# that architecture through multiarch.
#
# The caller sets, then calls build_deb_sysroot "$@" (--force rebuilds):
#   name            the tree, sysroots/<name>
#   deb_arch        the dpkg architecture (armhf, arm64)
#   triplet         its multiarch triplet (arm-linux-gnueabihf, ...)
#   wanted          array: the packages to download with their closure
#   from_toolchain  array: packages declared installed (the cross toolchain's,
#                   or build machine tools such as pkgconf)
#   recipe_version  bumped when the way the tree is built changes
#   from_multiarch  1: also declare the build machine's :<deb_arch> packages
#   relocate_pc     1: rewrite the .pc files' /usr to the tree's absolute
#                   path, so that pkg-config finds them next to the multiarch
#                   ones without PKG_CONFIG_SYSROOT_DIR (which would prefix
#                   those too)
#   drop_static     1: delete the static libraries (the build links shared)
#
# Idempotent: a stamp records what the tree was built from; rerunning with
# nothing changed does nothing. The tree is unpacked beside and swapped in
# only when complete.

deb_sysroot_log() {
    echo "$name-sysroot: $*"
}

deb_sysroot_die() {
    echo "$name-sysroot: ERROR: $*" >&2
    exit 1
}

# Prints the build machine's installed :<deb_arch> packages as dpkg status
# stanzas (name, version, what they provide; no dependencies: they are
# satisfied on the build machine, and apt must not chase them here).
deb_sysroot_multiarch_status() {
    dpkg-query -W -f='${db:Status-Abbrev}\t${Package}\t${Architecture}\t${Version}\t${Multi-Arch}\t${Provides}\n' |
        awk -F '\t' -v arch="$deb_arch" '
            $1 ~ /^ii/ && $3 == arch {
                print "Package: " $2
                print "Status: install ok installed"
                print "Priority: optional"
                print "Architecture: " arch
                if ($5 != "") print "Multi-Arch: " $5
                print "Version: " $4
                if ($6 != "") print "Provides: " $6
                print "Description: installed on the build machine through multiarch"
                print ""
            }'
}

# Rewrites the system's sources (one-line .list and deb822 .sources) for
# deb_arch: binary entries only, architecture forced to deb_arch, entries
# limited to other architectures dropped. With skip_security=1, security
# suites are dropped as well.
deb_sysroot_write_sources() {
    local skip_security=$1 out="$apt_dir/etc/sources.list.d/$deb_arch.sources" f
    : >"$out"
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f $f ]] || continue
        awk -v skip_security="$skip_security" -v arch="$deb_arch" '
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
                        if (("," substr(o[i], 6) ",") !~ ("," arch ",")) next
                    } else if (o[i] ~ /^signed-by=/) {
                        signed = substr(o[i], 11)
                    }
                }
                print "Types: deb"
                print "URIs: " uri
                print "Suites: " suite
                if (comps != "") print "Components: " comps
                if (signed != "") print "Signed-By: " signed
                print "Architectures: " arch
                print ""
            }' "$f" >>"$out"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        awk -v skip_security="$skip_security" -v arch="$deb_arch" '
            function flush(   i) {
                if (n > 0 && keep && has_deb && suites != "") {
                    for (i = 1; i <= n; i++) print out[i]
                    print "Suites: " suites
                    print "Architectures: " arch
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
                    if ((" " val " ") !~ ("[ \t]" arch "[ \t]")) keep = 0
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
        echo "$name-sysroot: ERROR: no usable Debian source in /etc/apt/sources.list(.d)" >&2
        return 1
    fi
}

build_deb_sysroot() {
    local repo sysroot apt_dir stamp expected_stamp force=0 multiarch_status=""
    repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    sysroot="$repo/sysroots/$name"
    apt_dir="$repo/sysroots/.$name-apt"
    stamp="$sysroot/.daemonlet-sysroot"
    expected_stamp="recipe=$recipe_version wanted=${wanted[*]} from_toolchain=${from_toolchain[*]}"
    if [[ ${from_multiarch:-0} == 1 ]]; then
        # Rebuilt when the build machine's multiarch packages change: what
        # is missing there is what the tree must hold.
        multiarch_status="$(deb_sysroot_multiarch_status)"
        expected_stamp+=" multiarch=$(md5sum <<<"$multiarch_status" | cut -c1-12)"
    fi
    if [[ ${relocate_pc:-0} == 1 ]]; then
        # The .pc files name the tree's absolute path.
        expected_stamp+=" at=$sysroot"
    fi

    if [[ ${1:-} == --force ]]; then
        force=1
    fi
    if [[ $force == 0 && -f $stamp && $(head -n1 "$stamp") == "$expected_stamp" ]]; then
        deb_sysroot_log "$sysroot is up to date"
        return 0
    fi

    local tool
    for tool in apt-get apt-cache dpkg-deb dpkg-query awk md5sum; do
        command -v "$tool" >/dev/null || deb_sysroot_die "$tool not found"
    done

    deb_sysroot_log "building $sysroot"
    mkdir -p "$apt_dir"/{etc/sources.list.d,etc/preferences.d,etc/apt.conf.d,state/lists/partial,cache/archives/partial,log}
    : >"$apt_dir/etc/sources.list"

    local apt_opts=(
        -o "APT::Architecture=$deb_arch"
        -o "APT::Architectures=$deb_arch"
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

    # The private dpkg status starts empty: nothing of the build machine
    # counts as installed for deb_arch.
    : >"$apt_dir/state/status"

    deb_sysroot_write_sources 0
    deb_sysroot_log "apt-get update (private state in $apt_dir)"
    if ! apt-get "${apt_opts[@]}" -q update; then
        echo "$name-sysroot: apt-get update failed, retrying without the security suite" >&2
        deb_sysroot_write_sources 1
        apt-get "${apt_opts[@]}" -q update
        deb_sysroot_log "NOTE: built without security updates (the $deb_arch security index is unusable)"
    fi

    # Declare the toolchain's packages installed, at the versions the index
    # has and with what they provide (libc6-dev provides libc-dev), so that
    # dependencies on them are satisfied without downloading them; and the
    # multiarch ones at the versions the build machine has. A package in
    # both is the multiarch one.
    local pkg
    {
        [[ -z $multiarch_status ]] || printf '%s\n\n' "$multiarch_status"
        for pkg in "${from_toolchain[@]}"; do
            grep -qxF "Package: $pkg" <<<"$multiarch_status" && continue
            apt-cache "${apt_opts[@]}" show --no-all-versions "$pkg" 2>/dev/null |
                awk -v pkg="$pkg" -v arch="$deb_arch" '
                    /^Version:/ { version = $0 }
                    /^Provides:/ { provides = $0 }
                    /^$/ { exit }
                    END {
                        if (version == "") exit
                        print "Package: " pkg
                        print "Status: install ok installed"
                        print "Priority: optional"
                        print "Architecture: " arch
                        print "Multi-Arch: same"
                        print version
                        if (provides != "") print provides
                        print "Description: provided by the cross toolchain or the build machine"
                        print ""
                    }'
        done
    } >"$apt_dir/state/status"

    rm -f "$apt_dir"/cache/archives/*.deb
    deb_sysroot_log "downloading ${wanted[*]} and their dependencies"
    apt-get "${apt_opts[@]}" -q -y --download-only install "${wanted[@]}"

    local debs deb
    shopt -s nullglob
    debs=("$apt_dir"/cache/archives/*.deb)
    shopt -u nullglob
    if ((${#debs[@]} == 0)); then
        deb_sysroot_die "apt downloaded nothing"
    fi
    # apt fetches a declared package again when a dependency pins its exact
    # version (zlib1g-dev on zlib1g): a stanza without dependencies is not
    # the index's version to apt. The build machine has that very version:
    # leave it out.
    local kept=() declared
    declared="$(awk '/^Package:/ { p = $2 } /^Version:/ { print p "=" $2 }' "$apt_dir/state/status")"
    for deb in "${debs[@]}"; do
        if grep -qxF "$(dpkg-deb -f "$deb" Package)=$(dpkg-deb -f "$deb" Version)" <<<"$declared"; then
            deb_sysroot_log "not unpacking $(basename "$deb"): that version is declared installed"
        else
            kept+=("$deb")
        fi
    done
    debs=("${kept[@]}")

    # Unpack into a fresh tree and swap it in only when complete, so that an
    # interrupted run never leaves a half sysroot that looks usable.
    local tmp="$sysroot.tmp"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    for deb in "${debs[@]}"; do
        deb_sysroot_log "unpacking $(basename "$deb")"
        dpkg-deb -x "$deb" "$tmp"
    done

    # Documentation is of no use to a linker.
    rm -rf "$tmp/usr/share/doc" "$tmp/usr/share/man"
    if [[ ${drop_static:-0} == 1 ]]; then
        find "$tmp" -name '*.a' -type f -delete
    fi

    # Absolute symlinks (/usr/lib/x/libfoo.so -> /lib/x/libfoo.so.1) would
    # point into the build machine: make them relative inside the tree. One
    # whose target is not in the tree but is on the build machine (a -dev
    # package here, its library installed through multiarch) keeps pointing
    # there.
    local link target
    while IFS= read -r -d '' link; do
        target="$(readlink "$link")"
        if [[ $target == /* ]] && [[ -e $tmp$target || ! -e $target ]]; then
            ln -sfn --relative "$tmp$target" "$link"
        fi
    done < <(find "$tmp" -type l -print0)

    if [[ ${relocate_pc:-0} == 1 ]]; then
        local pc
        shopt -s nullglob
        for pc in "$tmp/usr/lib/$triplet/pkgconfig"/*.pc "$tmp/usr/share/pkgconfig"/*.pc; do
            # prefix=/usr, libdir=/usr/lib/<triplet>, ...: the tree's paths.
            sed -i -E "s#^([A-Za-z_][A-Za-z0-9_]*)=/usr(/|\$)#\\1=$sysroot/usr\\2#" "$pc"
        done
        shopt -u nullglob
    fi

    {
        echo "$expected_stamp"
        for deb in "${debs[@]}"; do
            basename "$deb"
        done
    } >"$tmp/.daemonlet-sysroot"

    rm -rf "$sysroot"
    mv "$tmp" "$sysroot"
    deb_sysroot_log "done, ${#debs[@]} packages in $sysroot ($(du -sh "$sysroot" | cut -f1))"
}
