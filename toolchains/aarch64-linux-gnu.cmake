# Cross build for 64-bit ARM boards (arm64, aarch64-linux-gnu) on Debian 12.
#
# The target libraries are Debian's :arm64 packages installed through
# multiarch (scripts/setup.sh), so they live on the build machine under
# /usr/lib/aarch64-linux-gnu. The compilers come from
# crossbuild-essential-arm64, the C library from /usr/aarch64-linux-gnu.
# gRPC and protobuf, for the CRI module (DAEMONLET_CRI), cannot be installed
# that way: scripts/arm64-cri-sysroot.sh unpacks them into sysroots/arm64-cri,
# which this file adds when it is there.
#
#   scripts/arm64-cri-sysroot.sh   (scripts/setup.sh runs it)
#   cmake --preset aarch64 && cmake --build --preset aarch64 && ctest --preset aarch64
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Programs (pkg-config, bash, python) are the build machine's; libraries,
# headers and packages only the target's. "/" is a root because multiarch
# keeps the target's libraries in the build machine's /usr/lib/<triplet>;
# CMAKE_LIBRARY_ARCHITECTURE makes find_library look there, not in the
# build machine's own /usr/lib/x86_64-linux-gnu.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
get_filename_component(DAEMONLET_ARM64_CRI_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../sysroots/arm64-cri" ABSOLUTE)
if(EXISTS "${DAEMONLET_ARM64_CRI_SYSROOT}/.daemonlet-sysroot")
  list(APPEND CMAKE_FIND_ROOT_PATH "${DAEMONLET_ARM64_CRI_SYSROOT}")
  set(DAEMONLET_CRI_SYSROOT_MISSING "")
else()
  # Read by the top CMakeLists.txt: DAEMONLET_CRI without it is an error
  # that says what to do, not pkg-config's "grpc++ not found".
  set(DAEMONLET_CRI_SYSROOT_MISSING
      "no gRPC for arm64 in ${DAEMONLET_ARM64_CRI_SYSROOT}: run scripts/arm64-cri-sysroot.sh, or configure with -DDAEMONLET_CRI=OFF")
endif()
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The top CMakeLists.txt finds every dependency through pkg-config: point it
# at the target's .pc files only (LIBDIR replaces the default search path).
# nlohmann_json.pc is architecture-independent, in /usr/share/pkgconfig.
# The CRI sysroot's .pc files name its absolute path (the script rewrites
# their prefix), so no PKG_CONFIG_SYSROOT_DIR, which would prefix the
# multiarch ones too: grpc.pc requires openssl, found in the multiarch
# directory as before.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
if(NOT DAEMONLET_CRI_SYSROOT_MISSING)
  set(ENV{PKG_CONFIG_LIBDIR}
      "$ENV{PKG_CONFIG_LIBDIR}:${DAEMONLET_ARM64_CRI_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig")
  # grpc++.pc and protobuf.pc say -L<sysroot>/usr/lib, not the multiarch
  # directory the libraries are in: -L for the linker, -rpath-link for
  # their own dependencies (libgrpc++ needs libgrpc, abseil, re2, c-ares).
  foreach(kind EXE SHARED MODULE)
    string(APPEND CMAKE_${kind}_LINKER_FLAGS_INIT
      " -L${DAEMONLET_ARM64_CRI_SYSROOT}/usr/lib/aarch64-linux-gnu"
      " -Wl,-rpath-link,${DAEMONLET_ARM64_CRI_SYSROOT}/usr/lib/aarch64-linux-gnu")
  endforeach()
endif()
set(ENV{PKG_CONFIG_PATH} "")
unset(ENV{PKG_CONFIG_SYSROOT_DIR})

# ctest runs the cross-built tests through qemu-aarch64, with the CRI
# sysroot's libraries on the guest's LD_LIBRARY_PATH (the wrapper holds the
# arguments: tests/CMakeLists.txt passes the emulator to scripts as one
# EMULATOR=... word, which a CMake list would split).
set(CMAKE_CROSSCOMPILING_EMULATOR "${CMAKE_CURRENT_LIST_DIR}/run-aarch64.sh")
