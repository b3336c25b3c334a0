#!/bin/sh
# Runs an armhf program on this machine: qemu user mode, with the dynamic
# loader and C library of the cross toolchain (/usr/arm-linux-gnueabihf) and
# the other target libraries from the sysroot made by scripts/armhf-sysroot.sh.
# CMAKE_CROSSCOMPILING_EMULATOR of toolchains/arm-linux-gnueabihf.cmake.
sysroot="$(cd "$(dirname "$0")/../sysroots/armhf" && pwd)" || exit 127
exec qemu-arm -L /usr/arm-linux-gnueabihf \
    -E "LD_LIBRARY_PATH=$sysroot/usr/lib/arm-linux-gnueabihf:$sysroot/lib/arm-linux-gnueabihf" "$@"
