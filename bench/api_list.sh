#!/usr/bin/env bash
# How fast the HTTP API lists jobs: a server ([http] on, no agents) holds
# JOBS held jobs (default 10,000, submitted pipelined), then curl asks
#   /api/v1/jobs?limit=0  - the whole list, every job in one page,
#   /api/v1/jobs?limit=50 - the newest page (what the dashboard asks),
#   the same page with ?since=N (nothing changed: 304 without a list),
# RUNS times each (default 20) and prints one JSON line with the median and
# the 95th percentile in ms, and the full page's size in bytes:
#   {"jobs":10000,"runs":20,"full_page":{"median_ms":..,"p95_ms":..,"bytes":..},
#    "page_50":{...},"since_unchanged":{...},"target_ms":50,"full_page_under_target":true}
# Issue 18 asks for a 10,000-job list page in under 50 ms.
#
#   bench/api_list.sh [--jobs N] [--runs N]
#
# CLAIMSCHED picks the binary (default ./build/apps/claimsched). Exit status 0,
# 1 if the server did not start or a request failed, 2 on a usage error.
set -uo pipefail

jobs=10000
runs=20
while (($#)); do
  case "$1" in
    --jobs) jobs=$2; shift ;;
    --runs) runs=$2; shift ;;
    -h | --help) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "api_list.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
bin=${CLAIMSCHED:-./build/apps/claimsched}
. "$(dirname "$0")/lib/progress.sh"
[[ -x $bin ]] || { echo "api_list.sh: no binary at $bin (build first, or set CLAIMSCHED)" >&2; exit 2; }
command -v curl >/dev/null || { echo "api_list.sh: needs curl" >&2; exit 2; }

dir=$(mktemp -d /tmp/claimsched-api-bench-XXXXXX)
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
cat >"$dir/cluster.toml" <<TOML
cluster_id = "api-bench"
[listen]
host = "127.0.0.1"
port = 0
[storage]
data_dir = "$dir/server"
[http]
listen = "127.0.0.1:0"
TOML
"$bin" server --config "$dir/cluster.toml" >"$dir/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 200); do
  grep -q "claimsched server http on" "$dir/server.log" && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$dir/server.log" >&2; exit 1; }
  sleep 0.05
done
address=$(sed -n 's/^claimsched server listening on \([^ ]*\).*/\1/p' "$dir/server.log")
http=$(sed -n 's/^claimsched server http on \([^ ]*\).*/\1/p' "$dir/server.log")
[[ -n $address && -n $http ]] || { cat "$dir/server.log" >&2; exit 1; }
# Held jobs wait for nodes that never come: the list holds them all, unchanged.
"$bin" submit --server "$address" --repeat "$jobs" --hold --timeout 120s -- /bin/true >/dev/null || exit 1

# One line per request: "status seconds bytes".
measure() {
  for ((i = 0; i < runs; i++)); do
    curl -s -o /dev/null -w '%{http_code} %{time_total} %{size_download}\n' "$@" || return 1
  done
}
changes=$(curl -s -D - -o /dev/null "http://$http/api/v1/jobs?limit=1" | tr -d '\r' |
  sed -n 's/^X-Claimsched-Changes: //ip')
progress_start api_list
progress_step 0 3 "$jobs jobs held; the whole list, $runs requests"
measure "http://$http/api/v1/jobs?limit=0" >"$dir/full" || exit 1
progress_step 1 3 "a page of 50, $runs requests"
measure "http://$http/api/v1/jobs?limit=50" >"$dir/page" || exit 1
progress_step 2 3 "a page of 50 since an unchanged state, $runs requests"
measure "http://$http/api/v1/jobs?limit=50&since=$changes" >"$dir/since" || exit 1
progress_step 3 3 "done"

python3 - "$dir" "$jobs" "$runs" <<'PY'
import json, statistics, sys
d, jobs, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def stats(name, want):
    rows = [line.split() for line in open(f"{d}/{name}")]
    bad = [r[0] for r in rows if r[0] != want]
    if bad:
        sys.exit(f"api_list.sh: {name}: HTTP {bad[0]} (wanted {want})")
    ms = sorted(float(r[1]) * 1000 for r in rows)
    return {"median_ms": round(statistics.median(ms), 2), "p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 2),
            "bytes": int(rows[0][2])}
out = {"jobs": jobs, "runs": runs, "full_page": stats("full", "200"), "page_50": stats("page", "200"),
       "since_unchanged": stats("since", "304"), "target_ms": 50}
out["full_page_under_target"] = out["full_page"]["median_ms"] < 50
print(json.dumps(out))
PY
