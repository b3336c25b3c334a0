#!/usr/bin/env bash
# Installs every build and test dependency of daemonlet from Debian 12
# packages: the host toolchain and libraries, clang for libFuzzer, qemu and the
# ARM cross compilers, and the arm64 target libraries through multiarch.
#
# Idempotent and quick when nothing is missing: dpkg-query decides what to
# install, and `apt-get update` runs only when something is.
#
# armhf is deliberately NOT added to dpkg's architectures: the mirror's armhf
# security index is broken and would make every later `apt-get update` fail.
# The armhf target libraries go into a private sysroot instead
# (scripts/armhf-sysroot.sh), and a failure there only costs the armhf build.
# gRPC and protobuf for arm64 cannot be multiarch packages either (below):
# they go into sysroots/arm64-cri (scripts/arm64-cri-sysroot.sh). A failure
# there does not stop setup; the aarch64 step of scripts/test.sh then fails
# saying that the CRI module was not built.
#
# usage: scripts/setup.sh [--demo]
#   --demo  only what README's run command (scripts/demo.sh) needs: the host
#           compiler, the agent's libraries, runc and busybox for its real
#           container, and the test API server's libraries; no cross
#           toolchains, emulators, clang, sysroots or boot tools.
# Environment: DAEMONLET_SKIP_ARMHF=1 skips the armhf sysroot.
set -euo pipefail
demo=0
[[ ${1:-} == --demo ]] && demo=1

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export DEBIAN_FRONTEND=noninteractive

# What README's run command needs (scripts/demo.sh): the build, the agent's
# libraries, a real container, and the test API server it follows.
demo_packages=(
    build-essential cmake ninja-build pkg-config git
    libuv1-dev libsqlite3-dev libsystemd-dev libcpputest-dev nlohmann-json3-dev libyaml-dev
    libcurl4-openssl-dev  # httpGet and grpc probes, registry pulls (libcurl.so.4 is loaded on first use)
    libmbedtls-dev  # the API server client's TLS and kubeconfig's base64 (libmbedtls.so.14 is loaded on first use)
    libnghttp2-dev  # the API server client's HTTP/2 (libnghttp2.so.14 is loaded on first use)
    libssl-dev  # libcrypto's sha256 for daemonlet-image (libcrypto.so.3 is loaded on first use)
    libarchive-dev  # the image store: image archives and layer tarballs (tar, gzip, zstd)
    # libarchive.a is linked statically (platform/CMakeLists.txt): the
    # libraries it calls, which libarchive-dev does not depend on.
    libacl1-dev libzstd-dev liblz4-dev liblzma-dev libbz2-dev zlib1g-dev nettle-dev
    busybox-static  # tests/data/make_busybox_image.sh builds the test image from it
    runc  # the OCI runtime of issue 5; tests/platform/runc/test_runc.cpp runs a real container with it
    # The test Kubernetes API server (tests/apiserver) and its certificates.
    libmicrohttpd-dev libgnutls28-dev openssl curl
    # The metrics endpoint's HTTP parser: llhttp's C sources, compiled into
    # the agent for each architecture (platform/CMakeLists.txt).
    node-llhttp
)
# And what the test command needs besides.
host_packages=(
    "${demo_packages[@]}"
    golang-github-containers-common  # /usr/share/containers/seccomp.json: runc's seccompProfile RuntimeDefault
    # Registry pulls (tests/agent/test_registry.sh): a real registry on loopback
    # (TLS, htpasswd auth; htpasswd -B from apache2-utils), the test image
    # pushed with skopeo. Host tools only: the test skips under an emulator.
    docker-registry skopeo apache2-utils
    # runtime.type cri (DAEMONLET_CRI): the CRI client's gRPC and protobuf, and
    # protoc with its gRPC plugin to compile platform/cri/api.proto.
    libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
    # tests/agent/test_cri.sh and bench/bench_cri.sh: their own containerd
    # (with ctr), reaped under tini, loopback CNI for its configuration;
    # test_cri_cni.sh: the bridge and host-local plugins, and iproute2's
    # `ip netns` for the network namespace its containerd and agent run in.
    containerd tini containernetworking-plugins iproute2
    clang libclang-rt-14-dev clang-format
    qemu-user crossbuild-essential-arm64 crossbuild-essential-armhf
    systemd  # systemd-analyze verify checks the unit file
    debootstrap systemd-container  # the systemd step boots a Debian 12 tree with systemd-nspawn
    fakeroot lintian  # scripts/package.sh builds the .deb packages (dpkg-dev: build-essential); lintian checks them
    qemu-system-x86  # the cgroup2 step boots a Debian 12 VM (KVM) to check cgroup v2 limits
    # The cluster test: JSON from bash, and an HTTP/2 proxy in front of the test API server.
    jq nghttp2-proxy
    # tests/agent/test_clock.sh runs the agent under libfaketime (a clock
    # that boots at 1970 and steps); test_storm.sh checks every database
    # with the sqlite3 shell's PRAGMA integrity_check, as the cgroup2 step
    # does the database its VM's power cut left.
    faketime sqlite3
    # tests/agent/test_metrics.sh scrapes the agent with a real Prometheus
    # (and promtool check metrics).
    prometheus
)
# nlohmann-json3-dev is header-only and Architecture: all, so the host copy
# serves the arm64 build too. libstdc++6:arm64 completes the multiarch C and
# C++ runtime that the arm64 tests run on under qemu (toolchains/run-aarch64.sh).
# Not libgrpc++-dev:arm64 nor libprotobuf-dev:arm64: libgrpc-dev:arm64
# depends on pkgconf:arm64, which is not Multi-Arch: foreign, and installing
# it removes the host's build-essential, gcc, g++ and
# crossbuild-essential-arm64 (apt-get install -s shows it). The aarch64
# cross build takes them from sysroots/arm64-cri instead, which holds what
# their closure needs beyond this list (scripts/arm64-cri-sysroot.sh):
# a package added here is then no longer downloaded there.
arm64_packages=(
    libuv1-dev:arm64 libsqlite3-dev:arm64 libsystemd-dev:arm64 libcpputest-dev:arm64 libyaml-dev:arm64
    libcurl4-openssl-dev:arm64 libmbedtls-dev:arm64 libnghttp2-dev:arm64 libssl-dev:arm64 libarchive-dev:arm64
    libacl1-dev:arm64 libzstd-dev:arm64 liblz4-dev:arm64 liblzma-dev:arm64 libbz2-dev:arm64 zlib1g-dev:arm64
    nettle-dev:arm64
    libstdc++6:arm64
)

