#!/usr/bin/env bash
# What the policy costs the scheduler: `claimsched sim` with the policy off
# and with `--policy` (classes of every policy, users with allotments, the
# fair-share cycle), alternated in one run so both see the same machine.
# Prints one JSON line:
#   {"pairs":3,"policy_interval":"1s","placements_per_sec_off":[...],
#    "placements_per_sec_on":[...],"median_off":...,"median_on":...,
#    "ratio":...,"policy_cycles_ran":true,"invariants_ok":true}
# ratio = median_on / median_off (issue 11 asks for at least 0.5).
#
#   bench/policy_overhead.sh [--pairs N] [--policy-interval D] [-- EXTRA SIM ARGS...]
#
# --policy-interval defaults to 1s, the server's default policy cycle
# ([policy] interval); EXTRA SIM ARGS go to both runs (e.g. -- --nodes 2000).
# CLAIMSCHED picks the binary (default ./build/apps/claimsched). Exit status:
# 0 if every run held its invariants, 1 otherwise, 2 on a usage error.
set -uo pipefail

pairs=3
interval=1s
extra=()
while (($#)); do
  case "$1" in
    --pairs) pairs=$2; shift ;;
    --policy-interval) interval=$2; shift ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "policy_overhead.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
bin=${CLAIMSCHED:-./build/apps/claimsched}
. "$(dirname "$0")/lib/progress.sh"
[[ -x $bin ]] || { echo "policy_overhead.sh: no binary at $bin (build first, or set CLAIMSCHED)" >&2; exit 2; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
progress_start policy_overhead
step=0
for ((i = 0; i < pairs; i++)); do
  for mode in off on; do
    flags=(sim --quiet --json --policy-interval "$interval" "${extra[@]}")
    [[ $mode == on ]] && flags+=(--policy)
    if ! line=$("$bin" "${flags[@]}"); then
      echo "policy_overhead.sh: a run with the policy $mode failed:" >&2
      echo "$line" >&2
    fi
    echo "$mode $line" >>"$out"
    progress_step $((++step)) $((2 * pairs)) "pair $((i + 1)), policy $mode: $(python3 -c 'import json,sys; print(round(json.loads(sys.argv[1])["placements_per_sec"]))' "$line" 2>/dev/null) placements/s"
  done
done
python3 - "$out" "$pairs" "$interval" <<'PY'
import json, statistics, sys
path, pairs, interval = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = {"off": [], "on": []}
ok = True
cycles = True
for line in open(path):
    mode, _, text = line.partition(" ")
    try:
        j = json.loads(text)
    except ValueError:
        ok = False
        continue
    runs[mode].append(j["placements_per_sec"])
    ok = ok and j["invariants_ok"]
    # A policy-on run that ended before its first cycle measured nothing of it.
    if mode == "on":
        cycles = cycles and j.get("policy_cycles", 0) > 0
off = statistics.median(runs["off"]) if runs["off"] else 0.0
on = statistics.median(runs["on"]) if runs["on"] else 0.0
print(json.dumps({"pairs": pairs, "policy_interval": interval,
                  "placements_per_sec_off": [round(x) for x in runs["off"]],
                  "placements_per_sec_on": [round(x) for x in runs["on"]],
                  "median_off": round(off), "median_on": round(on),
                  "ratio": round(on / off, 3) if off else 0.0,
                  "policy_cycles_ran": cycles, "invariants_ok": ok}))
sys.exit(0 if ok and len(runs["on"]) == pairs and len(runs["off"]) == pairs else 1)
PY
