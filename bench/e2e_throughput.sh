#!/usr/bin/env bash
# End-to-end throughput of a cluster of processes on this machine: jobs of one
# /bin/true task each go client -> server -> agent -> a real process -> back,
# for each agents x slots layout. Prints one JSON object per layout:
#   {"agents":4,"slots":8,"jobs":20000,"succeeded":...,"submit_per_sec":...,
#    "complete_per_sec":...,"latency_p50_ms":...,"latency_p99_ms":...,
#    "placement_p50_ms":...,"placement_p99_ms":...,
#    "spawn_ceiling_per_sec":...,"ratio_to_ceiling":...,
#    "server_cpu_us_per_job":...,"agent_cpu_us_per_job":...,
#    "agent_children_cpu_us_per_job":...}
# latency is submit -> the task's end as the server saw it; placement is
# submit -> the task running. spawn_ceiling_per_sec is the machine's
# process-start ceiling (build/bench/e2e/spawn_ceiling: posix_spawn + wait of
# /bin/true, 8 in flight), the mean of one run right before and one right
# after the layout's measured jobs; ratio_to_ceiling is complete_per_sec over
# it. The CPU figures are the processes' own user + system time (/proc) over
# the measured jobs, per job: the server's, the agents' (summed), and what the
# agents' children used (each task's keeper and the task itself).
#
#   bench/e2e_throughput.sh [--jobs N] [--layouts "1x32 4x8"] [--warmup N] [--rate R] [--tls]
#                           [--simulate [--node-slots S]]
#
# --tls runs each layout twice, with plain TCP and then with mutual TLS
# between every member (local-cluster.sh start --tls), and prints after the
# two lines (each with "tls": false/true) one more per layout:
#   {"agents":4,"slots":16,"complete_per_sec_plain":...,"complete_per_sec_tls":...,
#    "submit_per_sec_plain":...,"submit_per_sec_tls":...,"tls_ratio":...}
# tls_ratio is complete_per_sec with TLS over without.
#
# --rate R offers R jobs per second (open loop) instead of submitting as fast
# as jobs are acknowledged: placement_p50/p99 are then submit -> running at
# that rate (offered_per_sec says which).
#
# --simulate measures the scheduler and the protocol without the kernel: the
# same client, server and agents, but each agent hosts simulated nodes
# (local-cluster.sh start --simulate N, i.e. `claimsched agent --simulate N`)
# whose tasks start no process and end at once. A layout AxN then means A
# agents of N simulated nodes each (S slots each, --node-slots, default 32),
# and each line also has "nodes" (A x N) and "simulate": true. There is no
# process start to compare with, so spawn_ceiling_per_sec,
# spawn_ceiling_before_after and ratio_to_ceiling are left out (the ceiling
# is not run); agent_children_cpu_us_per_job is 0 there. It composes with
# --rate, --jobs and --tls.
#
# Uses deploy/local-cluster.sh (CLAIMSCHED_BIN picks the binary) and
# build/bench/e2e/e2e_submit (CLAIMSCHED_E2E_SUBMIT); build both in Release first. Each layout gets a fresh cluster in a temporary directory.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
export CLAIMSCHED_BIN="${CLAIMSCHED_BIN:-$here/build/apps/claimsched}"
submit="${CLAIMSCHED_E2E_SUBMIT:-$here/build/bench/e2e/e2e_submit}"
ceiling="${CLAIMSCHED_SPAWN_CEILING:-$here/build/bench/e2e/spawn_ceiling}"
ticks_per_sec="$(getconf CLK_TCK)"

# "self children" CPU ticks of the processes whose pid files are given.
cpu_ticks() {
  local self=0 children=0 pid stat
  for pidfile in "$@"; do
    pid="$(cat "$pidfile")"
    stat="$(cat "/proc/$pid/stat")"
    # Fields after the command's closing parenthesis: 14-17 are utime,
    # stime, cutime, cstime (the 12th to 15th after it).
    read -r -a f <<<"${stat##*) }"
    self=$((self + f[11] + f[12]))
    children=$((children + f[13] + f[14]))
  done
  echo "$self $children"
}
jobs=20000
warmup=200
layouts="1x32 4x8"
rate=()
tls_modes=(plain)
simulate=0
node_slots=32
while [[ $# -gt 0 ]]; do
  case "$1" in
    --jobs) jobs="$2"; shift 2 ;;
    --layouts) layouts="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --rate) rate=(--rate "$2"); shift 2 ;;
    --tls) tls_modes=(plain tls); shift ;;
    --simulate) simulate=1; shift ;;
    --node-slots) node_slots="$2"; shift 2 ;;
    -h|--help)
      # The comment at the top of this file, without its '#'s.
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0 ;;
    *) echo "e2e_throughput: unknown option $1 (--help lists them)" >&2; exit 2 ;;
  esac
done

# Every cluster's directory is removed at the end, not after its run: on an
# ext4 without a journal (this machine's), the kernel skips inodes deleted in
# the last 1-6 minutes when it allocates new ones, so the next run's agents,
# which then created a directory and two files per task (now one directory,
# made by each task's keeper), paid several times their CPU in inode
# allocation right after the previous run's ~9,000 inodes went (see
# bench/README.md, "With TLS").
finished_dirs=()
dir=""
cleanup() {
  if [[ -n "$dir" ]]; then "$here/deploy/local-cluster.sh" stop >/dev/null 2>&1 || true; finished_dirs+=("$dir"); fi
  if [[ "${#finished_dirs[@]}" -gt 0 ]]; then rm -rf "${finished_dirs[@]}"; fi
}
trap cleanup EXIT

