# Every dependency is a Debian package found with find_package. A missing one stops configure with
# the package to install (scripts/install-deps.sh installs them all).
macro(moefuzz_require pkg debian)
  find_package(${pkg} ${ARGN} QUIET)
  if(NOT ${pkg}_FOUND)
    message(FATAL_ERROR "moefuzz: dependency '${pkg}' not found. Install the Debian package: "
                        "apt-get install ${debian}   (or run scripts/install-deps.sh)")
  endif()
endmacro()

find_package(Threads REQUIRED)
moefuzz_require(fmt libfmt-dev)
moefuzz_require(CLI11 libcli11-dev)
moefuzz_require(nlohmann_json nlohmann-json3-dev)
moefuzz_require(Boost libboost-dev 1.74)  # header-only: Boost.Multiprecision
moefuzz_require(rapidcheck librapidcheck-dev)  # generators live in the properties library
# xxHash's XXH3, used header-only (core/content_hasher.h inlines it): no library to link.
find_path(MOEFUZZ_XXHASH_INCLUDE_DIR xxhash.h)
if(NOT MOEFUZZ_XXHASH_INCLUDE_DIR)
  message(FATAL_ERROR "moefuzz: dependency 'xxhash' not found. Install the Debian package: "
                      "apt-get install libxxhash-dev   (or run scripts/install-deps.sh)")
endif()
if(MOEFUZZ_BUILD_TESTS)
  moefuzz_require(GTest libgtest-dev)
endif()
if(MOEFUZZ_BUILD_BENCH)
  moefuzz_require(benchmark libbenchmark-dev)
endif()
