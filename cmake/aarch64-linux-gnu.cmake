# Cross toolchain: Debian 12's gcc-aarch64-linux-gnu + libc6-dev-arm64-cross,
# programs run under qemu-user (qemu-aarch64). No arm64 dpkg architecture is
# needed or wanted: the aarch64 build is CLEF_MINIMAL (kernels + clef-bench,
# no oneDNN/BLIS/hwloc/Criterion/jansson/OpenSSL), see CMakeLists.txt.
#
#   cmake -S . -B build-arm -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#   qemu-aarch64 -L /usr/aarch64-linux-gnu build-arm/bin/clef-bench --backend neon
#
# (./scripts/cross-test does both.)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CLEF_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${CLEF_CROSS_TRIPLE}-gcc)

# The target's sysroot as Debian's cross packages lay it out.
set(CLEF_CROSS_SYSROOT /usr/${CLEF_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH ${CLEF_CROSS_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Host .pc files describe x86-64 libraries: never let pkg-config find them.
set(ENV{PKG_CONFIG_LIBDIR} "")

# try_run, add_test and `cmake --build ... --target test` run target programs
# through qemu; QEMU_LD_PREFIX equivalent: -L <sysroot>.
set(CMAKE_CROSSCOMPILING_EMULATOR "qemu-aarch64;-L;${CLEF_CROSS_SYSROOT}")