for layout in $layouts; do
  agents="${layout%x*}"
  slots="${layout#*x}"
  # --simulate: AxN is A agents of N simulated nodes, each of --node-slots.
  per_agent=1
  if [[ "$simulate" == 1 ]]; then per_agent="$slots"; slots="$node_slots"; fi
  lines=()
  for mode in "${tls_modes[@]}"; do
  dir="$(mktemp -d /tmp/claimsched-e2e-XXXXXX)"
  export CLAIMSCHED_LOCAL_DIR="$dir"
  start_flags=()
  if [[ "$simulate" == 1 ]]; then start_flags+=(--simulate "$per_agent"); fi
  unset CLAIMSCHED_TLS_CA CLAIMSCHED_TLS_CERT CLAIMSCHED_TLS_KEY
  if [[ "$mode" == tls ]]; then start_flags+=(--tls); fi
  "$here/deploy/local-cluster.sh" start --agents "$agents" --slots "$slots" "${start_flags[@]}" >/dev/null
  if [[ "$mode" == tls ]]; then
    export CLAIMSCHED_TLS_CA="$dir/tls/ca.pem" CLAIMSCHED_TLS_CERT="$dir/tls/client.pem" \
      CLAIMSCHED_TLS_KEY="$dir/tls/client.key"
  fi
  server="$(cat "$dir/address")"
  # Warm up (first connections, RocksDB's first files), then measure.
  "$submit" --server "$server" --jobs "$warmup" -- /bin/true >/dev/null
  # No process starts with --simulate: no ceiling to compare with.
  ceiling_before='{"spawn_ceiling_per_sec":0}'
  if [[ "$simulate" == 0 ]]; then ceiling_before="$("$ceiling")"; fi
  read -r server_before _ <<<"$(cpu_ticks "$dir/server.pid")"
  read -r agents_before children_before <<<"$(cpu_ticks "$dir"/agent-*.pid)"
  result="$("$submit" --server "$server" --jobs "$jobs" "${rate[@]}" -- /bin/true)"
  read -r server_after _ <<<"$(cpu_ticks "$dir/server.pid")"
  read -r agents_after children_after <<<"$(cpu_ticks "$dir"/agent-*.pid)"
  ceiling_after="$ceiling_before"
  if [[ "$simulate" == 0 ]]; then ceiling_after="$("$ceiling")"; fi
  line="$(python3 - "$agents" "$slots" "$jobs" "$ticks_per_sec" "$result" "$ceiling_before" "$ceiling_after" \
    "$((server_after - server_before))" "$((agents_after - agents_before))" \
    "$((children_after - children_before))" "$mode" "${#tls_modes[@]}" "$simulate" "$per_agent" <<'PY'
import json, sys
agents, slots, jobs, hz = (int(x) for x in sys.argv[1:5])
mode, modes = sys.argv[11], int(sys.argv[12])
simulate, per_agent = sys.argv[13] == "1", int(sys.argv[14])
result = json.loads(sys.argv[5])
ceilings = [json.loads(sys.argv[6])["spawn_ceiling_per_sec"], json.loads(sys.argv[7])["spawn_ceiling_per_sec"]]
server, agent, children = (int(x) for x in sys.argv[8:11])
ceiling = sum(ceilings) / 2
us_per_job = lambda ticks: round(ticks * 1e6 / hz / jobs, 1)
out = {"agents": agents, "slots": slots}
if simulate:
    out.update({"simulate": True, "nodes": agents * per_agent})
if modes > 1:
    out["tls"] = mode == "tls"
out.update(result)
if not simulate:
    out.update({"spawn_ceiling_per_sec": round(ceiling, 1),
                "spawn_ceiling_before_after": ceilings,
                "ratio_to_ceiling": round(result["complete_per_sec"] / ceiling, 3) if ceiling > 0 else None})
out.update({"server_cpu_us_per_job": us_per_job(server),
            "agent_cpu_us_per_job": us_per_job(agent),
            "agent_children_cpu_us_per_job": us_per_job(children)})
print(json.dumps(out))
PY
)"
  echo "$line"
  lines+=("$line")
  "$here/deploy/local-cluster.sh" stop >/dev/null
  finished_dirs+=("$dir")
  dir=""
  done
  if [[ "${#tls_modes[@]}" -gt 1 ]]; then
    python3 - "${lines[@]}" <<'PY'
import json, sys
plain, tls = (json.loads(x) for x in sys.argv[1:3])
print(json.dumps({"agents": plain["agents"], "slots": plain["slots"],
                  **({"nodes": plain["nodes"]} if "nodes" in plain else {}),
                  "complete_per_sec_plain": plain["complete_per_sec"], "complete_per_sec_tls": tls["complete_per_sec"],
                  "submit_per_sec_plain": plain["submit_per_sec"], "submit_per_sec_tls": tls["submit_per_sec"],
                  "tls_ratio": round(tls["complete_per_sec"] / plain["complete_per_sec"], 3)
                  if plain["complete_per_sec"] else None}))
PY
  fi
done
