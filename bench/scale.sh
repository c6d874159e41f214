#!/usr/bin/env bash
# Scale benchmark: runs `claimsched sim` over a grid of cluster sizes and
# partition counts and summarises throughput, conflicts, latency and memory.
# See bench/README.md.
#
#   bench/scale.sh [--quick] [--overlap] [-- EXTRA SIM ARGS...]
#
#   --quick     1k and 10k nodes only (default: 1k, 10k, 100k)
#   --overlap   also run every partition count >= 2 with all schedulers
#               overlapping on all nodes: --cas fit and --cas strict, each
#               with evenly spaced and with --same-start fill points
#   -- ARGS     passed to every `claimsched sim` run (e.g. -- --churn --seed 7)
#
# Environment:
#   CLAIMSCHED      the binary (default ./build/apps/claimsched)
#   TASKS_PER_NODE  tasks per node (default 100)
#   MAX_TASKS       cap on tasks per run (default 1000000)
#
# stdout: one JSON object per run: the sim's --json summary plus "params"
# (what was asked), "exit_code" and "wall_s". stderr: progress, then a table.
# Exit status: 0 if every run finished with its invariants ok; 1 if any run
# failed its invariants or did not produce a summary; 2 on a usage error.

set -uo pipefail

usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0" >&2; }

quick=0
overlap=0
extra=()
while (($#)); do
  case "$1" in
    --quick) quick=1 ;;
    --overlap) overlap=1 ;;
    -h | --help)
      usage
      exit 0
      ;;
    --)
      shift
      extra=("$@")
      break
      ;;
    *)
      echo "scale.sh: unknown option '$1' (try --help)" >&2
      exit 2
      ;;
  esac
  shift
done

bin="${CLAIMSCHED:-./build/apps/claimsched}"
if [[ ! -f "$bin" ]]; then
  echo "scale.sh: claimsched binary not found at '$bin'." >&2
  echo "  Build it (cmake --build build --target claimsched) or set CLAIMSCHED=/path/to/claimsched." >&2
  exit 2
fi
if [[ ! -x "$bin" ]]; then
  echo "scale.sh: '$bin' is not executable (set CLAIMSCHED to the claimsched binary)." >&2
  exit 2
fi
if ! command -v python3 >/dev/null; then
  echo "scale.sh: python3 is needed to read the sim's JSON" >&2
  exit 2
fi

max_tasks="${MAX_TASKS:-1000000}"
tasks_per_node="${TASKS_PER_NODE:-100}"
for v in max_tasks tasks_per_node; do
  if ! [[ "${!v}" =~ ^[1-9][0-9]*$ ]]; then
    echo "scale.sh: ${v^^} must be a positive integer, not '${!v}'" >&2
    exit 2
  fi
done

if ((quick)); then
  node_counts=(1000 10000)
else
  node_counts=(1000 10000 100000)
fi
partition_counts=(1 2 4 8)

results="$(mktemp -t claimsched-scale.XXXXXX)"
trap 'rm -f "$results"' EXIT

