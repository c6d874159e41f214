#!/usr/bin/env bash
# What durability costs the scheduler: `claimsched sim` in memory, and with
# `--data-dir` on a fresh directory and `--sync batch` (every acknowledged job
# and every confirmed placement on disk, fsynced by group commit), alternated
# in one run so both see the same machine. Prints one JSON line:
#   {"inmemory_per_sec":...,"durable_per_sec":...,"durable_ratio":...,
#    "invariants_ok":true,"sync":"batch","rounds":[{"inmemory":...,"durable":...,
#    "store_writes":...},...]}
# *_per_sec are the medians of placements/s over the rounds, durable_ratio =
# durable / inmemory (issue 17 asks for at least 0.5); each round has both
# runs' placements/s and the durable run's partition-store writes.
# *_cpu_us_per_placement are the medians of the process's CPU time (every
# thread) while it placed, per placement, and cpu_ratio = inmemory / durable
# of those: what durable_ratio would be if both runs were CPU-bound on the
# same cores. Other sessions' load moves it far less than the placements/s
# (the in-memory run uses both cores, so it loses the most to a busy
# machine). load_average is the 1-minute load before and after the rounds.
#
#   bench/durable_sim.sh [--rounds N] [--sync MODE] [--dir DIR] [-- EXTRA SIM ARGS...]
#
# EXTRA SIM ARGS go to both runs; without them, --nodes 10000 --tasks 1000000
# (sim's default load). --dir puts the data directories under DIR (default: a
# temporary directory; the disk under it is what is measured), removed after
# each run. CLAIMSCHED picks the binary (default ./build/apps/claimsched).
# Exit status: 0 if every run held its invariants, 1 otherwise, 2 on a usage
# error. Needs python3.
set -uo pipefail

rounds=3
sync=batch
base=""
extra=()
while (($#)); do
  case "$1" in
    --rounds) rounds=$2; shift ;;
    --sync) sync=$2; shift ;;
    --dir) base=$2; shift ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "durable_sim.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
((${#extra[@]})) || extra=(--nodes 10000 --tasks 1000000)
bin=${CLAIMSCHED:-./build/apps/claimsched}
[[ -x $bin ]] || { echo "durable_sim.sh: no binary at $bin (build first, or set CLAIMSCHED)" >&2; exit 2; }

load_before=$(cut -d' ' -f1 /proc/loadavg)
work=$(mktemp -d ${base:+-p "$base"})
trap 'rm -rf "$work"' EXIT
out=$work/runs

for ((i = 0; i < rounds; i++)); do
  for mode in inmemory durable; do
    if [[ $mode == durable ]]; then
      line=$("$bin" sim --quiet --json --data-dir "$work/data" --sync "$sync" "${extra[@]}")
      status=$?
      rm -rf "$work/data"
    else
      line=$("$bin" sim --quiet --json "${extra[@]}")
      status=$?
    fi
    if ((status != 0)); then
      echo "durable_sim.sh: the $mode run failed:" >&2
      echo "$line" >&2
    fi
    echo "$mode $line" >>"$out"
    echo "round $((i + 1))/$rounds, $mode: $(python3 -c 'import json,sys; print(round(json.loads(sys.argv[1])["placements_per_sec"]))' "$line" 2>/dev/null) placements/s" >&2
  done
done
python3 - "$out" "$rounds" "$sync" "$load_before" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import json, statistics, sys
path, rounds, sync = sys.argv[1], int(sys.argv[2]), sys.argv[3]
load = [float(sys.argv[4]), float(sys.argv[5])]
runs = {"inmemory": [], "durable": []}
cpu = {"inmemory": [], "durable": []}
writes = []
ok = True
for line in open(path):
    mode, text = line.split(" ", 1)
    try:
        j = json.loads(text)
    except ValueError:
        ok = False
        continue
    runs[mode].append(j["placements_per_sec"])
    cpu[mode].append(j.get("cpu_us_per_placement", 0.0))
    ok = ok and j["invariants_ok"]
    if mode == "durable":
        writes.append(j.get("store_writes", 0))
mem = statistics.median(runs["inmemory"]) if runs["inmemory"] else 0.0
dur = statistics.median(runs["durable"]) if runs["durable"] else 0.0
mem_cpu = statistics.median(cpu["inmemory"]) if cpu["inmemory"] else 0.0
dur_cpu = statistics.median(cpu["durable"]) if cpu["durable"] else 0.0
print(json.dumps({"inmemory_per_sec": round(mem), "durable_per_sec": round(dur),
                  "durable_ratio": round(dur / mem, 3) if mem else 0.0,
                  "inmemory_cpu_us_per_placement": round(mem_cpu, 3),
                  "durable_cpu_us_per_placement": round(dur_cpu, 3),
                  "cpu_ratio": round(mem_cpu / dur_cpu, 3) if dur_cpu else 0.0,
                  "invariants_ok": ok, "sync": sync, "load_average": load,
                  "rounds": [{"inmemory": round(a), "durable": round(b), "store_writes": w}
                             for a, b, w in zip(runs["inmemory"], runs["durable"], writes)]}))
sys.exit(0 if ok and len(runs["inmemory"]) == rounds and len(runs["durable"]) == rounds else 1)
PY
