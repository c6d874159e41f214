#!/usr/bin/env bash
# Kill -9 loop over durable `claimsched sim` runs: each run starts a churning
# load on a fresh data directory, kills it at seeded moments chosen by the
# run's PROGRESS (not by the clock, so a slow or a fast machine meets the same
# stages), resumes it after every kill, and finally lets it finish. The last
# run's own check proves that every job any run acknowledged is held exactly
# once, that no task is allocated twice and that no node is over capacity.
#
#   bench/crash_loop.sh [--runs N] [--kills K] [--seed S] [--sync batch|none]
#                       [--binary PATH] [--tasks T] [--waves W] [--json] [--keep]
#
# Kill stages, one drawn per kill:
#   start      right after the process is spawned (before or while it makes
#              its run descriptor)
#   create     the moment a store directory starts being made (a fresh run;
#              on a resumed run: at start)
#   first_ack  the first job acknowledged (a fresh run) or the first store
#              write after recovery (a resumed run)
#   mid        a seeded fraction (5-95%) of the bytes a whole run writes to
#              the partition stores' logs (measured by one uninterrupted run)
# Prints a summary line, or with --json one object:
#   {"runs":..,"failures":..,"lost_acked_jobs":..,"double_allocations":..,
#    "kills":..,"kills_by_stage":{..},"finished_before_kill":..,"seconds":..}
# Exit status 0 when every run passed. --keep keeps the directories of
# failed runs (their logs name what went wrong); they are removed otherwise.
set -uo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
binary="${CLAIMSCHED:-$here/build/apps/claimsched}"
runs=20
kills=3
seed=1
sync=batch
tasks=30000
waves=6
json=0
keep=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --kills) kills="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --sync) sync="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --tasks) tasks="$2"; shift 2 ;;
    --waves) waves="$2"; shift 2 ;;
    --json) json=1; shift ;;
    --keep) keep=1; shift ;;
    *) echo "crash_loop: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x "$binary" ]] || { echo "crash_loop: no claimsched binary at $binary (build it, or give --binary)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "crash_loop: needs python3" >&2; exit 2; }

load=(--nodes 150 --partitions 2 --tasks "$tasks" --tasks-per-job 10 --churn --waves "$waves"
      --task-runtime 150ms)
work="$(mktemp -d /tmp/claimsched-crash-loop-XXXXXX)"
trap 'rm -rf "$work"' EXIT

# Bytes in the partition stores' write-ahead logs (archived ones included):
# grows with every scheduling step and never shrinks across restarts.
wal_bytes() {
  find "$1" -path "$1/partition-*" -name '*.log' -type f -printf '%s\n' 2>/dev/null |
    awk '{s += $1} END {print s + 0}'
}
acked_bytes() { stat -c %s "$1/acked.log" 2>/dev/null || echo 0; }
creating() { compgen -G "$1/*.creating" >/dev/null || [[ -e "$1/partition-1" ]]; }

# Reads a sim --json line; prints "ok lost doubles jobs" or "bad ...".
verdict() {
  python3 -c '
import json, sys
try:
    j = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
    print("ok" if j["invariants_ok"] else "bad", j.get("lost_acked_jobs", 0), j.get("double_allocations", 0), j["jobs"])
except Exception as e:
    print("bad 0 0 0")
' "$1"
}

start_sim() { # dir out log -> sets sim_pid; resumes if the dir holds a run
  local args=("$binary" sim --quiet --json --data-dir "$1" --sync "$sync")
  if [[ -f "$1/sim.json" ]]; then args+=(--resume); else args+=("${load[@]}" --seed "$run_seed"); fi
  "${args[@]}" >"$2" 2>>"$3" &
  sim_pid=$!
}

# One uninterrupted run: it must pass, and it tells how much a run writes.
run_seed=$seed
calibration="$work/calibration"
start_sim "$calibration" "$work/calibration.out" "$work/calibration.log"
wait "$sim_pid"
cal_exit=$?
read -r cal_ok _ _ jobs_expected < <(verdict "$work/calibration.out")
if [[ $cal_exit -ne 0 || "$cal_ok" != ok ]]; then
  echo "crash_loop: the uninterrupted run failed (exit $cal_exit); see:" >&2
  cat "$work/calibration.log" "$work/calibration.out" >&2
  exit 1
