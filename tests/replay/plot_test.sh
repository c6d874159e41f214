#!/usr/bin/env bash
# scripts/replay-plot.sh on two tiny configs: every PNG is written and is a
# PNG; a missing or empty input, or a missing gnuplot, fails with a message
# naming it.
# Usage: tests/replay/plot_test.sh path/to/replay-plot.sh
set -euo pipefail

script=${1:?usage: plot_test.sh path/to/replay-plot.sh}
if ! command -v gnuplot >/dev/null 2>&1; then
  echo "gnuplot not installed: skipped"
  exit 0
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() {
  echo "plot_test: $*" >&2
  exit 1
}

data=$scratch/report
mkdir "$data"
printf 'recorded\nfifo-backfill\n' >"$data/configs"
printf '0\n0\n12\n300\n5400\n' >"$data/recorded.waits"
printf '0\n4\n60\n' >"$data/fifo-backfill.waits"
printf '0 0.25\n43200 0.75\n86400 1\n' >"$data/recorded.utilisation"
printf '0 0.5\n43200 0.5\n86400 0.8\n' >"$data/fifo-backfill.utilisation"
printf 't_s 17 42 others\n0 0.5 0.25 0.25\n43200 1 0 0\n86400 0 0 0\n' >"$data/recorded.user_share"
printf 't_s 42 others\n0 0.6 0.4\n43200 0.1 0.9\n86400 1 0\n' >"$data/fifo-backfill.user_share"

bash "$script" "$data" >"$scratch/out" 2>"$scratch/err" || fail "failed on good data: $(cat "$scratch/err")"
png_magic=$(printf '\x89PNG\r\n\x1a\n' | od -An -tx1)
for png in wait_cdf.png utilisation.png user_share-recorded.png user_share-fifo-backfill.png; do
  [[ -s $data/$png ]] || fail "$png not written"
  [[ $(head -c 8 "$data/$png" | od -An -tx1) == "$png_magic" ]] || fail "$png does not start with the PNG signature"
  grep -qF "$data/$png" "$scratch/out" || fail "$png not listed on stdout"
done

# expect_failure WHAT MESSAGE: the script fails and says MESSAGE on stderr.
expect_failure() {
  local what=$1 message=$2
  if bash "$script" "$data" >/dev/null 2>"$scratch/err"; then fail "$what: succeeded"; fi
  grep -qF "$message" "$scratch/err" || fail "$what: stderr does not say '$message': $(cat "$scratch/err")"
}

mv "$data/fifo-backfill.user_share" "$scratch/kept"
expect_failure "a missing user_share" "fifo-backfill.user_share: missing"
mv "$scratch/kept" "$data/fifo-backfill.user_share"

mv "$data/recorded.waits" "$scratch/kept"
: >"$data/recorded.waits"
expect_failure "an empty waits file" "recorded.waits: empty"
mv "$scratch/kept" "$data/recorded.waits"

# The same data on a PATH with everything the script uses but gnuplot.
tools=$scratch/tools
mkdir "$tools"
for tool in awk cp grep head mktemp mv rm wc; do ln -s "$(command -v "$tool")" "$tools/$tool"; done
if PATH=$tools "$(command -v bash)" "$script" "$data" >/dev/null 2>"$scratch/err"; then fail "no gnuplot: succeeded"; fi
grep -qF "gnuplot not found" "$scratch/err" || fail "no gnuplot: stderr does not say so: $(cat "$scratch/err")"

echo "plot_test: ok"
