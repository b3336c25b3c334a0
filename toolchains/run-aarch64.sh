#!/bin/sh
# Runs an aarch64 program on this machine under qemu user mode.
# CMAKE_CROSSCOMPILING_EMULATOR of toolchains/aarch64-linux-gnu.cmake.
#
# The target runtime comes from the multiarch :arm64 packages that
# scripts/setup.sh installs: /lib/ld-linux-aarch64.so.1, libc and libstdc++
# in /usr/lib/aarch64-linux-gnu, next to libuv, libsqlite3 and libsystemd.
# Deliberately no `-L /usr/aarch64-linux-gnu`: that prefix makes the guest
# load the cross toolchain's ld.so (glibc 2.36-8cross1) while libc.so.6
# still resolves to the multiarch one (2.36-9+deb12uN), and the two do not
# share their private data layout: every fork() child then spins forever in
# glibc's reclaim_stacks. The cross toolchain's libc is for linking only.
#
# gRPC, protobuf and abseil, which daemonlet-cri.so needs, are not
# multiarch packages here but in sysroots/arm64-cri
# (scripts/arm64-cri-sysroot.sh): on the guest's LD_LIBRARY_PATH when it is
# there. It holds no library that multiarch also has, so nothing else
# resolves differently.
cri="$(dirname "$0")/../sysroots/arm64-cri/usr/lib/aarch64-linux-gnu"
if [ -d "$cri" ]; then
    exec qemu-aarch64 -E "LD_LIBRARY_PATH=$(cd "$cri" && pwd)" "$@"
fi
exec qemu-aarch64 "$@"
