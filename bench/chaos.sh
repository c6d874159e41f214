#!/usr/bin/env bash
# A fault test in the manner of Jepsen over a whole HA cluster on loopback:
# 3 etcd members, 3 `claimsched server` members ([ha], ack "one"), 4 agents;
# jobs whose tasks log their runs; seeded random kill -9 / pause / resume of
# server members, agents and one etcd member. Prints one JSON line:
#   {"seed":1,"minutes":10,"faults_injected":...,"jobs_acknowledged":...,
#    "lost_acked_jobs":0,"duplicate_runs":0,"overcommits":0,"overlapping_runs":0,...,"passed":true}
# and exits 0 only if nothing acknowledged was lost, nothing ran twice and no
# node was over-committed (bench/chaos.py has the checker's rules).
#
#   bench/chaos.sh --seed S --minutes M [--json] [--dir DIR] [--keep] [--drain SECONDS]
#
# CLAIMSCHED_BIN picks the binary (default build/apps/claimsched). Every
# process is started on free loopback ports and stopped by PID; the run's
# directory (logs, every task's run lines, the fault log) is kept when the
# run fails.
exec python3 "$(dirname "$0")/chaos.py" "$@"
