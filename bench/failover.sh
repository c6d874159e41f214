#!/usr/bin/env bash
# Failover time of an HA partition under load: 3 `claimsched server` members
# over etcd, one partition whose agent hosts 1,000 simulated nodes with
# 100,000 running allocations; the owner is killed (kill -9) at least 20
# times and a probe job measures owner death -> first placement by the new
# owner. Also the submit rate with [ha] ack "one" as a ratio to a single
# durable server measured in the same run. Prints one JSON line:
#   {"failover_p50_ms":...,"failover_p99_ms":...,"failover_max_ms":...,
#    "lost_acked_jobs":0,"duplicate_runs":0,"overcommits":0,
#    "replicated_submit_ratio":...,...}
# and exits 1 if an acknowledged job was lost, an allocation ran twice or a
# node was over-committed.
#
#   bench/failover.sh [--json] [--kills 20] [--nodes 1000] [--allocations 100000]
#                     [--submit-jobs 3000] [--etcd-members 1] [--dir DIR] [--keep]
#
# CLAIMSCHED_BIN picks the binary (default build/apps/claimsched, Release).
# Every process is started on free loopback ports and stopped by PID.
exec python3 "$(dirname "$0")/failover.py" "$@"
