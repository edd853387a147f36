#!/usr/bin/env bash
# Starts a throw-away PostgreSQL cluster for the tests and prints the variables to reach it.
#
#   eval "$(scripts/pg-up.sh)"      # or: source scripts/pg-up.sh
#   npx vitest run packages/store-postgres
#   scripts/pg-down.sh
#
# The cluster lives in a fresh temporary directory (data, unix socket, logs), listens on 127.0.0.1,
# trusts local connections, and runs with fsync off: it is for tests only and holds nothing worth
# keeping. Run as root, it initdb's and runs the server as the `postgres` OS user (PostgreSQL
# refuses to run as root). Progress goes to stderr; stdout carries only `export` lines, the URL's
# last (ALMA_PG_DIR, ALMA_PG_PORT, then ALMA_TEST_DATABASE_URL).
#
# ALMA_PG_SERVER_OPTS adds server options to the start (e.g. `-c shared_preload_libraries=pg_stat_statements`
# for `npm run bench:durable`); a reused cluster keeps the options it was started with.
#
# The port: ALMA_PG_PORT when set; otherwise a free one the kernel picks (retried if another process
# takes it first), so two runs on one machine (two `.ci/run`) never meet. The state file is per
# port (ALMA_PG_STATE to name another): with a named port, running it again while that cluster is up
# reuses it (under a lock, so two concurrent runs on one named port start one cluster); a picked port
# is new, so its run is always a cluster of its own. scripts/pg-down.sh stops one cluster: the
# directory it is given (or ALMA_PG_DIR), else the one recorded for ALMA_PG_PORT.

# Sourced: run as a child (so `set -e` never touches the caller's shell) and export what it prints.
if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then
  __alma_pg_env="$(bash "${BASH_SOURCE[0]}" "$@")" || return $?
  eval "$__alma_pg_env"
  unset __alma_pg_env
  return 0
fi

set -euo pipefail

PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
DB="${ALMA_PG_DATABASE:-alma_test}"
TMP="${TMPDIR:-/tmp}"

log() { echo "pg-up: $*" >&2; }

# A port nothing listens on now (the kernel's pick); PostgreSQL binds it a moment later, so a start
# that loses the race is retried with another.
free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

PICKED=""
if [[ -n "${ALMA_PG_PORT:-}" ]]; then
  PORT="$ALMA_PG_PORT"
else
  PORT="$(free_port)"
  PICKED=1
fi
state_of() { echo "${ALMA_PG_STATE:-${TMP}/alma-pg-$1.state}"; }
STATE="$(state_of "$PORT")"

# The URL's export is always the last line of stdout (.ci/run reads `tail -n 1`).
print_env() {
  local url="postgresql://postgres@127.0.0.1:${PORT}/${DB}"
  log "ready: ALMA_TEST_DATABASE_URL=${url}"
  echo "export ALMA_PG_DIR='$1'"
  echo "export ALMA_PG_PORT='${PORT}'"
  echo "export ALMA_TEST_DATABASE_URL='${url}'"
}

if [[ ! -x "$PGBIN/initdb" ]]; then
  log "no PostgreSQL binaries in $PGBIN (set PGBIN)"
  exit 1
fi

# Run a PostgreSQL binary as the cluster's owner: `postgres` when we are root, ourselves otherwise.
as_owner() {
  if [[ "$(id -u)" == 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# One run at a time per named port: a second run on the same port waits, then reuses. (A picked
# port is fresh: nothing to share, nothing to lock.)
if [[ -z "$PICKED" ]]; then
  exec 9>>"${STATE}.lock"
  flock 9
fi

if [[ -f "$STATE" ]]; then
  existing="$(cat "$STATE")"
  if [[ -d "$existing/data" ]] && as_owner "$PGBIN/pg_ctl" -D "$existing/data" status >/dev/null 2>&1; then
    log "reusing the cluster in $existing"
    print_env "$existing"
    exit 0
  fi
  log "stale state file $STATE (cluster gone); starting a new one"
  rm -f "$STATE"
fi

DIR="$(mktemp -d "${TMPDIR:-/tmp}/alma-pg.XXXXXX")"
chmod 700 "$DIR"
if [[ "$(id -u)" == 0 ]]; then
  if ! id postgres >/dev/null 2>&1; then
    log "running as root needs a 'postgres' OS user"
    exit 1
  fi
  chown postgres: "$DIR"
fi

cleanup_on_failure() {
  log "failed; logs follow"
  cat "$DIR"/*.log >&2 2>/dev/null || true
  as_owner "$PGBIN/pg_ctl" -D "$DIR/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$DIR"
}
trap cleanup_on_failure ERR

log "initdb into $DIR/data"
as_owner "$PGBIN/initdb" -D "$DIR/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$DIR/initdb.log" 2>&1

# The server never inherits the lock's descriptor (it would hold the lock for its whole life).
start_on() {
  as_owner "$PGBIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 9>&- \
    -o "-p $1 -k $DIR -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 ${ALMA_PG_SERVER_OPTS:-}" \
    start >"$DIR/pg_ctl.log" 2>&1
}

log "starting on 127.0.0.1:$PORT (socket in $DIR)"
attempt=1
until start_on "$PORT"; do
  # Only a picked port is ours to change; a named one that is taken is the caller's to resolve.
  if [[ -z "$PICKED" || $attempt -ge 5 ]]; then false; fi
  attempt=$((attempt + 1))
  PORT="$(free_port)"
  STATE="$(state_of "$PORT")"
  log "port taken meanwhile; retrying on 127.0.0.1:$PORT"
done

as_owner "$PGBIN/createdb" -h "$DIR" -p "$PORT" -U postgres "$DB"
trap - ERR

echo "$PORT" >"$DIR/port"
echo "$DIR" >"$STATE"
print_env "$DIR"
