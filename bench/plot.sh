#!/usr/bin/env bash
# Turns a benchmark's JSON into PNG figures with gnuplot (Debian's
# gnuplot-nox, installed by scripts/bootstrap.sh).
#
#   bench/plot.sh BENCH_JSON OUTDIR
#
# It recognises what it is given:
#   - bench/scale.sh's output (one `claimsched sim --json` report per line):
#       scale.png      placements/s against nodes, a line per partition count
#                      (partitioned runs; log x)
#       conflicts.png  conflicts per placement against partitions, a line per
#                      node count and mode (partitioned, overlap fit/strict)
#       latency.png    submit-to-placed p50 and p99 against nodes, per
#                      partition count (log x, log y)
#   - bench/metrics_overhead.sh's or bench/policy_overhead.sh's object:
#       overhead.png   placements/s of each round, off against on, with both
#                      medians
# OUTDIR is created; the data each figure is drawn from is left beside it
# (*.dat), to read or plot again. A missing gnuplot, an unknown or empty
# input is an error naming it (exit 1); bad usage exits 2.
set -euo pipefail

die() {
  echo "plot.sh: $*" >&2
  exit 1
}
if (($# != 2)); then
  echo "usage: $0 BENCH_JSON OUTDIR" >&2
  exit 2
fi
input=$1
out=$2
command -v gnuplot >/dev/null 2>&1 || die "gnuplot not found (Debian: apt-get install gnuplot-nox, or scripts/bootstrap.sh)"
[[ -s $input ]] || die "$input: missing or empty"
mkdir -p "$out"

# JSON to gnuplot's data files (one block per series, titled by its first
# line), and the kind of figure set to draw.
kind=$(python3 - "$input" "$out" <<'PY'
import json, statistics, sys
from collections import defaultdict
path, out = sys.argv[1], sys.argv[2]
text = open(path).read()
try:
    docs = [json.loads(text)]
except ValueError:
    docs = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                docs.append(json.loads(line))
            except ValueError as e:
                sys.exit(f"plot.sh: {path}: line {n} is not JSON: {e}")

def write_series(name, series, header):
    # series: {title: [(x, y...), ...]}, written as gnuplot index blocks.
    with open(f"{out}/{name}.dat", "w") as f:
        for title in sorted(series):
            f.write(f'"{title}"\n# {header}\n')
            for row in sorted(series[title]):
                f.write(" ".join(str(v) for v in row) + "\n")
            f.write("\n\n")

if all(isinstance(d, dict) and "placements_per_sec" in d and "nodes" in d for d in docs):
    def mode(d):
        if not d.get("overlap"):
            return "partitioned"
        return f"overlap {d.get('cas', 'fit')}" + (" same start" if d.get("same_start") else "")
    scale, conflicts, latency = defaultdict(list), defaultdict(list), defaultdict(list)
    for d in docs:
        if mode(d) == "partitioned":
            scale[f"{d['partitions']} partition(s)"].append((d["nodes"], d["placements_per_sec"]))
            latency[f"{d['partitions']} partition(s)"].append(
                (d["nodes"], max(d["latency_p50_ms"], 1e-3), max(d["latency_p99_ms"], 1e-3)))
        conflicts[f"{d['nodes']} nodes, {mode(d)}"].append((d["partitions"], d["conflicts_per_placement"]))
    write_series("scale", scale, "nodes placements_per_sec")
    write_series("conflicts", conflicts, "partitions conflicts_per_placement")
    write_series("latency", latency, "nodes p50_ms p99_ms")
    print("scale", len(scale), len(conflicts), len(latency))
elif len(docs) == 1 and isinstance(docs[0], dict) and (
        "rounds" in docs[0] and isinstance(docs[0]["rounds"], list) or "pairs" in docs[0]):
    d = docs[0]
    if isinstance(d.get("rounds"), list):  # metrics_overhead.sh
        off = [r["off"] for r in d["rounds"]]
        on = [r["on"] for r in d["rounds"]]
    else:  # policy_overhead.sh
        off, on = d["placements_per_sec_off"], d["placements_per_sec_on"]
    if not off or not on:
        sys.exit(f"plot.sh: {path}: no rounds")
    with open(f"{out}/overhead.dat", "w") as f:
        f.write("# round off on\n")
        for i, (a, b) in enumerate(zip(off, on), 1):
            f.write(f"{i} {a} {b}\n")
    print("overhead", float(statistics.median(off)), float(statistics.median(on)), len(off))
else:
    sys.exit(f"plot.sh: {path}: neither bench/scale.sh's lines nor an overhead bench's object")
PY
) || exit 1

terminal='set terminal pngcairo size 1000,600 noenhanced'
read -r what a b c <<<"$kind"
cd "$out"
if [[ $what == scale ]]; then
  gnuplot <<EOF2
$terminal
set grid
set key top left
set output 'scale.png'
set title 'claimsched sim: throughput against cluster size'
set xlabel 'nodes'
set ylabel 'placements/s'
set logscale x
set format y '%.1s%c'
plot for [i=0:$((a - 1))] 'scale.dat' index i using 1:2 with linespoints linewidth 2 title columnheader(1)
set output 'latency.png'
set title 'claimsched sim: submit to placed, p50 (solid) and p99 (dashed)'
set ylabel 'milliseconds'
set logscale y
set format y '%g'
plot for [i=0:$((c - 1))] 'latency.dat' index i using 1:2 with linespoints linewidth 2 linecolor i+1 title columnheader(1), \
     for [i=0:$((c - 1))] 'latency.dat' index i using 1:3 with linespoints linewidth 2 dashtype 2 linecolor i+1 notitle
unset logscale
set output 'conflicts.png'
set title 'claimsched sim: claims rejected per placement'
set xlabel 'partitions (schedulers)'
set ylabel 'conflicts per placement'
set key outside right top vertical
plot for [i=0:$((b - 1))] 'conflicts.dat' index i using 1:2 with linespoints linewidth 2 title columnheader(1)
EOF2
  echo "plot.sh: wrote $out/scale.png, $out/latency.png, $out/conflicts.png" >&2
else
  gnuplot <<EOF2
$terminal
set grid
set key bottom right
set output 'overhead.png'
set title sprintf('placements/s per round: medians off %.3gM, on %.3gM (ratio %.3f)', $a / 1e6, $b / 1e6, $b / $a)
set xlabel 'round'
set ylabel 'placements/s'
set xtics 1
set yrange [0:*]
set format y '%.1s%c'
set style data linespoints
plot 'overhead.dat' using 1:2 linewidth 2 pointtype 7 title 'off', \
     'overhead.dat' using 1:3 linewidth 2 pointtype 5 title 'on', \
     $a with lines dashtype 2 linecolor 1 title 'median off', \
     $b with lines dashtype 2 linecolor 2 title 'median on'
EOF2
  echo "plot.sh: wrote $out/overhead.png" >&2
fi
