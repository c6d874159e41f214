#!/usr/bin/env bash
# The shared KTH SP2 trace (../shared/traces) replayed under the four
# configurations of deploy/replay/ — no backfill, fair share, EASY
# backfilling, EASY with fair share — beside the schedule the machine itself
# recorded (issue 14).
#
#   bench/replay_kth.sh [--plot DIR] [--csv FILE] [--limit N] [ARGS...]
#
# stdout: claimsched replay's --json object: the first configuration's
# figures at the top level (jobs, skipped, jobs_per_wall_sec, makespan_s,
# utilisation, wait_mean_s, wait_p95_s, bounded_slowdown_mean, jain_users,
# preemptions, recorded, ...), every configuration's under "configs".
# stderr: the same as a table. ARGS go to claimsched replay (--plot DIR
# writes the PNGs, --csv FILE a row per job per configuration).
#
# Environment: CLAIMSCHED_BIN (default build/apps/claimsched), KTH_TRACE
# (default ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz beside the checkout).
# The fair-share configurations run a policy cycle at most once a minute of
# the trace's 333 days, where the server would (its input changed or a timer
# passed): about 50,000 cycles each.

set -euo pipefail
case "${1:-}" in -h | --help)
  sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0" >&2
  exit 0
  ;;
esac
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${CLAIMSCHED_BIN:-$root/build/apps/claimsched}"
trace="${KTH_TRACE:-$root/../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz}"
[[ -x "$bin" ]] || { echo "replay_kth: $bin is not built (cmake --build build --target claimsched)" >&2; exit 2; }
[[ -r "$trace" ]] || { echo "replay_kth: cannot read the trace $trace (set KTH_TRACE)" >&2; exit 2; }
configs=(--config "$root/deploy/replay/kth-fifo.toml" --config "$root/deploy/replay/kth-fair.toml"
  --config "$root/deploy/replay/kth-easy.toml" --config "$root/deploy/replay/kth-easy-fair.toml")
json="$(mktemp)"
trap 'rm -f "$json"' EXIT
"$bin" replay "$trace" "${configs[@]}" --json --quiet "$@" >"$json"
python3 - "$json" >&2 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cols = [(c["label"], c) for c in d["configs"]] + ([("recorded", d["recorded"])] if d.get("recorded") else [])
rows = [("jobs run", "jobs", "{:,}"), ("makespan (d)", "makespan_s", "{:.1f}", 86400), ("utilisation", "utilisation", "{:.1%}"),
        ("wait mean (h)", "wait_mean_s", "{:.2f}", 3600), ("wait median (min)", "wait_median_s", "{:.1f}", 60),
        ("wait p95 (h)", "wait_p95_s", "{:.1f}", 3600), ("wait p99 (h)", "wait_p99_s", "{:.1f}", 3600),
        ("bounded slowdown mean", "bounded_slowdown_mean", "{:.1f}"), ("bounded slowdown p95", "bounded_slowdown_p95", "{:.1f}"),
        ("Jain (users)", "jain_users", "{:.3f}"), ("preemptions", "preemptions", "{:,}")]
print("%-24s" % "" + "".join("%16s" % n for n, _ in cols))
for r in rows:
    div = r[3] if len(r) > 3 else 1
    print("%-24s" % r[0] + "".join("%16s" % r[2].format(c[r[1]] / div if div != 1 else c[r[1]]) for _, c in cols))
print("%-24s" % "jobs/s (wall)" + "".join("%16s" % ("{:,.0f}".format(c["jobs_per_wall_sec"]) if "jobs_per_wall_sec" in c else "") for _, c in cols))
PY
cat "$json"
