# Progress of a bench script's rounds on stderr, in the shape of
# `claimsched sim`'s (apps/progress.hpp): on a terminal, a bar per step
# ("LABEL [=====>    ]  3/8  42s  DETAIL"); otherwise a plain line
# ("LABEL: 3/8 after 42s; DETAIL"), which a log keeps readable. Each step
# gets its own line: the runs between steps print to stderr too.
#
# Usage: . "$here/bench/lib/progress.sh"; progress_start LABEL; progress_step DONE TOTAL DETAIL

progress_start() {
  progress_label=$1
  progress_started=$SECONDS
}

progress_step() {
  local done=$1 total=$2 detail=${3:-} elapsed=$((SECONDS - ${progress_started:-0}))
  ((total > 0)) || total=1
  if [[ -t 2 ]]; then
    local width=20 filled=$((done * 20 / total)) bar
    printf -v bar '%*s' "$filled" ''
    bar=${bar// /=}
    ((filled < width)) && bar+='>'
    printf '%s [%-*s] %3d%%  %d/%d  %ds  %s\n' "$progress_label" "$width" "${bar:0:width}" $((done * 100 / total)) \
      "$done" "$total" "$elapsed" "$detail" >&2
  else
    printf '%s: %d/%d after %ds; %s\n' "$progress_label" "$done" "$total" "$elapsed" "$detail" >&2
  fi
}