fi
whole_run_bytes=$(wal_bytes "$calibration")
rm -rf "$calibration"

RANDOM=$seed
stages=(start create first_ack mid)
declare -A by_stage=([start]=0 [create]=0 [first_ack]=0 [mid]=0)
failures=0 lost=0 doubles=0 total_kills=0 finished_early=0
began=$(date +%s.%N)
for ((r = 0; r < runs; r++)); do
  run_seed=$((seed * 1000 + r))
  dir="$work/run-$r/data"
  log="$work/run-$r/runs.log"
  mkdir -p "$work/run-$r"
  failed=""
  for ((k = 0; k < kills; k++)); do
    stage=${stages[RANDOM % 4]}
    fraction=$((5 + RANDOM % 91))
    resumed=0
    [[ -f "$dir/sim.json" ]] && resumed=1
    base_wal=$(wal_bytes "$dir")
    base_acked=$(acked_bytes "$dir")
    target=$((base_wal + whole_run_bytes * fraction / 100))
    echo "== run $r kill $k: stage $stage (fraction $fraction%, resumed $resumed)" >>"$log"
    start_sim "$dir" "$work/run-$r/out" "$log"
    while kill -0 "$sim_pid" 2>/dev/null; do
      case "$stage" in
        start) break ;;
        create) { ((resumed)) || creating "$dir"; } && break ;;
        first_ack)
          if ((resumed)); then (($(wal_bytes "$dir") > base_wal)) && break
          else (($(acked_bytes "$dir") > base_acked)) && break; fi ;;
        mid) (($(wal_bytes "$dir") >= target)) && break ;;
      esac
      sleep 0.002
    done
    if kill -9 "$sim_pid" 2>/dev/null; then
      wait "$sim_pid" 2>/dev/null
      by_stage[$stage]=$((by_stage[$stage] + 1))
      total_kills=$((total_kills + 1))
    else
      # It finished before the stage came: its own check must have passed.
      wait "$sim_pid"
      code=$?
      finished_early=$((finished_early + 1))
      read -r ok l d _ < <(verdict "$work/run-$r/out")
      if [[ $code -ne 0 || "$ok" != ok ]]; then failed="a run that finished by itself failed (exit $code)"; fi
      break
    fi
  done
  if [[ -z "$failed" ]]; then
    # The last run finishes (resumed; or fresh if no run had written its descriptor).
    start_sim "$dir" "$work/run-$r/out" "$log"
    wait "$sim_pid"
    code=$?
    read -r ok l d jobs < <(verdict "$work/run-$r/out")
    lost=$((lost + l))
    doubles=$((doubles + d))
    if [[ $code -ne 0 || "$ok" != ok ]]; then
      failed="the final run failed (exit $code)"
    elif [[ "$jobs" != "$jobs_expected" ]]; then
      failed="the final run holds $jobs jobs, the load has $jobs_expected"
    fi
  fi
  if [[ -n "$failed" ]]; then
    failures=$((failures + 1))
    echo "crash_loop: run $r (seed $run_seed): $failed; log: $log" >&2
    tail -n 5 "$log" >&2
    cat "$work/run-$r/out" >&2 2>/dev/null
    if ((keep)); then cp -r "$work/run-$r" "/tmp/claimsched-crash-failed-$run_seed-$$"; fi
  fi
  rm -rf "$work/run-$r"
done
seconds=$(awk -v a="$began" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')

if ((json)); then
  printf '{"runs":%d,"failures":%d,"lost_acked_jobs":%d,"double_allocations":%d,"kills":%d,' \
    "$runs" "$failures" "$lost" "$doubles" "$total_kills"
  printf '"kills_by_stage":{"start":%d,"create":%d,"first_ack":%d,"mid":%d},' \
    "${by_stage[start]}" "${by_stage[create]}" "${by_stage[first_ack]}" "${by_stage[mid]}"
  printf '"finished_before_kill":%d,"sync":"%s","seed":%d,"seconds":%s}\n' \
    "$finished_early" "$sync" "$seed" "$seconds"
else
  echo "crash_loop: $runs runs, $total_kills kills (start ${by_stage[start]}, create ${by_stage[create]}," \
    "first_ack ${by_stage[first_ack]}, mid ${by_stage[mid]}), $failures failed," \
    "$lost acknowledged jobs lost, $doubles double allocations, ${seconds}s"
fi
((failures == 0))
