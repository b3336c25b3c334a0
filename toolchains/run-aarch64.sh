#!/bin/sh
# Runs an aarch64 program on this machine under qemu user mode.
# CMAKE_CROSSCOMPILING_EMULATOR of toolchains/aarch64-linux-gnu.cmake.
#
# The whole target runtime comes from the multiarch :arm64 packages that
# scripts/setup.sh installs: /lib/ld-linux-aarch64.so.1, libc and libstdc++
# in /usr/lib/aarch64-linux-gnu, next to libuv, libsqlite3 and libsystemd.
# Deliberately no `-L /usr/aarch64-linux-gnu`: that prefix makes the guest
# load the cross toolchain's ld.so (glibc 2.36-8cross1) while libc.so.6
# still resolves to the multiarch one (2.36-9+deb12uN), and the two do not
# share their private data layout: every fork() child then spins forever in
# glibc's reclaim_stacks. The cross toolchain's libc is for linking only.
exec qemu-aarch64 "$@"
