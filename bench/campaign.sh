#!/usr/bin/env bash
# Campaigns after CiGri (issue 16) against plain `submit --repeat`: one bag
# of tasks over four pools of different speeds and sizes, 1% of the nodes
# 10x slower, one pool a sink, for each of the seed's ratio algorithms with
# and without finalize. Runs build/bench/campaign/campaign_bench (pure core,
# virtual time: the figures do not depend on the machine's load).
#
#   bench/campaign.sh [--json] [ARGS...]
#
#   --json   stdout: one JSON line per configuration (config = submit_repeat,
#            slow_start, slow_start_no_finalize, two_way_adaptive, ...) with
#            makespan_s, tail_s, max_waiting, sink_tasks, wasted_cpu_s; then
#            one line with tail_ratio, makespan_ratio, sink_share_before_abandon.
#   ARGS     passed to the binary: --tasks N, --round S, --max-waiting N, --seed N
#
# Environment: CAMPAIGN_BENCH, the binary (default
# build/bench/campaign/campaign_bench; built with
# `cmake --build build --target campaign_bench` if missing).
# stderr: a table, the sink verdicts and the ratios.

set -euo pipefail
case "${1:-}" in -h | --help)
  sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0" >&2
  exit 0
  ;;
esac
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${CAMPAIGN_BENCH:-$root/build/bench/campaign/campaign_bench}"
if [[ ! -x "$bin" ]]; then
  echo "building $bin" >&2
  cmake --build "$root/build" -j2 --target campaign_bench >&2
fi
exec "$bin" "$@"
