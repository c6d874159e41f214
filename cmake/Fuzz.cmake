# The libFuzzer configuration (-DCLAIMSCHED_FUZZ=ON, tests/fuzz/README.md):
# clang's libFuzzer with AddressSanitizer and UndefinedBehaviorSanitizer, in a
# build directory of its own (build-fuzz), building only the decoders' libraries
# and the fuzz targets. The normal and sanitizer builds are untouched.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "CLAIMSCHED_FUZZ needs clang's libFuzzer: configure with "
                      "-DCMAKE_CXX_COMPILER=clang++-14 (scripts/bootstrap.sh installs it)")
endif()
# Nothing else of the tree is built here: no tests, no benchmarks, no actors.
set(CLAIMSCHED_BUILD_TESTS OFF CACHE BOOL "Build the tests" FORCE)
set(CLAIMSCHED_BUILD_BENCH OFF CACHE BOOL "Build the benchmarks" FORCE)
set(CLAIMSCHED_PCH OFF CACHE BOOL "Precompile the heavy third-party headers" FORCE)
# Clang's warnings differ from GCC's; the Release pass keeps the tree clean.
set(CLAIMSCHED_WERROR OFF CACHE BOOL "Treat warnings as errors" FORCE)
# -O1: the sanitizers' recommended level, for long runs (bench/fuzz.sh). The
# suite's short step builds with CLAIMSCHED_FUZZ_QUICK: -O0 compiles the same
# targets in about 40% of the time and runs them 2-3 times slower, which a
# few seconds per target do not notice. Line tables are enough for the stacks.
option(CLAIMSCHED_FUZZ_QUICK "Fuzz build at -O0: quicker to build, slower to run" OFF)
if(CLAIMSCHED_FUZZ_QUICK)
  set(CMAKE_CXX_FLAGS_RELEASE "-O0 -gline-tables-only")
else()
  set(CMAKE_CXX_FLAGS_RELEASE "-O1 -gline-tables-only")
endif()
# Libraries get coverage and sanitizers; only the targets link libFuzzer's main.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer)
add_link_options(-fsanitize=address,undefined)
