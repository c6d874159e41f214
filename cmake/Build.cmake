# Build-time helpers shared by every directory.

option(CLAIMSCHED_PCH "Precompile the heavy third-party headers (CAF, spdlog, gtest)" ON)

# claimsched_precompile(target [CAF] [GTEST] [JSON]): precompiles the
# third-party headers the target's files include anyway. Parsing CAF and its
# templates is about half of an actor file's compile time; CI has two cores
# and a time budget.
function(claimsched_precompile target)
  if(NOT CLAIMSCHED_PCH)
    return()
  endif()
  set(headers <algorithm> <chrono> <functional> <map> <memory> <string> <unordered_map> <vector>)
  if("CAF" IN_LIST ARGN)
    list(APPEND headers <caf/all.hpp> <caf/io/all.hpp> <spdlog/spdlog.h>)
    # With CAF precompiled, GCC 12 no longer treats std::string code inlined
    # from CAF's templates as system-header code and reports its known false
    # -Warray-bounds / -Wstringop-overflow positives (GCC PR 105329, 106199).
    target_compile_options(${target} PRIVATE -Wno-array-bounds -Wno-stringop-overflow)
  endif()
  if("GTEST" IN_LIST ARGN)
    list(APPEND headers <gtest/gtest.h>)
  endif()
  if("JSON" IN_LIST ARGN)
    list(APPEND headers <nlohmann/json.hpp>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()

# claimsched_address_sanitizer_only(target): in a sanitizer build, compiles the
# target with AddressSanitizer but without UndefinedBehaviorSanitizer. UBSan
# doubles the compile time of files that instantiate CAF's templates (47 s
# instead of 22 s for actors/scheduler_actor.cpp at -O1), which the CI budget
# cannot pay for every actor file; core/, storage/, agent/ and the policy code,
# where our arithmetic lives, keep both.
function(claimsched_address_sanitizer_only target)
  if(CLAIMSCHED_SANITIZE)
    target_compile_options(${target} PRIVATE -fno-sanitize=undefined)
  endif()
endfunction()
