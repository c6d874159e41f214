#!/usr/bin/env bash
# What metrics cost the scheduler: `claimsched sim` with metrics off, and
# with `--http` serving /metrics while curl scrapes it every 100 ms (as a
# Prometheus scraping 150 times more often than its default would), alternated in one
# run so both see the same machine. Prints one JSON line:
#   {"placements_per_sec_off":...,"placements_per_sec_on":...,"ratio":...,
#    "scrape_interval_s":0.1,"invariants_ok":true,
#    "rounds":[{"off":...,"on":...,"scrapes":...},...]}
# placements_per_sec_* are the medians over the rounds, ratio = on / off
# (issue 18 asks for at least 0.95); each round has both runs' placements/s
# and the scrapes answered during its metrics-on run.
#
#   bench/metrics_overhead.sh [--rounds N] [--interval SECONDS] [-- EXTRA SIM ARGS...]
#
# EXTRA SIM ARGS go to both runs; without them, --nodes 20000 --tasks
# 4000000: about two seconds of placement on two cores, twenty scrapes'
# worth (sim's default load places in half a second, too short to see).
# CLAIMSCHED picks the binary (default ./build/apps/claimsched). Exit status:
# 0 if every run held its invariants and every metrics-on run was scraped,
# 1 otherwise, 2 on a usage error. Needs curl and python3.
set -uo pipefail

rounds=5
interval=0.1
extra=()
while (($#)); do
  case "$1" in
    --rounds) rounds=$2; shift ;;
    --interval) interval=$2; shift ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "metrics_overhead.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
((${#extra[@]})) || extra=(--nodes 20000 --tasks 4000000)
bin=${CLAIMSCHED:-./build/apps/claimsched}
. "$(dirname "$0")/lib/progress.sh"
[[ -x $bin ]] || { echo "metrics_overhead.sh: no binary at $bin (build first, or set CLAIMSCHED)" >&2; exit 2; }
command -v curl >/dev/null || { echo "metrics_overhead.sh: needs curl" >&2; exit 2; }

per_minute=$(python3 -c "import sys; print(max(1, round(60 / float(sys.argv[1]))))" "$interval")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$work/runs

# Runs one sim with metrics on, scraped every $interval by one curl process
# holding one keep-alive connection (as Prometheus does: a scraper forking a
# process per scrape measured the fork, on two cores ~10% of the sim's
# throughput). Prints the sim's JSON report; the scrapes answered go to
# $work/scrapes.
run_scraped() {
  local err=$work/stderr report=$work/report scraped=$work/scraped
  : >"$err"
  : >"$scraped"
  "$bin" sim --quiet --json --http 127.0.0.1:0 "${extra[@]}" >"$report" 2>"$err" &
  local sim=$!
  local address=""
  while [[ -z $address ]] && kill -0 "$sim" 2>/dev/null; do
    address=$(sed -n 's/^claimsched sim http on \([^ ]*\).*/\1/p' "$err")
    [[ -n $address ]] || sleep 0.01
  done
  local curl_pid=""
  if [[ -n $address ]]; then
    curl -s --rate "$per_minute/m" "http://$address/metrics?scrape=[1-1000000]" >"$scraped" &
    curl_pid=$!
  fi
  wait "$sim"
  local code=$?
  if [[ -n $curl_pid ]]; then
    kill "$curl_pid" 2>/dev/null
    wait "$curl_pid" 2>/dev/null
  fi
  grep -c '^# TYPE claimsched_placements_total ' "$scraped" >"$work/scrapes"
  cat "$report"
  return $code
}

progress_start metrics_overhead
step=0
for ((i = 0; i < rounds; i++)); do
  for mode in off on; do
    if [[ $mode == on ]]; then
      line=$(run_scraped)
      status=$?
      scrapes=$(cat "$work/scrapes")
    else
      line=$("$bin" sim --quiet --json "${extra[@]}")
      status=$?
      scrapes=0
    fi
    if ((status != 0)); then
      echo "metrics_overhead.sh: a run with metrics $mode failed:" >&2
      echo "$line" >&2
    fi
    echo "$mode $scrapes $line" >>"$out"
    progress_step $((++step)) $((2 * rounds)) "round $((i + 1)), metrics $mode: $(python3 -c 'import json,sys; print(round(json.loads(sys.argv[1])["placements_per_sec"]))' "$line" 2>/dev/null) placements/s$([[ $mode == on ]] && echo ", $scrapes scrapes")"
  done
done
python3 - "$out" "$rounds" "$interval" <<'PY'
import json, statistics, sys
path, rounds, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
runs = {"off": [], "on": []}
scrapes = []
ok = True
for line in open(path):
    mode, count, text = line.split(" ", 2)
    try:
        j = json.loads(text)
    except ValueError:
        ok = False
        continue
    runs[mode].append(j["placements_per_sec"])
    ok = ok and j["invariants_ok"]
    if mode == "on":
        scrapes.append(int(count))
off = statistics.median(runs["off"]) if runs["off"] else 0.0
on = statistics.median(runs["on"]) if runs["on"] else 0.0
print(json.dumps({"placements_per_sec_off": round(off), "placements_per_sec_on": round(on),
                  "ratio": round(on / off, 3) if off else 0.0,
                  "scrape_interval_s": interval, "invariants_ok": ok,
                  "rounds": [{"off": round(a), "on": round(b), "scrapes": n}
                             for a, b, n in zip(runs["off"], runs["on"], scrapes)]}))
# A metrics-on run nobody scraped measured nothing.
scraped = all(n > 0 for n in scrapes)
sys.exit(0 if ok and scraped and len(runs["on"]) == rounds and len(runs["off"]) == rounds else 1)
PY
