#!/bin/sh
# Runs an aarch64 program on this machine: qemu user mode, with the dynamic
# loader and C library of the cross toolchain (/usr/aarch64-linux-gnu); the
# other target libraries are found in /usr/lib/aarch64-linux-gnu (multiarch).
# CMAKE_CROSSCOMPILING_EMULATOR of toolchains/aarch64-linux-gnu.cmake.
exec qemu-aarch64 -L /usr/aarch64-linux-gnu "$@"
