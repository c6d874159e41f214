#!/usr/bin/env bash
# Installs what is missing, builds everything (Release with assertions) and
# runs the whole test suite through CTest; then builds the tests again with
# AddressSanitizer + UndefinedBehaviorSanitizer (cmake/Build.cmake says where
# UBSan is left out) and runs them too; then builds the libFuzzer targets with
# clang (build-fuzz, the decoders only) and runs each for a few seconds
# (tests/fuzz/README.md).
# Usage: scripts/test.sh [--no-sanitizers] [--no-fuzz]
#   --no-sanitizers  the Release pass only (no ASan pass, no fuzzing)
#   --no-fuzz        skip the fuzz step
set -euo pipefail
cd "$(dirname "$0")/.."

sanitizers=1
fuzz=1
for arg in "$@"; do
  case "$arg" in
    --no-sanitizers) sanitizers=0; fuzz=0 ;;
    --no-fuzz) fuzz=0 ;;
    *) echo "test.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

# Each step's time, printed at the end: the suite has a budget (CI: 25 minutes).
started=$(date +%s)
step_started=$started
steps=()
step_done() {
  local now
  now=$(date +%s)
  steps+=("$1 $((now - step_started)) s")
  step_started=$now
}

"$(pwd)/scripts/bootstrap.sh"
jobs=$(nproc)
step_done bootstrap

# Both build trees, the fuzz tree and the tests' scratch directories take about
# 7 GB; on a fuller disk the compiler dies halfway with "No space left on
# device", after many minutes. Say so before starting rather than after (a
# rerun over existing trees needs far less, so only a first run is checked).
needed_kb=$((7 * 1024 * 1024))
free_kb=$(df -Pk . | awk 'NR == 2 { print $4 }')
if [[ ! -d build-asan ]] && ((free_kb < needed_kb)); then
  echo "test.sh: only $((free_kb / 1024)) MB free on $(df -P . | awk 'NR == 2 { print $6 }');" \
    "the builds and tests need about 7 GB (build, build-asan, build-fuzz-quick)" >&2
  exit 1
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
step_done "Release build"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 600
step_done "Release tests"

if ((sanitizers)); then
  # The fault run (ChaosShortRun) runs alone for about 45 s and times its
  # faults by the clock: the Release pass runs it; under ASan it would only
  # repeat what the HA tests below check with the sanitizers on.
  # Warnings are the Release pass's job: at -O1 with sanitizers GCC 12 adds
  # false -Wmaybe-uninitialized positives in libstdc++ (std::regex, std::function).
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DCLAIMSCHED_SANITIZE=ON \
    -DCLAIMSCHED_BUILD_BENCH=OFF -DCLAIMSCHED_WERROR=OFF >/dev/null
  cmake --build build-asan -j"$jobs"
  step_done "ASan build"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan.supp:print_suppressions=0" \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" --timeout 900 -E '^ChaosShortRun$'
  step_done "ASan tests"
fi

if ((fuzz)); then
  tests/fuzz/run.sh --quick --seconds 5 --jobs "$jobs"
  step_done "fuzz (build included)"
fi
for step in "${steps[@]}"; do echo "test.sh: $step"; done
echo "test.sh: all tests passed in $(($(date +%s) - started)) s"
