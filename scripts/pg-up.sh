#!/usr/bin/env bash
# Starts a throw-away PostgreSQL cluster for the tests and prints the variables to reach it.
#
#   eval "$(scripts/pg-up.sh)"      # or: source scripts/pg-up.sh
#   npx vitest run packages/store-postgres
#   scripts/pg-down.sh
#
# The cluster lives in a fresh temporary directory (data, unix socket, logs), listens on 127.0.0.1
# and a private port (ALMA_PG_PORT, default 54329), trusts local connections, and runs with fsync
# off: it is for tests only and holds nothing worth keeping. Run as root, it initdb's and runs the
# server as the `postgres` OS user (PostgreSQL refuses to run as root). Running it again while the
# cluster is up reuses it. Progress goes to stderr; stdout carries only `export` lines.

# Sourced: run as a child (so `set -e` never touches the caller's shell) and export what it prints.
if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then
  __alma_pg_env="$(bash "${BASH_SOURCE[0]}" "$@")" || return $?
  eval "$__alma_pg_env"
  unset __alma_pg_env
  return 0
fi

set -euo pipefail

PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
PORT="${ALMA_PG_PORT:-54329}"
DB="${ALMA_PG_DATABASE:-alma_test}"
STATE="${ALMA_PG_STATE:-${TMPDIR:-/tmp}/alma-pg-${PORT}.state}"

log() { echo "pg-up: $*" >&2; }

# The URL's export is always the last line of stdout (.ci/run reads `tail -n 1`).
print_env() {
  local url="postgresql://postgres@127.0.0.1:${PORT}/${DB}"
  log "ready: ALMA_TEST_DATABASE_URL=${url}"
  echo "export ALMA_PG_DIR='$1'"
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

log "starting on 127.0.0.1:$PORT (socket in $DIR)"
as_owner "$PGBIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
  -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
  start >"$DIR/pg_ctl.log" 2>&1

as_owner "$PGBIN/createdb" -h "$DIR" -p "$PORT" -U postgres "$DB"
trap - ERR

echo "$DIR" >"$STATE"
print_env "$DIR"
