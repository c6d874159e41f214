#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/README.md) in a build directory of
# their own and runs each for a while, starting from its committed seeds
# (tests/fuzz/corpus/TARGET) plus whatever earlier runs found. Prints one line
# per target (one JSON object per line with --json) and fails if any target
# crashed, hung, leaked or ran out of memory; the input that did is kept in
# the run's directory, with the command that replays it.
#
# Usage: tests/fuzz/run.sh [--seconds S] [--jobs N] [--json] [--only a,b]
#                          [--quick] [--build-dir DIR] [--no-build]
#   --seconds S   how long each target runs (default 5)
#   --jobs N      targets run at once, and build parallelism (default 2)
#   --only a,b    just these targets (default: every one in fuzz_targets.txt)
#   --quick       build at -O0 in build-fuzz-quick: less than half the build
#                 time, 2-3x fewer runs per second (the suite's short step)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)

seconds=5
jobs=2
json=0
only=""
build=""
quick=OFF
do_build=1
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --json) json=1; shift ;;
    --only) only="$2"; shift 2 ;;
    --build-dir) build="$2"; shift 2 ;;
    --quick) quick=ON; shift ;;
    --no-build) do_build=0; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
if [[ -z "$build" ]]; then
  build="$root/build-fuzz"
  [[ "$quick" == ON ]] && build="$root/build-fuzz-quick"
fi
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -gt 0 ]] || { echo "run.sh: --seconds must be a positive integer" >&2; exit 2; }
[[ "$jobs" =~ ^[0-9]+$ && "$jobs" -gt 0 ]] || { echo "run.sh: --jobs must be a positive integer" >&2; exit 2; }

if ((do_build)); then
  started=$(date +%s)
  cmake -S "$root" -B "$build" -DCLAIMSCHED_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_BUILD_TYPE=Release -DCLAIMSCHED_FUZZ_QUICK="$quick" >/dev/null
  cmake --build "$build" -j"$jobs" --target fuzz_targets >/dev/null
  echo "fuzz: built the targets in $(($(date +%s) - started)) s ($build)" >&2
fi
[[ -f "$build/fuzz_targets.txt" ]] || { echo "run.sh: no $build/fuzz_targets.txt: build first" >&2; exit 2; }

mapfile -t targets < <(grep -v '^$' "$build/fuzz_targets.txt")
if [[ -n "$only" ]]; then
  IFS=, read -r -a wanted <<<"$only"
  for t in "${wanted[@]}"; do
    printf '%s\n' "${targets[@]}" | grep -qx "$t" || { echo "run.sh: no target '$t' (have: ${targets[*]})" >&2; exit 2; }
  done
  targets=("${wanted[@]}")
fi

run_dir="$build/fuzz-runs/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$run_dir"

# One target: libFuzzer writes what it finds into the shared working corpus
# (the first directory), never into the committed seeds.
run_one() {
  local t=$1
  local dir="$run_dir/$t"
  local corpus="$build/fuzz-runs/corpus/$t"
  mkdir -p "$dir" "$corpus"
  local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024
              -print_final_stats=1 -artifact_prefix="$dir/")
  [[ -f "$root/tests/fuzz/$t.dict" ]] && args+=(-dict="$root/tests/fuzz/$t.dict")
  # TMPDIR: where a target keeps scratch files (the recovery target's stores).
  TMPDIR="$dir" ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    timeout --kill-after=10 $((seconds + 300)) "$build/tests/fuzz/fuzz_$t" "${args[@]}" \
    "$corpus" "$root/tests/fuzz/corpus/$t" >"$dir/log" 2>&1 || true
}

active=0
for t in "${targets[@]}"; do
  run_one "$t" &
  active=$((active + 1))
  if ((active >= jobs)); then
    wait -n || true
    active=$((active - 1))
  fi
done
wait

failed=0
for t in "${targets[@]}"; do
  dir="$run_dir/$t"
  log="$dir/log"
  count() { find "$dir" -maxdepth 1 -name "$1-*" | wc -l; }
  crashes=$(count crash)
  hangs=$(count timeout)
  leaks=$(count leak)
  ooms=$(count oom)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [[ -z "$execs" ]]; then  # killed before its final stats: the last status line
    execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  fi
  execs=${execs:-0}
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  cov=$(grep -oE ' cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || true)
  units=$(find "$build/fuzz-runs/corpus/$t" -type f | wc -l)
  findings=$((crashes + hangs + leaks + ooms))
  # A target that died without leaving an input (e.g. in its initialisation).
  if ((findings == 0)) && ! grep -q '^Done [0-9]* runs' "$log"; then
    crashes=1
    findings=1
  fi
  artifacts=$(find "$dir" -maxdepth 1 \( -name 'crash-*' -o -name 'timeout-*' -o -name 'leak-*' -o -name 'oom-*' \) | sort)
  if ((json)); then
    printf '{"target":"%s","seconds":%d,"execs":%d,"execs_per_second":%d,"crashes":%d,"hangs":%d,"leaks":%d,"ooms":%d,"coverage":%d,"corpus_units":%d,"peak_rss_mb":%d,"log":"%s","artifacts":[%s]}\n' \
      "$t" "$seconds" "$execs" $((execs / seconds)) "$crashes" "$hangs" "$leaks" "$ooms" "${cov:-0}" "$units" \
      "${rss:-0}" "$log" "$(for a in $artifacts; do printf '"%s",' "$a"; done | sed 's/,$//')"
  else
    printf 'fuzz %-15s %10d runs in %d s (%d/s), %d crashes, %d hangs, %d leaks, %d ooms, coverage %d\n' \
      "$t" "$execs" "$seconds" $((execs / seconds)) "$crashes" "$hangs" "$leaks" "$ooms" "${cov:-0}" >&2
  fi
  if ((findings)); then
    failed=1
    echo "fuzz $t FAILED: log $log" >&2
    grep -E 'ERROR|fuzz property broken|runtime error|SUMMARY' -A2 "$log" | head -20 >&2 || true
    for a in $artifacts; do echo "  replay: $build/tests/fuzz/fuzz_$t $a" >&2; done
  fi
done
exit "$failed"
