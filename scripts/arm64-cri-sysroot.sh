#!/usr/bin/env bash
# Builds sysroots/arm64-cri: what the aarch64 cross build needs for the CRI
# module (daemonlet-cri.so) and is not installed through multiarch: gRPC,
# protobuf and their closure (abseil, re2, c-ares), unpacked
# from Debian's :arm64 packages (scripts/deb-sysroot.sh does the work).
#
# Why not multiarch, as for the other arm64 libraries: libgrpc-dev:arm64
# depends on pkgconf:arm64, which is not Multi-Arch: foreign, and installing
# it removes the build machine's build-essential, gcc, g++ and
# crossbuild-essential-arm64 (apt-get install -s shows it). So apt runs with
# a private state under sysroots/.arm64-cri-apt, in which every package the
# build machine has installed for arm64 (scripts/setup.sh's arm64_packages
# and their closure: libc6, libssl3, zlib1g, ...) counts as installed, and
# so does pkgconf (the build machine's pkg-config reads the .pc files). Only
# what is missing is downloaded: about 6 MiB of packages, 40 MiB unpacked.
#
# The .pc files are rewritten to name the tree's absolute path, so that
# pkg-config finds grpc++ here and openssl, zlib's library and the C
# library in the multiarch directories (toolchains/aarch64-linux-gnu.cmake);
# the tests and the module run under qemu with the tree's libraries on
# LD_LIBRARY_PATH (toolchains/run-aarch64.sh). protoc and grpc_cpp_plugin are
# the build machine's (protobuf-compiler, protobuf-compiler-grpc): the same
# Debian versions as these libraries.
#
# Idempotent: a stamp records what the tree was built from (and where: the
# .pc files name it); rerunning with nothing changed does nothing. Pass
# --force to rebuild.
set -euo pipefail

name=arm64-cri
deb_arch=arm64
triplet=aarch64-linux-gnu
wanted=(libgrpc++-dev libprotobuf-dev)
# The build machine's pkg-config serves; the C library and compiler runtime
# are both the cross toolchain's and multiarch packages.
from_toolchain=(pkgconf libc6 libc6-dev libgcc-s1 libstdc++6 gcc-12-base linux-libc-dev libcrypt1 libcrypt-dev)
from_multiarch=1
relocate_pc=1
drop_static=1
# Bump when the way the tree is built changes, so that old trees are rebuilt.
recipe_version=1

# shellcheck source=scripts/deb-sysroot.sh
source "$(dirname "${BASH_SOURCE[0]}")/deb-sysroot.sh"
build_deb_sysroot "$@"
