#!/usr/bin/env bash
# Stops one throw-away cluster started by scripts/pg-up.sh and deletes its directory: only its own,
# never another run's.
#
#   scripts/pg-down.sh /tmp/alma-pg.XXXXXX   # the directory pg-up.sh printed (ALMA_PG_DIR)
#   scripts/pg-down.sh                       # ALMA_PG_DIR, else the cluster recorded for ALMA_PG_PORT
set -euo pipefail

PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
TMP="${TMPDIR:-/tmp}"

log() { echo "pg-down: $*" >&2; }

DIR="${1:-${ALMA_PG_DIR:-}}"
STATE=""
if [[ -n "${ALMA_PG_STATE:-}" ]]; then STATE="$ALMA_PG_STATE"; elif [[ -n "${ALMA_PG_PORT:-}" ]]; then STATE="${TMP}/alma-pg-${ALMA_PG_PORT}.state"; fi
if [[ -z "$DIR" && -n "$STATE" && -f "$STATE" ]]; then DIR="$(cat "$STATE")"; fi
if [[ -z "$DIR" ]]; then
  # Guessing (a default port, the newest directory) could stop another run's cluster: never.
  log "no cluster named (pass the directory pg-up.sh printed, or set ALMA_PG_DIR or ALMA_PG_PORT); nothing to stop"
  exit 0
fi
# Only ever delete a directory pg-up.sh made.
case "$(basename "$DIR")" in
  alma-pg.*) ;;
  *) log "refusing to remove $DIR: not a pg-up.sh directory"; exit 1 ;;
esac

# A pooler scripts/pgbouncer-up.sh started in front of this cluster goes first.
if [[ -f "$DIR/pgbouncer.pid" ]]; then
  kill "$(cat "$DIR/pgbouncer.pid")" 2>/dev/null || true
fi
if [[ -d "$DIR/data" ]]; then
  if [[ "$(id -u)" == 0 ]]; then
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  else
    "$PGBIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
fi
# The state file that records this directory (found by the port it listened on) goes with it.
PORT_OF_DIR="$(cat "$DIR/port" 2>/dev/null || true)"
rm -rf "$DIR"
for state in "$STATE" "${PORT_OF_DIR:+${TMP}/alma-pg-${PORT_OF_DIR}.state}"; do
  if [[ -n "$state" && -f "$state" && "$(cat "$state")" == "$DIR" ]]; then rm -f "$state"; fi
done
log "stopped and removed $DIR"
