# Cross build for 64-bit ARM boards (arm64, aarch64-linux-gnu) on Debian 12.
#
# The target libraries are Debian's :arm64 packages installed through
# multiarch (scripts/setup.sh), so they live on the build machine under
# /usr/lib/aarch64-linux-gnu and need no sysroot. The compilers come from
# crossbuild-essential-arm64, the C library from /usr/aarch64-linux-gnu.
#
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
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The top CMakeLists.txt finds every dependency through pkg-config: point it
# at the target's .pc files only (LIBDIR replaces the default search path).
# nlohmann_json.pc is architecture-independent, in /usr/share/pkgconfig.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
unset(ENV{PKG_CONFIG_SYSROOT_DIR})

# ctest runs the cross-built tests through qemu-aarch64 -L /usr/aarch64-linux-gnu
# (the wrapper holds the arguments: tests/CMakeLists.txt passes the emulator
# to scripts as one EMULATOR=... word, which a CMake list would split).
set(CMAKE_CROSSCOMPILING_EMULATOR "${CMAKE_CURRENT_LIST_DIR}/run-aarch64.sh")
