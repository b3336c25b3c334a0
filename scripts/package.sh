#!/usr/bin/env bash
# Builds daemonlet's Debian packages into build/packages/, one set per
# architecture:
#   daemonlet        the agent, the shim, the unit, the default configuration
#                    (a conffile), the RBAC manifest and the docs: all a board
#                    needs for runtime.type exec
#   daemonlet-image  the image store's tool (libarchive): runtime.type runc
#   daemonlet-cri    the CRI module (gRPC, protobuf): runtime.type cri
# so that a board without containerd does not pull in gRPC, and one without
# images does not pull in libarchive.
#
# Depends: are computed from the binaries by dpkg-shlibdeps (the libraries
# they link); the libraries the agent loads on demand with dlopen (mbed TLS,
# libmbedtls14, for the API server and kubeconfig's base64; nghttp2,
# libnghttp2-14, for HTTP/2 to the API server; libcurl for
# httpGet and grpc probes and registry pulls; libcrypto for image digests)
# are read from the binary and become Recommends: of the package that holds
# them: a board that never uses them need not install them, and linked they
# would cost every agent their VmRSS (docs/dependencies.md).
#
# usage: scripts/package.sh [--arch ARCH --build-dir DIR]... [--version V] [--out DIR]
#   With no --arch: amd64 (build/release), arm64 (build/aarch64) and armhf
#   (build/armhf); a build directory that is missing is configured from its
#   preset and built. --arch/--build-dir pairs package a build as it is
#   (the systemd test packages the dev build).
#   --version  the package version (default: the project's, from CMake)
#   --out      where the .deb files go (default build/packages)
#   --agent F  package F as /usr/bin/daemonlet instead of the build's agent
#              (the upgrade test's newer build: build/dev/agent/daemonlet-next,
#              the same objects linked with another version); one --arch only
# Environment: DAEMONLET_MAINTAINER  the Maintainer: field
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

declare -a archs=() dirs=()
version=""
agent_override=""
maintainer="${DAEMONLET_MAINTAINER:-daemonlet maintainers <daemonlet@example.org>}"
out="$repo/build/packages"
while (($#)); do
    case $1 in
    --arch) archs+=("$2"); shift 2 ;;
    --build-dir) dirs+=("$(realpath -m "$2")"); shift 2 ;;
    --version) version=$2; shift 2 ;;
    --out) out="$(realpath -m "$2")"; shift 2 ;;
    --agent) agent_override="$(realpath -m "$2")"; shift 2 ;;
    *) echo "package.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
