#!/usr/bin/env bash
# Starts a real PgBouncer (the Debian package) in transaction pooling mode in front of the cluster
# scripts/pg-up.sh started, and prints the variable to reach the test database through it.
#
#   eval "$(scripts/pg-up.sh)"; eval "$(scripts/pgbouncer-up.sh)"
#   echo "$ALMA_TEST_PGBOUNCER_URL"
#   scripts/pg-down.sh            # stops the pooler with the cluster (it lives in ALMA_PG_DIR)
#
# It listens on 127.0.0.1 on a free port the kernel picks (retried if another process takes it
# first), keeps its config, log and pid file in ALMA_PG_DIR, and logs every client in as the
# cluster's `postgres` role. Its server connections start with an empty search_path, so a
# statement that names a table without its schema fails here instead of finding it by accident.
# Progress goes to stderr; stdout carries only the `export` line.
set -euo pipefail

DIR="${ALMA_PG_DIR:?run scripts/pg-up.sh first (ALMA_PG_DIR)}"
PG_PORT="${ALMA_PG_PORT:?run scripts/pg-up.sh first (ALMA_PG_PORT)}"
DB="${ALMA_PG_DATABASE:-alma_test}"
BIN="${PGBOUNCER:-$(command -v pgbouncer || echo /usr/sbin/pgbouncer)}"

log() { echo "pgbouncer-up: $*" >&2; }

if [[ ! -x "$BIN" ]]; then
  log "no pgbouncer binary (apt-get install pgbouncer, or set PGBOUNCER)"
  exit 1
fi

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# PgBouncer refuses to run as root: as the cluster's owner then, as pg-up.sh runs the server.
as_owner() {
  if [[ "$(id -u)" == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

write_config() {
  cat >"$DIR/pgbouncer.ini" <<INI
[databases]
${DB} = host=127.0.0.1 port=${PG_PORT} dbname=${DB} user=postgres connect_query='SET search_path TO pg_catalog'

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $1
unix_socket_dir =
auth_type = any
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 40
server_reset_query =
logfile = ${DIR}/pgbouncer.log
pidfile = ${DIR}/pgbouncer.pid
INI
  if [[ "$(id -u)" == 0 ]]; then chown postgres: "$DIR/pgbouncer.ini"; fi
}

# Up when a client gets an answer through it.
ready() {
  for _ in $(seq 1 100); do
    if psql -Atq "postgresql://postgres@127.0.0.1:$1/${DB}" -c "SELECT 1" >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  return 1
}

attempt=1
while :; do
  PORT="$(free_port)"
  write_config "$PORT"
  log "starting on 127.0.0.1:$PORT (transaction pooling, in front of :$PG_PORT)"
  if as_owner "$BIN" -d "$DIR/pgbouncer.ini" >/dev/null 2>&1 && ready "$PORT"; then break; fi
  if [[ $attempt -ge 5 ]]; then
    log "failed; log follows"
    cat "$DIR/pgbouncer.log" >&2 || true
    exit 1
  fi
  attempt=$((attempt + 1))
  if [[ -f "$DIR/pgbouncer.pid" ]]; then kill "$(cat "$DIR/pgbouncer.pid")" 2>/dev/null || true; fi
done

url="postgresql://postgres@127.0.0.1:${PORT}/${DB}"
log "ready: ALMA_TEST_PGBOUNCER_URL=${url}"
echo "export ALMA_TEST_PGBOUNCER_URL='${url}'"
