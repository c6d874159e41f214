#!/usr/bin/env bash
# End-to-end throughput of a cluster of processes on this machine: jobs of one
# /bin/true task each go client -> server -> agent -> a real process -> back,
# for each agents x slots layout. Prints one JSON object per layout:
#   {"agents":4,"slots":8,"jobs":20000,"succeeded":...,"submit_per_sec":...,
#    "complete_per_sec":...,"latency_p50_ms":...,"latency_p99_ms":...,
#    "placement_p50_ms":...,"placement_p99_ms":...}
# latency is submit -> the task's end as the server saw it; placement is
# submit -> the task running.
#
#   bench/e2e_throughput.sh [--jobs N] [--layouts "1x32 4x8"] [--warmup N]
#
# Uses deploy/local-cluster.sh (CLAIMSCHED_BIN picks the binary) and
# build/bench/e2e/e2e_submit (CLAIMSCHED_E2E_SUBMIT); build both in Release first. Each layout gets a fresh cluster in a temporary directory.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
export CLAIMSCHED_BIN="${CLAIMSCHED_BIN:-$here/build/apps/claimsched}"
submit="${CLAIMSCHED_E2E_SUBMIT:-$here/build/bench/e2e/e2e_submit}"
jobs=20000
warmup=200
layouts="1x32 4x8"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --jobs) jobs="$2"; shift 2 ;;
    --layouts) layouts="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    *) echo "e2e_throughput: unknown option $1" >&2; exit 2 ;;
  esac
done

for layout in $layouts; do
  agents="${layout%x*}"
  slots="${layout#*x}"
  dir="$(mktemp -d /tmp/claimsched-e2e-XXXXXX)"
  export CLAIMSCHED_LOCAL_DIR="$dir"
  trap '"$here/deploy/local-cluster.sh" stop >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
  "$here/deploy/local-cluster.sh" start --agents "$agents" --slots "$slots" >/dev/null
  server="$(cat "$dir/address")"
  # Warm up (first connections, RocksDB's first files), then measure.
  "$submit" --server "$server" --jobs "$warmup" -- /bin/true >/dev/null
  result="$("$submit" --server "$server" --jobs "$jobs" -- /bin/true)"
  echo "{\"agents\":$agents,\"slots\":$slots,${result#\{}"
  "$here/deploy/local-cluster.sh" stop >/dev/null
  rm -rf "$dir"
  trap - EXIT
done
