#!/usr/bin/env bash
# A claimsched cluster on this machine: one server and N agents on 127.0.0.1,
# each a separate process with its state and log under one directory.
#
#   deploy/local-cluster.sh start [--agents N] [--slots S] [--dir DIR] [--port P] [--config FILE]
#                                 [--members M] [--http] [--tls] [--simulate N]
#   deploy/local-cluster.sh status
#   deploy/local-cluster.sh stop
#
# --members M (HA): an etcd member and M `claimsched server` members with
# [ha] instead of the one server (each its own port, data directory and log:
# member-I.*); agents register with every member and the printed address
# lists them all. Needs etcd (Debian's etcd-server).
#
# --http: the server (each member) and every agent also serve GET /metrics
# (Prometheus) on a free loopback port, the server its dashboard at / and
# its JSON API under /api/v1/ too; written to DIR/http_address (a
# member's to DIR/member-I.http_address, member-1's also to
# DIR/http_address; agent I's to DIR/agent-I.http_address).
#
# --tls: mutual TLS between every member (deploy/tls-certs.sh makes a CA and
# the certificates under DIR/tls, kept across restarts): the server(s) with
# DIR/tls/server.pem, agent I with DIR/tls/agent-I.pem. start then prints the
# CLAIMSCHED_TLS_CA/_CERT/_KEY exports the client needs (DIR/tls/client.pem).
#
# --simulate N: each agent hosts N simulated nodes (`claimsched agent
# --simulate N`, named local-I-1 .. local-I-N, each of cpu=S) whose tasks
# run no process and end after their `--duration` (at once without one);
# start waits for all agents x N nodes.
#
# start prints the address; point the client at it with
#   export CLAIMSCHED_SERVER=127.0.0.1:PORT
# Each agent offers cpu=S (S one-cpu task slots) and S GiB of memory. The
# binary is $CLAIMSCHED_BIN, else build/apps/claimsched. The directory
# (default $CLAIMSCHED_LOCAL_DIR, else /tmp/claimsched-local) keeps the
# server's data, each agent's state and task outputs, the logs and the PIDs;
# stop leaves it, so a second start resumes the same cluster.
#
# --config FILE: the server runs that cluster config (its data still under
# DIR) and the agents read its [agent] section (pool, labels, on_stop, ...).
#
# stop drains: each agent takes no new work and leaves its running tasks
# running; the next start adopts them, so they finish once and use no retry
# (`claimsched agent --on-stop`). start starts what is not running: agents
# left from before (say, after the server alone was killed) are kept, not
# started a second time.
#
# Logs (server.log, agent-I.log) are appended across restarts, each start
# marked by a "--- local-cluster start" line; their level is
# $CLAIMSCHED_LOG_LEVEL (trace, debug, info, warn, error), default info.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${CLAIMSCHED_BIN:-$here/build/apps/claimsched}"
dir="${CLAIMSCHED_LOCAL_DIR:-/tmp/claimsched-local}"
log_level="${CLAIMSCHED_LOG_LEVEL:-info}"
agents=3
slots=4
port=0
config=""
members=0
http=0
tls=0
simulate=0

die() { echo "local-cluster: $*" >&2; exit 1; }

cmd="${1:-}"
[[ -n "$cmd" ]] || die "usage: $0 start|status|stop [--agents N] [--slots S] [--dir DIR] [--port P] [--config FILE]"
shift
while [[ $# -gt 0 ]]; do
  case "$1" in
    --agents) agents="$2"; shift 2 ;;
    --slots) slots="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --config) config="$2"; shift 2 ;;
    --members) members="$2"; shift 2 ;;
    --http) http=1; shift ;;
    --tls) tls=1; shift ;;
    --simulate) simulate="$2"; shift 2 ;;
    *) die "unknown option $1" ;;
  esac
done
[[ "$agents" =~ ^[0-9]+$ && "$agents" -ge 1 ]] || die "--agents must be a positive number, got '$agents'"
[[ "$slots" =~ ^[0-9]+$ && "$slots" -ge 1 ]] || die "--slots must be a positive number, got '$slots'"
[[ "$port" =~ ^[0-9]+$ && "$port" -le 65535 ]] || die "--port must be 0-65535, got '$port'"
[[ "$members" =~ ^[0-9]+$ && "$members" -le 9 ]] || die "--members must be 0-9, got '$members'"
[[ "$simulate" =~ ^[0-9]+$ ]] || die "--simulate must be a number of nodes, got '$simulate'"

alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# --tls: the flags for member NAME (server, agent-I), and the client's
# environment for this script's own client calls.
tls_args() {
  if [[ "$tls" == 1 ]]; then echo "--tls-ca $dir/tls/ca.pem --tls-cert $dir/tls/$1.pem --tls-key $dir/tls/$1.key"; fi
}
client_env() {
  if [[ "$tls" == 1 ]]; then
    export CLAIMSCHED_TLS_CA="$dir/tls/ca.pem" CLAIMSCHED_TLS_CERT="$dir/tls/client.pem" \
      CLAIMSCHED_TLS_KEY="$dir/tls/client.key"
  fi
}

simulate_args() { if [[ "$simulate" -gt 0 ]]; then echo "--simulate $simulate"; fi; }
# Nodes start waits for: one per agent, or --simulate N per agent.
expected_nodes() { echo $((agents * (simulate > 0 ? simulate : 1))); }

# --http: the server flag, and where a server's log says it listens for HTTP.
http_args() { if [[ "$http" == 1 ]]; then echo "--http 127.0.0.1:0"; fi; }
# Waits for LOG (read from byte FROM) to name the HTTP address of a server
# (or, with WHO=agent, an agent); writes it to FILE.
record_http_address() {
  local log="$1" from="$2" file="$3" who="${4:-server}" a
  [[ "$http" == 1 ]] || return 0
  for _ in $(seq 1 100); do
    a="$(tail -c +"$from" "$log" | sed -n "s/^claimsched $who http on \([^ ]*\) .*/\1/p" | head -1)"
    if [[ -n "$a" ]]; then echo "$a" >"$file"; return 0; fi
    sleep 0.1
  done
  die "no HTTP address in $log within 10s"
}

server_address() {
  [[ -f "$dir/address" ]] || return 1
  cat "$dir/address"
}

# A loopback port nothing listens on, below the ephemeral range (kept in
# FILE so a restart reuses it).
port_in() {
  local file="$1" p
  if [[ -f "$file" ]]; then cat "$file"; return; fi
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 12000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p" >"$file"; echo "$p"; return; fi
  done
  die "no free port"
}

# etcd and M server members ([ha]); sets `address` to every member's.
start_members() {
  command -v etcd >/dev/null || die "--members needs etcd (apt-get install etcd-server)"
  local client="$etcd_client" peer
  peer="$(port_in "$dir/etcd.peer-port")"
  nohup etcd --name local --data-dir "$dir/etcd" --listen-client-urls "http://127.0.0.1:$client" \
    --advertise-client-urls "http://127.0.0.1:$client" --listen-peer-urls "http://127.0.0.1:$peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer" --initial-cluster "local=http://127.0.0.1:$peer" \
    --heartbeat-interval 25 --election-timeout 250 --log-level warn >"$dir/etcd.log" 2>&1 &
  echo $! >"$dir/etcd.pid"
  address=""
  local i p
  for i in $(seq 1 "$members"); do
    p="$(port_in "$dir/member-$i.port")"
    # --etcd: this etcd, also when --config names a file (it needs an [ha] section).
    local from=$(($(stat -c %s "$dir/member-$i.log" 2>/dev/null || echo 0) + 1))
    # shellcheck disable=SC2046
    nohup "$bin" --log-level "$log_level" server --config "$config" --name "member-$i" --port "$p" \
      --data-dir "$dir/member-$i" --etcd "http://127.0.0.1:$client" $(http_args) $(tls_args server) \
      >>"$dir/member-$i.log" 2>&1 &
    echo $! >"$dir/member-$i.pid"
    address="${address:+$address,}127.0.0.1:$p"
    record_http_address "$dir/member-$i.log" "$from" "$dir/member-$i.http_address"
    if [[ "$i" == 1 && "$http" == 1 ]]; then cp "$dir/member-1.http_address" "$dir/http_address"; fi
  done
  echo "$address" >"$dir/address"
  for _ in $(seq 1 200); do
    local view
    view="$("$bin" status --json --server "$address" 2>/dev/null || true)"
    if [[ "$view" == *'"owner":"member'* && "$view" != *'"owner":""'* ]]; then return 0; fi
    for i in $(seq 1 "$members"); do
      alive "$dir/member-$i.pid" || { cat "$dir/member-$i.log" >&2; die "member-$i exited"; }
    done
    sleep 0.1
  done
  die "the members did not elect owners for every partition within 20s (logs in $dir)"
}

