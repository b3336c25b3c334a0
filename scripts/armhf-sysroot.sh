#!/usr/bin/env bash
# Builds the armhf sysroot under sysroots/armhf: daemonlet's target libraries
# (libuv, sqlite3, systemd, yaml, CppUTest, nlohmann-json) and the runtime
# libraries they need to link and run, unpacked from Debian's :armhf packages
# (scripts/deb-sysroot.sh does the work).
#
# Why not multiarch, as for arm64: adding armhf to dpkg's architectures makes
# the system's `apt-get update` fail on the mirror's broken armhf security
# index. So the system's apt and dpkg state is never touched: apt runs with a
# private state under sysroots/.armhf-apt. The C library and the compiler
# runtime come from the cross toolchain (crossbuild-essential-armhf): they
# are declared installed in the private status file, so apt neither
# downloads them nor follows their dependencies.
#
# Idempotent: a stamp records what the sysroot was built from; rerunning with
# nothing changed does nothing. Pass --force to rebuild.
set -euo pipefail

name=armhf
deb_arch=armhf
triplet=arm-linux-gnueabihf
# What daemonlet links against; apt adds the closure (libuv1, libsqlite3-0,
# libsystemd0, libcap2, libgcrypt20, libgpg-error0, liblz4-1, liblzma5,
# libzstd1, libyaml-0-2, libcurl4, libssl3, libmbedtls14, libmbedx509-1,
# libmbedcrypto7, libnghttp2-14, libarchive13, ...).
# libarchive.a is linked statically: the -dev packages of what it calls too.
wanted=(libuv1-dev libsqlite3-dev libsystemd-dev libyaml-dev libcpputest-dev nlohmann-json3-dev libcurl4-openssl-dev libmbedtls-dev libnghttp2-dev libssl-dev libarchive-dev
    libacl1-dev libzstd-dev liblz4-dev liblzma-dev libbz2-dev zlib1g-dev nettle-dev)
# Provided by the cross toolchain in /usr/arm-linux-gnueabihf.
from_toolchain=(libc6 libc6-dev libgcc-s1 libstdc++6 gcc-12-base linux-libc-dev libcrypt1 libcrypt-dev)
# Bump when the way the sysroot is built changes, so that old sysroots are rebuilt.
recipe_version=2

# shellcheck source=scripts/deb-sysroot.sh
source "$(dirname "${BASH_SOURCE[0]}")/deb-sysroot.sh"
build_deb_sysroot "$@"
