#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz/README.md) for M minutes each, two at
# a time (the machine's cores are shared), after building them (build-fuzz).
# Prints one line per target; with --json one JSON object per line:
#   {"target":"wire","seconds":600,"execs":...,"execs_per_second":...,
#    "crashes":0,"hangs":0,"leaks":0,"ooms":0,"coverage":...,"corpus_units":...,
#    "peak_rss_mb":...,"log":"...","artifacts":[]}
# Exit status 1 when any target crashed, hung, leaked or ran out of memory;
# the input that did is in "artifacts", replayed by running the target on it.
# Usage: bench/fuzz.sh --minutes M [--json] [--jobs N] [--only a,b]
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=""
args=()
while (($#)); do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --json) args+=(--json); shift ;;
    --jobs|--only) args+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
[[ "$minutes" =~ ^[0-9]+$ && "$minutes" -gt 0 ]] || { echo "fuzz.sh: --minutes M (a positive integer) is required" >&2; exit 2; }
scripts/bootstrap.sh
exec tests/fuzz/run.sh --seconds $((minutes * 60)) --jobs 2 "${args[@]}"