start() {
  [[ -x "$bin" ]] || die "no claimsched binary at $bin (build first, or set CLAIMSCHED_BIN)"
  mkdir -p "$dir"
  if alive "$dir/server.pid"; then die "already running (server PID $(cat "$dir/server.pid")); stop it first"; fi
  if alive "$dir/member-1.pid"; then die "already running (member-1 PID $(cat "$dir/member-1.pid")); stop it first"; fi
  if [[ "$members" -gt 0 ]]; then etcd_client="$(port_in "$dir/etcd.client-port")"; fi
  local agent_config=()
  if [[ -z "$config" ]]; then
    config="$dir/cluster.toml"
    cat >"$config" <<EOF
# Written by deploy/local-cluster.sh: one pool, one partition.
cluster_id = "local"
[listen]
host = "127.0.0.1"
port = $port
[storage]
data_dir = "$dir/server"
[timeouts]
node_grace = "5s"
recovery_grace = "10s"
EOF
    if [[ "$members" -gt 0 ]]; then
      printf '[ha]\netcd = ["http://127.0.0.1:%s"]\nlease_ttl = "1s"\n' "$etcd_client" >>"$config"
    fi
  else
    agent_config=(--config "$config")
  fi
  "$bin" config check "$config" >/dev/null || die "$config has problems (see above)"
  if [[ "$tls" == 1 ]]; then
    "$here/deploy/tls-certs.sh" local "$dir/tls" "$agents" || die "cannot make the TLS certificates in $dir/tls"
    client_env
  fi
  # A start that fails half way ends what it started: no stray server keeps
  # the port (or a core) busy.
  trap 'echo "local-cluster: start failed; stopping what was started" >&2; stop >/dev/null' EXIT

  local address=""
  if [[ "$members" -gt 0 ]]; then
    start_members
  else
    # A restarted server keeps its port so the agents (which reconnect) find
    # it; a first one picks a free port unless --port says otherwise.
    local args=(server --config "$config" --data-dir "$dir/server")
    if [[ "$http" == 1 ]]; then args+=(--http 127.0.0.1:0); fi
    # shellcheck disable=SC2207
    if [[ "$tls" == 1 ]]; then args+=($(tls_args server)); fi
    if [[ "$port" == 0 && -f "$dir/address" ]]; then
      local previous
      previous="$(cat "$dir/address")"
      args+=(--port "${previous##*:}")
    else
      args+=(--port "$port")
    fi
    # Logs are appended: a restart keeps what the previous run said.
    local log_from=$(($(stat -c %s "$dir/server.log" 2>/dev/null || echo 0) + 1))
    echo "--- local-cluster start $(date -u +%FT%T.%3NZ)" >>"$dir/server.log"
    nohup "$bin" --log-level "$log_level" "${args[@]}" >>"$dir/server.log" 2>&1 &
    echo $! >"$dir/server.pid"
    for _ in $(seq 1 100); do
      address="$(tail -c +"$log_from" "$dir/server.log" | sed -n 's/^claimsched server listening on \([^ ]*\) .*/\1/p' | head -1)"
      [[ -n "$address" ]] && break
      alive "$dir/server.pid" || { cat "$dir/server.log" >&2; die "the server exited"; }
      sleep 0.1
    done
    [[ -n "$address" ]] || die "the server did not report its address within 10s (see $dir/server.log)"
    address="${address/0.0.0.0/127.0.0.1}"
    echo "$address" >"$dir/address"
    record_http_address "$dir/server.log" "$log_from" "$dir/http_address"
  fi

  local started=()
  for i in $(seq 1 "$agents"); do
    if alive "$dir/agent-$i.pid"; then
      # Left from before (the server alone was stopped or killed): it
      # reconnects by itself. A second one would die on its state's lock.
      echo "local-cluster: agent-$i is still running (PID $(cat "$dir/agent-$i.pid")); keeping it" >&2
      continue
    fi
    local agent_from=$(($(stat -c %s "$dir/agent-$i.log" 2>/dev/null || echo 0) + 1))
    echo "--- local-cluster start $(date -u +%FT%T.%3NZ)" >>"$dir/agent-$i.log"
    # shellcheck disable=SC2046
    nohup "$bin" --log-level "$log_level" agent "${agent_config[@]}" --server "$address" --name "local-$i" \
      --resources "cpu=$slots,memory=${slots}Gi" --state-dir "$dir/agent-$i" $(http_args) $(tls_args "agent-$i") \
      $(simulate_args) \
      >>"$dir/agent-$i.log" 2>&1 &
    echo $! >"$dir/agent-$i.pid"
    started+=("$i")
    record_http_address "$dir/agent-$i.log" "$agent_from" "$dir/agent-$i.http_address" "agent"
  done

  # Ready when every agent's node is up; an agent that exits says why.
  local up=0
  for _ in $(seq 1 100); do
    for i in "${started[@]}"; do
      if ! alive "$dir/agent-$i.pid"; then
        echo "local-cluster: agent-$i exited; the end of $dir/agent-$i.log:" >&2
        tail -n 5 "$dir/agent-$i.log" | sed 's/^/  /' >&2
        die "agent-$i did not start"
      fi
    done
    up="$("$bin" nodes --json --server "$address" 2>/dev/null | grep -o '"alive":true' | wc -l || true)"
    if [[ "$up" -ge "$(expected_nodes)" ]]; then
      trap - EXIT
      echo "local cluster up: server(s) $address, $agents agent(s) of $slots slot(s), state in $dir"
      if [[ "$http" == 1 ]]; then
        echo "metrics: http://$(cat "$dir/http_address")/metrics"
        echo "dashboard: http://$(cat "$dir/http_address")/ (JSON API: http://$(cat "$dir/http_address")/api/v1)"
      fi
      echo "export CLAIMSCHED_SERVER=$address"
      if [[ "$tls" == 1 ]]; then
        echo "export CLAIMSCHED_TLS_CA=$dir/tls/ca.pem CLAIMSCHED_TLS_CERT=$dir/tls/client.pem CLAIMSCHED_TLS_KEY=$dir/tls/client.key"
      fi
      return 0
    fi
    sleep 0.1
  done
  for i in $(seq 1 "$agents"); do
    grep -h -E "\] \[(error|warning|critical)\]" "$dir/agent-$i.log" 2>/dev/null | tail -n 2 | sed "s/^/  agent-$i: /" >&2
  done
  die "only ${up:-0} of $(expected_nodes) node(s) came up within 10s (logs in $dir)"
}