if ((${#archs[@]} == 0)); then
    archs=(amd64 arm64 armhf)
    dirs=("$repo/build/release" "$repo/build/aarch64" "$repo/build/armhf")
    build_missing=1
else
    build_missing=0
    if ((${#archs[@]} != ${#dirs[@]})); then
        echo "package.sh: give a --build-dir for each --arch" >&2
        exit 2
    fi
fi
if [[ -n $agent_override ]] && { ((${#archs[@]} != 1)) || [[ ! -x $agent_override ]]; }; then
    echo "package.sh: --agent needs one --arch and an executable file (got ${agent_override})" >&2
    exit 2
fi
for tool in dpkg-deb dpkg-shlibdeps fakeroot readelf; do
    command -v "$tool" >/dev/null || {
        echo "package.sh: $tool is missing (scripts/setup.sh installs it)" >&2
        exit 1
    }
done

preset_of() { case $1 in amd64) echo release ;; arm64) echo aarch64 ;; armhf) echo armhf ;; esac; }
triplet_of() { case $1 in amd64) echo x86_64-linux-gnu ;; arm64) echo aarch64-linux-gnu ;; armhf) echo arm-linux-gnueabihf ;; esac; }
strip_of() {
    local t
    t="$(triplet_of "$1")"
    if [[ $1 == "$(dpkg --print-architecture)" ]]; then echo strip; else echo "$t-strip"; fi
}

# The shlibs lines (soname -> package and version) of the libraries in a
# private sysroot, which dpkg on this machine does not know: arm64's CRI
# libraries (scripts/arm64-cri-sysroot.sh) and all of armhf's
# (scripts/armhf-sysroot.sh), read from the .deb files the sysroot was
# unpacked from. dpkg-shlibdeps reads them as debian/shlibs.local.
sysroot_shlibs() {
    local deb ctl
    for deb in "$1"/*.deb; do
        [[ -e $deb ]] || continue
        ctl="$(mktemp -d)"
        dpkg-deb -e "$deb" "$ctl"
        [[ -f $ctl/shlibs ]] && grep -v '^#' "$ctl/shlibs"
        rm -rf "$ctl"
    done
}

# package ARCH BUILD_DIR
package() {
    local arch=$1 build=$2 triplet stage ver comp pkg
    triplet="$(triplet_of "$arch")"
    if [[ ! -f $build/CMakeCache.txt ]]; then
        if ((build_missing)); then
            cmake --preset "$(preset_of "$arch")" >/dev/null
        else
            echo "package.sh: $build is not a configured build" >&2
            return 1
        fi
    fi
    if ((build_missing)); then
        local targets=(daemonlet daemonlet-shim daemonlet-image)
        grep -q '^DAEMONLET_CRI:BOOL=ON' "$build/CMakeCache.txt" && targets+=(daemonlet-cri)
        cmake --build "$build" -j2 --target "${targets[@]}"
    fi
    ver="${version:-$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")}"
    stage="$out/stage/$arch"
    rm -rf "$stage"
    mkdir -p "$out"

    local -a shlibdirs=()
    local shlibs_local=""
    case $arch in
    arm64)
        shlibs_local="$(sysroot_shlibs "$repo/sysroots/.arm64-cri-apt/cache/archives")"
        shlibdirs=(-l"$repo/sysroots/arm64-cri/usr/lib/$triplet")
        ;;
    armhf)
        # The C and C++ runtimes come with the cross toolchain: their Debian
        # 12 packages, as the toolchain's are.
        shlibs_local="$(sysroot_shlibs "$repo/sysroots/.armhf-apt/cache/archives")
libc 6 libc6 (>= 2.36)
libm 6 libc6 (>= 2.36)
libgcc_s 1 libgcc-s1 (>= 3.5)
libstdc++ 6 libstdc++6 (>= 12)"
        shlibdirs=(-l"$repo/sysroots/armhf/usr/lib/$triplet" -l"$repo/sysroots/armhf/lib/$triplet"
            -l"/usr/$triplet/lib")
        ;;
    esac

    for comp in agent image cri; do
        pkg=daemonlet
        [[ $comp == agent ]] || pkg="daemonlet-$comp"
        local root="$stage/$pkg"
        mkdir -p "$root/DEBIAN"
        DESTDIR="$root" cmake --install "$build" --prefix /usr --component "$comp" >/dev/null
        if [[ $comp == agent && -n $agent_override ]]; then
            install -m 0755 "$agent_override" "$root/usr/bin/daemonlet"
        fi
        # A component this build does not have (the CRI module of a build
        # without DAEMONLET_CRI): no package.
        if [[ -z $(find "$root" -mindepth 1 -not -path "$root/DEBIAN*" -type f -print -quit) ]]; then
            rm -rf "$root"
            continue
        fi
        # Debug information stays in the build; the package gets what runs.
        local elf
        while IFS= read -r elf; do
            if readelf -h "$elf" >/dev/null 2>&1; then
                "$(strip_of "$arch")" --strip-unneeded --remove-section=.comment --remove-section=.note "$elf"
            fi
        done < <(find "$root" -type f -not -path "$root/DEBIAN/*" \( -perm -u+x -o -name '*.so' \))
        package_docs "$root" "$pkg"
        control "$arch" "$triplet" "$root" "$pkg" "$comp" "$ver" "$shlibs_local" shlibdirs
        maintainer_scripts "$root" "$pkg"
        local deb="$out/${pkg}_${ver}_${arch}.deb"
        fakeroot dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
        echo "$deb"
    done
}

# /usr/share/doc/PKG: copyright and a Debian changelog, as every package
# has; the docs installed there compressed as dh_compress does (Debian
# policy 12.3: gzip -9n when larger than 4 KiB, the copyright never; and
# README.md, which the unit's Documentation= names): about 220 KiB less on
# a board.
package_docs() {
    local root=$1 pkg=$2 doc="$1/usr/share/doc/$2"
    mkdir -p "$doc"
    find "$doc" -type f -size +4k -not -name copyright -not -name README.md -not -name '*.gz' -exec gzip -9n {} +
    cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: daemonlet
Source: the daemonlet repository

Files: *
Copyright: 2026 The daemonlet authors
License: unspecified
 The project has not chosen a license yet.
EOF
    # A native package (no Debian revision): changelog.gz, dated by the
    # last commit so that two builds of one commit are the same.
    printf '%s (%s) unstable; urgency=medium\n\n  * Built by scripts/package.sh.\n\n -- %s  %s\n' \
        "$pkg" "$ver" "$maintainer" "$(date -R -d "@$(git -C "$repo" log -1 --format=%ct 2>/dev/null || date +%s)")" |
        gzip -9n >"$doc/changelog.gz"
}

# The libraries a binary loads with dlopen, by soname: the string literals
# its code passes to dlopen (platform/http/curl_api.cpp, mbedtls_api.cpp,
# nghttp2_api.cpp, image/sha256.cpp), read from the binary.
# Those it links (DT_NEEDED) are Depends: already, and left out.
dlopened() {
    comm -23 <(strings -a "$1" | grep -E '^lib[A-Za-z0-9_+.-]+\.so\.[0-9]+$' | sort -u) \
        <(readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u)
}

# The package that holds a library soname: from the sysroot's shlibs lines
# (SHLIBS), else from dpkg.
package_of_soname() {
    local soname=$1 triplet=$2 shlibs=$3 name ver p
    name="${soname%%.so.*}"
    ver="${soname##*.so.}"
    p="$(awk -v n="$name" -v v="$ver" '$1 == n && $2 == v { print $3; exit }' <<<"$shlibs")"
    [[ -z $p ]] && p="$(dpkg-query -S "*/$triplet/$soname" 2>/dev/null | head -1 | cut -d: -f1)"
    [[ -n $p ]] && echo "$p"
}

control() {
    local arch=$1 triplet=$2 root=$3 pkg=$4 comp=$5 ver=$6
    local shlibs_local=$7
    local -n libdirs=$8
    local -a elfs=()
    local f depends recommends="" suggests="" description
    while IFS= read -r f; do
        readelf -h "$f" >/dev/null 2>&1 && elfs+=("$f")
    done < <(find "$root" -type f -not -path "$root/DEBIAN/*")
    depends=""
    local dynamic=()
    for f in "${elfs[@]}"; do
        readelf -d "$f" 2>/dev/null | grep -q '(NEEDED)' && dynamic+=("$f")
    done
    if ((${#dynamic[@]})); then
        local work
        work="$(mktemp -d)"
        mkdir -p "$work/debian"
        printf 'Source: daemonlet\n\nPackage: %s\nArchitecture: %s\n' "$pkg" "$arch" >"$work/debian/control"
        [[ -n $shlibs_local ]] && echo "$shlibs_local" >"$work/debian/shlibs.local"
        if ! (cd "$work" && DEB_HOST_ARCH="$arch" DEB_HOST_MULTIARCH="$triplet" DEB_HOST_GNU_TYPE="$triplet" \
            dpkg-shlibdeps "${libdirs[@]}" -O "${dynamic[@]}" >"$work/out" 2>"$work/warnings"); then
            cat "$work/warnings" >&2
            echo "package.sh: dpkg-shlibdeps failed for $pkg ($arch)" >&2
            return 1
        fi
        depends="$(sed -n 's/^shlibs:Depends=//p' "$work/out")"
        grep -v 'should already be installed in their package' "$work/warnings" >&2 || true
        rm -rf "$work"
    fi
    local soname p
    local -a recs=()
    for f in "${elfs[@]}"; do
        for soname in $(dlopened "$f"); do
            p="$(package_of_soname "$soname" "$triplet" "$shlibs_local")" || true
            [[ -n $p ]] && recs+=("$p")
        done
    done
    case $comp in
    agent)
        suggests="daemonlet-image, daemonlet-cri"
        description="Kubernetes DaemonSet node agent for edge boards
 daemonlet runs on a board as a systemd service: it takes DaemonSets from a
 local manifest directory and from the Kubernetes API server, decides on the
 board whether its pods should run there, with the DaemonSet controller's
 semantics, and runs them; offline it keeps them running as static pods.
 .
 This package runs pods with runtime.type exec. Install daemonlet-image for
 OCI containers with runc, daemonlet-cri for containerd."
        ;;
    image)
        depends="${depends:+$depends, }daemonlet (= $ver)"
        recs+=(runc)
        # seccompProfile RuntimeDefault under runc reads its profile.
        suggests="golang-github-containers-common"
        description="daemonlet's image store, for runtime.type runc
 The tool daemonlet runs to import and pull OCI images into its local store
 and to prepare each runc container's root file system."
        ;;
    cri)
        depends="${depends:+$depends, }daemonlet (= $ver)"
        suggests="containerd"
        description="daemonlet's CRI runtime module, for runtime.type cri
 The module daemonlet loads to run pods through a CRI runtime (containerd)."
        ;;
    esac
    # What Depends: has already (a dlopen'd libm is libc6's) is not repeated.
    local r
    for r in "${recs[@]}"; do
        [[ ", $depends," == *", $r "* || ", $depends," == *", $r,"* ]] && continue
        recommends+="${recommends:+, }$r"
    done
    {
        echo "Package: $pkg"
        echo "Version: $ver"
        echo "Architecture: $arch"
        echo "Maintainer: $maintainer"
        echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)"
        [[ -n $depends ]] && echo "Depends: $depends"
        [[ -n $recommends ]] && echo "Recommends: $recommends"
        [[ -n $suggests ]] && echo "Suggests: $suggests"
        echo "Section: admin"
        echo "Priority: optional"
        echo "Description: $description"
    } >"$root/DEBIAN/control"
    if [[ -f $root/etc/daemonlet/config.yaml ]]; then
        echo /etc/daemonlet/config.yaml >"$root/DEBIAN/conffiles"
    fi
}

maintainer_scripts() {
    local root=$1 pkg=$2
    [[ $pkg == daemonlet ]] || return 0
    install -m 0755 "$repo/dist/debian/postinst" "$repo/dist/debian/prerm" "$repo/dist/debian/postrm" "$root/DEBIAN/"
    mkdir -p "$root/usr/share/lintian/overrides"
    install -m 0644 "$repo/dist/debian/daemonlet.lintian-overrides" "$root/usr/share/lintian/overrides/daemonlet"
}

for i in "${!archs[@]}"; do
    package "${archs[$i]}" "${dirs[$i]}"
done
