# Cross build for 32-bit ARM boards (armhf, arm-linux-gnueabihf: ARMv7 with
# hardware floating point, e.g. Raspberry Pi 2/3 on a 32-bit OS) on Debian 12.
#
# armhf is not a dpkg architecture on the build machine (the mirror's armhf
# security index breaks `apt-get update`), so the target libraries come from
# a private sysroot made by scripts/armhf-sysroot.sh, while the C library and
# the compiler runtime stay the cross toolchain's own, in /usr/arm-linux-gnueabihf.
# Hence no CMAKE_SYSROOT: the compiler keeps its own libc and is pointed at
# the sysroot's libraries with -L/-rpath-link, and pkg-config at its .pc files.
#
#   scripts/armhf-sysroot.sh
#   cmake --preset armhf && cmake --build --preset armhf && ctest --preset armhf
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
set(CMAKE_LIBRARY_ARCHITECTURE arm-linux-gnueabihf)

get_filename_component(DAEMONLET_ARMHF_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../sysroots/armhf" ABSOLUTE)
if(NOT EXISTS "${DAEMONLET_ARMHF_SYSROOT}/.daemonlet-sysroot")
  message(FATAL_ERROR "No armhf sysroot in ${DAEMONLET_ARMHF_SYSROOT}: run scripts/armhf-sysroot.sh first.")
endif()

set(CMAKE_FIND_ROOT_PATH "${DAEMONLET_ARMHF_SYSROOT}" /usr/arm-linux-gnueabihf)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config reads the sysroot's .pc files and prefixes the paths they give
# (-I, -L) with the sysroot.
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${DAEMONLET_ARMHF_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${DAEMONLET_ARMHF_SYSROOT}/usr/lib/arm-linux-gnueabihf/pkgconfig:${DAEMONLET_ARMHF_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Headers: after the toolchain's own (-idirafter), so the sysroot can never
# shadow the C library's. Libraries: -L for what we link directly, and
# -rpath-link so that the linker resolves their own dependencies (libsystemd
# needs libcap, libgcrypt, liblz4, liblzma, libzstd) in the sysroot.
foreach(lang C CXX)
  string(APPEND CMAKE_${lang}_FLAGS_INIT
    " -idirafter ${DAEMONLET_ARMHF_SYSROOT}/usr/include/arm-linux-gnueabihf"
    " -idirafter ${DAEMONLET_ARMHF_SYSROOT}/usr/include")
endforeach()
foreach(kind EXE SHARED MODULE)
  foreach(dir usr/lib/arm-linux-gnueabihf lib/arm-linux-gnueabihf)
    string(APPEND CMAKE_${kind}_LINKER_FLAGS_INIT
      " -L${DAEMONLET_ARMHF_SYSROOT}/${dir} -Wl,-rpath-link,${DAEMONLET_ARMHF_SYSROOT}/${dir}")
  endforeach()
endforeach()

# ctest runs the cross-built tests through
#   qemu-arm -L /usr/arm-linux-gnueabihf -E LD_LIBRARY_PATH=<sysroot libs>
# (the wrapper holds the arguments: tests/CMakeLists.txt passes the emulator
# to scripts as one EMULATOR=... word, which a CMake list would split).
set(CMAKE_CROSSCOMPILING_EMULATOR "${CMAKE_CURRENT_LIST_DIR}/run-armhf.sh")
