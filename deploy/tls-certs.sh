#!/usr/bin/env bash
# Certificates for claimsched's mutual TLS ([tls] in deploy/CONFIG.md), made
# with openssl: a cluster CA, and member certificates whose subject's OU is
# the member's role (server, agent or client) and whose CN is its name.
#
#   deploy/tls-certs.sh init DIR                 a CA: DIR/ca.pem, DIR/ca.key (kept if there)
#   deploy/tls-certs.sh issue DIR ROLE NAME      DIR/NAME.pem and DIR/NAME.key, signed by DIR's CA
#   deploy/tls-certs.sh user DIR USER            a client certificate for USER: DIR/USER.pem, DIR/USER.key
#   deploy/tls-certs.sh local DIR [AGENTS]       init, then server, agent-1..AGENTS (default 3) and client
#
# A client certificate's CN is a user: with [auth] on, a client that shows it
# (and no token) acts as that user, who needs a line in the server's tokens
# file (`- USER [ROLES]` for a user without a token; deploy/CONFIG.md).
#
# Keys are EC P-256 without a passphrase, readable by their owner only
# (mode 600); certificates are valid for 825 days. The private CA key signs
# every member: keep it off the members' machines in production.
set -euo pipefail

die() { echo "tls-certs: $*" >&2; exit 1; }
command -v openssl >/dev/null || die "needs openssl"

init() {
  local dir="$1"
  mkdir -p "$dir"
  [[ -f "$dir/ca.pem" && -f "$dir/ca.key" ]] && return 0
  (umask 077; openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/ca.key" 2>/dev/null)
  openssl req -x509 -new -key "$dir/ca.key" -sha256 -days 3650 -subj "/O=claimsched/CN=claimsched cluster CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$dir/ca.pem" 2>/dev/null || die "cannot create the CA in $dir"
}

issue() {
  local dir="$1" role="$2" name="$3"
  [[ "$role" == server || "$role" == agent || "$role" == client ]] || die "role must be server, agent or client, got '$role'"
  [[ "$name" =~ ^[A-Za-z0-9._-]+$ ]] || die "name must be letters, digits, '.', '_' or '-', got '$name'"
  [[ -f "$dir/ca.pem" && -f "$dir/ca.key" ]] || die "no CA in $dir (run: $0 init $dir)"
  local ext
  ext="$(mktemp)"
  # A server is reached by address: name the loopback ones and the host.
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:%s,DNS:localhost,DNS:%s,IP:127.0.0.1,IP:::1\n' \
    "$name" "$(hostname)" >"$ext"
  (umask 077; openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/$name.key" 2>/dev/null)
  openssl req -new -key "$dir/$name.key" -subj "/O=claimsched/OU=$role/CN=$name" -out "$dir/$name.csr" 2>/dev/null
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 825 -sha256 \
    -extfile "$ext" -out "$dir/$name.pem" 2>/dev/null || { rm -f "$ext"; die "cannot sign $name"; }
  rm -f "$ext" "$dir/$name.csr"
}

cmd="${1:-}"
case "$cmd" in
  init) [[ $# -eq 2 ]] || die "usage: $0 init DIR"; init "$2" ;;
  issue) [[ $# -eq 4 ]] || die "usage: $0 issue DIR ROLE NAME"; issue "$2" "$3" "$4" ;;
  user)
    [[ $# -eq 3 ]] || die "usage: $0 user DIR USER"
    # The rule of a tokens file's user (core/auth.hpp): 1 to 64 characters, not starting with '-'.
    [[ "$3" =~ ^[A-Za-z0-9._][A-Za-z0-9._-]{0,63}$ ]] || die "a user is 1 to 64 of letters, digits, '.', '_' or '-' (not first), got '$3'"
    issue "$2" client "$3" ;;
  local)
    [[ $# -ge 2 ]] || die "usage: $0 local DIR [AGENTS]"
    dir="$2"; agents="${3:-3}"
    [[ "$agents" =~ ^[0-9]+$ ]] || die "AGENTS must be a number, got '$agents'"
    init "$dir"
    [[ -f "$dir/server.pem" ]] || issue "$dir" server server
    [[ -f "$dir/client.pem" ]] || issue "$dir" client client
    for i in $(seq 1 "$agents"); do [[ -f "$dir/agent-$i.pem" ]] || issue "$dir" agent "agent-$i"; done
    ;;
  *) die "usage: $0 init DIR | issue DIR ROLE NAME | user DIR USER | local DIR [AGENTS]" ;;
esac
