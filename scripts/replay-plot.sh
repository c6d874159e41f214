#!/usr/bin/env bash
# Draws the figures of a `claimsched replay` report with gnuplot.
# Usage: scripts/replay-plot.sh DIR
#
# Inputs, written by the replay command into DIR:
#   configs               one config label per line, in order (file-name safe;
#                         `recorded` is the trace's own schedule, drawn like
#                         the others). Blank lines are ignored.
#   <LABEL>.waits         one wait in seconds per line, ascending (jobs that ran).
#   <LABEL>.utilisation   lines `t_s value`: a bucket's start on the trace's
#                         clock (seconds) and the busy fraction of the
#                         capacity in it (0..1).
#   <LABEL>.user_share    a header line `t_s user1 user2 ... others`, then per
#                         bucket `t_s share1 share2 ...` (0..1, summing to 1
#                         or all 0 where nothing ran).
# Outputs, in DIR:
#   wait_cdf.png               one CDF of the waits per config (log x).
#   utilisation.png            utilisation over time, one line per config
#                              (x in days on the trace's clock).
#   user_share-<LABEL>.png     per config, each user's share over time, stacked.
# A missing gnuplot, or a missing or empty input, is an error naming it.
set -euo pipefail

die() {
  echo "replay-plot: $*" >&2
  exit 1
}

if (($# != 1)); then
  echo "usage: $0 DIR" >&2
  exit 2
fi
dir=$1

command -v gnuplot >/dev/null 2>&1 || die "gnuplot not found (Debian: apt-get install gnuplot-nox, or scripts/bootstrap.sh)"
[[ -d $dir ]] || die "$dir: no such directory"

# Non-empty, with at least one line that is not a header.
require_data() {
  local file=$1 header_lines=$2
  [[ -f $file ]] || die "$file: missing"
  (($(grep -c '[^[:space:]]' "$file" || true) > header_lines)) || die "$file: empty (no data line)"
}

require_data "$dir/configs" 0
labels=()
while IFS= read -r label || [[ -n $label ]]; do
  [[ $label =~ ^[[:space:]]*$ ]] && continue
  # The label goes into file names and into gnuplot's quoted strings.
  [[ $label =~ ^[A-Za-z0-9._+=,-]+$ ]] || die "$dir/configs: label '$label' is not file-name safe"
  labels+=("$label")
done <"$dir/configs"

for label in "${labels[@]}"; do
  require_data "$dir/$label.waits" 0
  require_data "$dir/$label.utilisation" 0
  require_data "$dir/$label.user_share" 1
  (($(head -n 1 "$dir/$label.user_share" | wc -w) >= 2)) ||
    die "$dir/$label.user_share: the header names no user (want 't_s user1 ... others')"
done

# gnuplot runs in a scratch directory, so its strings hold only the
# validated labels; the PNGs move to DIR when all are drawn.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A series row is a bucket's start, drawn as a step held until the next row:
# a closing row one bucket after the last keeps the last bucket visible.
close_last_bucket() {
  local from=$1 header_lines=$2 to=$3
  awk -v header_lines="$header_lines" '
    NR <= header_lines { print; next }
    NF == 0 { next }
    { print; rows++; previous_t = last_t; last_t = $1; last = $0 }
    END {
      if (rows == 0) exit
      $0 = last
      $1 = last_t + (rows > 1 ? last_t - previous_t : 1)
      print
    }' "$from" >"$to"
}
for label in "${labels[@]}"; do
  cp "$dir/$label.waits" "$work/"
  close_last_bucket "$dir/$label.utilisation" 0 "$work/$label.utilisation"
  close_last_bucket "$dir/$label.user_share" 1 "$work/$label.user_share"
done

terminal='set terminal pngcairo size 1000,600 noenhanced'
cdf_plots=()
utilisation_plots=()
for label in "${labels[@]}"; do
  ran=$(grep -c '[^[:space:]]' "$dir/$label.waits")
  cdf_plots+=("'$label.waits' using (\$1 < 1 ? 1 : \$1):((\$0 + 1) / $ran.0) with steps lw 2 title '$label ($ran jobs)'")
  utilisation_plots+=("'$label.utilisation' using (\$1 / 86400.0):2 with steps lw 2 title '$label'")
done
join() {
  local IFS=,
  echo "$*"
}

{
  echo "$terminal"
  echo "set grid"
  echo "set key bottom right"

  echo "set output 'wait_cdf.png'"
  echo "set title 'Wait CDF (waits of 0 s plotted at 1 s)'"
  echo "set logscale x"
  echo "set xlabel 'wait (s, log scale)'"
  echo "set ylabel 'fraction of the jobs that ran'"
  echo "set yrange [0:1]"
  echo "plot $(join "${cdf_plots[@]}")"

  echo "unset logscale x"
  echo "set output 'utilisation.png'"
  echo "set title 'Utilisation'"
  echo "set xlabel 'days since the trace started'"
  echo "set ylabel 'busy fraction of the capacity'"
  echo "set yrange [0:1.05]"
  echo "set key outside right top vertical"
  echo "plot $(join "${utilisation_plots[@]}")"

  echo "set ylabel 'share of the CPU-seconds used'"
  echo "set yrange [0:1]"
  echo "set key default"
  echo "set key outside right top vertical"
  echo "set style fill solid 1.0 noborder"
  for label in "${labels[@]}"; do
    columns=$(head -n 1 "$dir/$label.user_share" | wc -w)
    echo "set output 'user_share-$label.png'"
    echo "set title 'Share of the CPU used, per user: $label'"
    # Stacked: the running sums of the shares, largest first, each filled
    # down to 0 over the ones before it; steps, as each value holds for its
    # whole bucket.
    echo "plot for [i=$columns:2:-1] '$label.user_share' using (\$1 / 86400.0):(sum [c=2:i] column(c)) with fillsteps title columnheader(i)"
  done
  echo "unset output"
} | (cd "$work" && gnuplot) || die "gnuplot failed on the data in $dir"
mv "$work"/*.png "$dir"/

echo "$dir/wait_cdf.png"
echo "$dir/utilisation.png"
for label in "${labels[@]}"; do echo "$dir/user_share-$label.png"; done