# Prints the table of everything in $results to stderr; returns 1 if any run failed.
summarise() {
  python3 - "$results" <<'PY'
import json, sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
head = ["nodes", "parts", "mode", "tasks", "unplaced", "placements/s", "claims/pl", "confl/pl",
        "p50 ms", "p99 ms", "bytes/node", "RSS MiB", "invariants"]
table = [head]
failed = 0

def num(r, k, fmt):
    v = r.get(k)
    return fmt.format(v) if isinstance(v, (int, float)) else "-"

for r in rows:
    p = r["params"]
    ok = r.get("invariants_ok") is True and r["exit_code"] == 0
    if not ok:
        failed += 1
    if ok:
        verdict = "ok"
    elif r.get("invariants_ok") is False and "placements" in r:
        verdict = "FAILED"
    else:
        verdict = "ERROR rc=%d" % r["exit_code"]
    table.append([
        str(p["nodes"]), str(p["partitions"]), p["mode"], str(p["tasks"]),
        num(r, "unplaced", "{:,}"),
        num(r, "placements_per_sec", "{:,.0f}"),
        num(r, "claims_per_placement", "{:.4f}"),
        num(r, "conflicts_per_placement", "{:.4f}"),
        num(r, "latency_p50_ms", "{:.1f}"),
        num(r, "latency_p99_ms", "{:.1f}"),
        num(r, "bytes_per_node", "{:,}"),
        "%.1f" % (r["peak_rss_bytes"] / 2**20) if isinstance(r.get("peak_rss_bytes"), (int, float)) else "-",
        verdict,
    ])

widths = [max(len(row[i]) for row in table) for i in range(len(head))]
out = sys.stderr
out.write("\n")
for n, row in enumerate(table):
    cells = [c.ljust(w) if i in (2, 12) else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
    out.write("  ".join(cells).rstrip() + "\n")
    if n == 0:
        out.write("  ".join("-" * w for w in widths) + "\n")
for r in rows:
    fails = r.get("invariant_failures") or []
    if r.get("invariants_ok") is not True or r["exit_code"] != 0:
        p = r["params"]
        out.write("\n%s nodes, %s partitions, %s (exit %d):\n" % (p["nodes"], p["partitions"], p["mode"], r["exit_code"]))
        for f in fails or ["(no details)"]:
            out.write("  - %s\n" % f)
out.write("\n%d run(s), %d failed\n" % (len(rows), failed))
sys.exit(1 if failed else 0)
PY
}

trap 'echo "scale.sh: interrupted" >&2; summarise; exit 130' INT TERM

# run_one NODES PARTITIONS MODE [SIM FLAGS...]
run_one() {
  local nodes="$1" parts="$2" mode="$3"
  shift 3
  local tasks=$((nodes * tasks_per_node))
  ((tasks > max_tasks)) && tasks=$max_tasks
  local args=(sim --json --quiet --nodes "$nodes" --partitions "$parts" --tasks "$tasks" "$@" "${extra[@]}")
  echo "scale.sh: $bin ${args[*]}" >&2
  local start end out rc=0
  start=$(date +%s.%N)
  out="$("$bin" "${args[@]}")" || rc=$?
  end=$(date +%s.%N)
  SIM_OUT="$out" P_NODES="$nodes" P_PARTS="$parts" P_MODE="$mode" P_TASKS="$tasks" P_RC="$rc" \
    P_START="$start" P_END="$end" P_ARGS="${args[*]}" python3 -c '
import json, os
summary = None
for line in reversed(os.environ["SIM_OUT"].splitlines()):
    line = line.strip()
    if line.startswith("{"):
        try:
            summary = json.loads(line)
            break
        except ValueError:
            pass
rc = int(os.environ["P_RC"])
if summary is None:
    summary = {"invariants_ok": False,
               "invariant_failures": ["the sim exited with %d and printed no JSON summary" % rc]}
mode = os.environ["P_MODE"]
summary["params"] = {
    "nodes": int(os.environ["P_NODES"]),
    "partitions": int(os.environ["P_PARTS"]),
    "tasks": int(os.environ["P_TASKS"]),
    "mode": mode,
    "overlap": mode != "partitioned",
    "cas": "strict" if "strict" in mode else "fit",
    "same_start": mode.endswith("same-start"),
    "command": os.environ["P_ARGS"],
}
summary["exit_code"] = rc
summary["wall_s"] = round(float(os.environ["P_END"]) - float(os.environ["P_START"]), 3)
print(json.dumps(summary, separators=(",", ":")))
' | tee -a "$results"
}

for nodes in "${node_counts[@]}"; do
  for parts in "${partition_counts[@]}"; do
    run_one "$nodes" "$parts" partitioned
  done
  if ((overlap)); then
    for parts in "${partition_counts[@]}"; do
      ((parts < 2)) && continue  # one scheduler cannot race itself
      run_one "$nodes" "$parts" overlap-fit --overlap --cas fit
      run_one "$nodes" "$parts" overlap-fit-same-start --overlap --cas fit --same-start
      run_one "$nodes" "$parts" overlap-strict --overlap --cas strict
      run_one "$nodes" "$parts" overlap-strict-same-start --overlap --cas strict --same-start
    done
  fi
done

summarise
