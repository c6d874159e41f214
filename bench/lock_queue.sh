#!/usr/bin/env bash
# Ganeti's predictive queue against fifo (issue 15): the same contended lock
# workload under both orders at the same running limit, then predictive over
# a sweep of aging_k. Runs build/bench/lock_queue/lock_queue (pure core,
# virtual time: the figures do not depend on the machine's load).
#
#   bench/lock_queue.sh [--json] [ARGS...]
#
#   --json   stdout: one JSON line per mode (mode = fifo | predictive) with
#            jobs_per_sec, waiting_transitions, queue_wait_mean_ms,
#            queue_wait_p99_ms, queue_wait_max_ms, oldest_passed_over_ticks,
#            then one line per aging_k of the sweep ("sweep":"aging_k").
#   ARGS     passed to the binary: --jobs N, --running-limit N,
#            --arrival-rate JOBS_PER_S, --runtime S, --aging-tick S,
#            --aging-k K, --sweep K,K,..., --seed N
#
# Environment: LOCK_QUEUE, the binary (default build/bench/lock_queue/lock_queue;
# built with `cmake --build build --target lock_queue` if missing).
# stderr: a table and the predictive/fifo ratios.

set -euo pipefail
case "${1:-}" in -h | --help)
  sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0" >&2
  exit 0
  ;;
esac
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${LOCK_QUEUE:-$root/build/bench/lock_queue/lock_queue}"
if [[ ! -x "$bin" ]]; then
  echo "building $bin" >&2
  cmake --build "$root/build" -j2 --target lock_queue >&2
fi
exec "$bin" "$@"