status() {
  # A TLS cluster (certificates left by start --tls): the client needs them.
  if [[ -f "$dir/tls/client.pem" ]]; then tls=1; client_env; fi
  local any=0
  for pidfile in "$dir"/server.pid "$dir"/member-*.pid "$dir"/etcd.pid "$dir"/agent-*.pid; do
    [[ -f "$pidfile" ]] || continue
    local name
    name="$(basename "$pidfile" .pid)"
    if alive "$pidfile"; then
      echo "$name: running (PID $(cat "$pidfile"))"
      any=1
    else
      echo "$name: stopped"
    fi
  done
  [[ $any == 1 ]] || { echo "local cluster: not running (dir $dir)"; return 3; }
  if alive "$dir/server.pid" || alive "$dir/member-1.pid"; then
    "$bin" nodes --server "$(server_address)" || true
  fi
  if compgen -G "$dir/member-*.pid" >/dev/null; then
    "$bin" status --server "$(server_address)" || true
  fi
}

stop() {
  local pids=()
  # Agents first, so the server does not count their nodes as lost; etcd
  # last, after the members revoked their leases on the way out.
  for pidfile in "$dir"/agent-*.pid "$dir"/server.pid "$dir"/member-*.pid; do
    [[ -f "$pidfile" ]] || continue
    if alive "$pidfile"; then
      kill -TERM "$(cat "$pidfile")" 2>/dev/null || true
      pids+=("$(cat "$pidfile")")
    fi
  done
  for _ in $(seq 1 100); do
    local left=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && left=1; done
    [[ $left == 0 ]] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then
      echo "local-cluster: PID $p ignored SIGTERM for 10s; killing it" >&2
      kill -KILL "$p" 2>/dev/null || true
    fi
  done
  if alive "$dir/etcd.pid"; then
    local etcd_pid
    etcd_pid="$(cat "$dir/etcd.pid")"
    kill -TERM "$etcd_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$etcd_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$etcd_pid" 2>/dev/null || true
  fi
  rm -f "$dir"/*.pid
  echo "local cluster stopped (state kept in $dir)"
}

case "$cmd" in
  start) start ;;
  status) status ;;
  stop) stop ;;
  *) die "unknown command '$cmd' (start, status or stop)" ;;
esac