sudo=()
if [[ $(id -u) -ne 0 ]]; then
    sudo=(sudo)
fi

# Prints the packages of "$@" that dpkg does not report as fully installed.
# A name without an architecture means the native one, or "all". (A bare
# name is ambiguous to dpkg-query once a Multi-Arch: same package is
# installed for two architectures, so compare against one full listing.)
missing_packages() {
    local native installed pkg
    native="$(dpkg --print-architecture)"
    installed="$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}:${Architecture}\n' |
        awk '$1 ~ /^[ih]i$/ { print $2 }')"
    for pkg in "$@"; do
        if [[ $pkg == *:* ]]; then
            grep -qxF "$pkg" <<<"$installed" || echo "$pkg"
        else
            grep -qxF -e "$pkg:$native" -e "$pkg:all" <<<"$installed" || echo "$pkg"
        fi
    done
}

if ((demo)); then
    mapfile -t missing < <(missing_packages "${demo_packages[@]}")
    if ((${#missing[@]} > 0)); then
        echo "setup --demo: installing ${missing[*]}"
        "${sudo[@]}" apt-get update
        "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
    else
        echo "setup --demo: all ${#demo_packages[@]} packages are installed"
    fi
    exit 0
fi

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "setup: adding arm64 to dpkg's architectures (multiarch target libraries)"
    "${sudo[@]}" dpkg --add-architecture arm64
fi

mapfile -t missing < <(missing_packages "${host_packages[@]}" "${arm64_packages[@]}")
if ((${#missing[@]} > 0)); then
    echo "setup: installing ${missing[*]}"
    "${sudo[@]}" apt-get update
    "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
    mapfile -t still_missing < <(missing_packages "${host_packages[@]}" "${arm64_packages[@]}")
    if ((${#still_missing[@]} > 0)); then
        echo "setup: ERROR: still not installed: ${still_missing[*]}" >&2
        exit 1
    fi
else
    echo "setup: all ${#host_packages[@]} host and ${#arm64_packages[@]} arm64 packages are installed"
fi

# tests/agent/test_node_status.sh checks the registered Node with a real
# kubectl. The machine's own (a newer kubectl package) is used when there is
# one; Debian 12's kubernetes-client (kubectl 1.20) otherwise, not both:
# they ship the same /usr/bin/kubectl.
if ! command -v kubectl >/dev/null; then
    echo "setup: installing kubernetes-client (kubectl)"
    "${sudo[@]}" apt-get update
    "${sudo[@]}" apt-get install -y --no-install-recommends kubernetes-client
fi

# gRPC and protobuf for the aarch64 cross build. After the arm64 packages
# above, so that only what they lack is downloaded.
if ! "$repo/scripts/arm64-cri-sysroot.sh"; then
    echo "setup: WARNING: sysroots/arm64-cri could not be built (see above);" \
        "the aarch64 preset cannot build the CRI module, and the aarch64 test step will fail saying so" >&2
fi

# The armhf sysroot is best effort: everything else must work without it.
if [[ ${DAEMONLET_SKIP_ARMHF:-0} == 1 ]]; then
    echo "setup: DAEMONLET_SKIP_ARMHF=1, not preparing the armhf sysroot"
elif ! "$repo/scripts/armhf-sysroot.sh"; then
    echo "setup: WARNING: the armhf sysroot could not be built (see above);" \
        "the armhf preset will not work, everything else is unaffected" >&2
fi
