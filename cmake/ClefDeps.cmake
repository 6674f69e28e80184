# Finds every dependency; a missing one stops configuration and names the
# Debian package that provides it (./scripts/setup installs them all).

macro(clef_missing what pkg)
  message(FATAL_ERROR "clef: ${what} not found. Install it with:\n"
                      "  apt-get install ${pkg}\n"
                      "or run ./scripts/setup as root.")
endmacro()

find_package(OpenMP)
if(NOT OpenMP_C_FOUND)
  clef_missing("OpenMP for C" "gcc")
endif()

# CLEF_MINIMAL (aarch64 cross builds): OpenMP only; everything below is
# optional there.
if(CLEF_MINIMAL)
  return()
endif()

find_package(PkgConfig)
if(NOT PKG_CONFIG_FOUND)
  clef_missing("pkg-config" "pkg-config")
endif()

# oneDNN by its header and library, not its CMake config: Debian's
# dnnl-config.cmake requires OpenCL (a package libdnnl-dev only recommends)
# although the CPU engine clef uses never touches it.
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.h)
find_library(DNNL_LIBRARY NAMES dnnl)
if(NOT DNNL_INCLUDE_DIR OR NOT DNNL_LIBRARY)
  clef_missing("oneDNN (oneapi/dnnl/dnnl.h, libdnnl)" "libdnnl-dev")
endif()
add_library(DNNL::dnnl UNKNOWN IMPORTED)
set_target_properties(DNNL::dnnl PROPERTIES IMPORTED_LOCATION ${DNNL_LIBRARY}
                      INTERFACE_INCLUDE_DIRECTORIES ${DNNL_INCLUDE_DIR})

# BLIS: Debian ships no pkg-config file; prefer the OpenMP build.
find_path(BLIS_INCLUDE_DIR blis.h
          PATHS /usr/include/x86_64-linux-gnu/blis-openmp
                /usr/include/aarch64-linux-gnu/blis-openmp
          PATH_SUFFIXES blis NO_DEFAULT_PATH)
if(NOT BLIS_INCLUDE_DIR)
  find_path(BLIS_INCLUDE_DIR blis.h PATH_SUFFIXES blis)
endif()
find_library(BLIS_LIBRARY NAMES blis
             PATHS /usr/lib/x86_64-linux-gnu/blis-openmp
                   /usr/lib/aarch64-linux-gnu/blis-openmp NO_DEFAULT_PATH)
if(NOT BLIS_LIBRARY)
  find_library(BLIS_LIBRARY NAMES blis)
endif()
if(NOT BLIS_INCLUDE_DIR OR NOT BLIS_LIBRARY)
  clef_missing("BLIS (blis.h, libblis)" "libblis-dev")
endif()
add_library(clef::blis UNKNOWN IMPORTED)
set_target_properties(clef::blis PROPERTIES IMPORTED_LOCATION ${BLIS_LIBRARY}
                      INTERFACE_INCLUDE_DIRECTORIES ${BLIS_INCLUDE_DIR})

pkg_check_modules(HWLOC QUIET IMPORTED_TARGET hwloc)
if(NOT HWLOC_FOUND)
  clef_missing("hwloc" "libhwloc-dev")
endif()
pkg_check_modules(CRITERION QUIET IMPORTED_TARGET criterion)
if(NOT CRITERION_FOUND)
  clef_missing("Criterion" "libcriterion-dev")
endif()
pkg_check_modules(JANSSON QUIET IMPORTED_TARGET jansson)
if(NOT JANSSON_FOUND)
  clef_missing("jansson" "libjansson-dev")
endif()
find_package(OpenSSL COMPONENTS Crypto QUIET)
if(NOT OpenSSL_FOUND)
  clef_missing("OpenSSL libcrypto" "libssl-dev")
endif()
