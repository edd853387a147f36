#!/usr/bin/env bash
# Stops the throw-away cluster started by scripts/pg-up.sh and deletes its directory.
#
#   scripts/pg-down.sh            # the cluster on ALMA_PG_PORT (default 54329)
#   scripts/pg-down.sh /tmp/alma-pg.XXXXXX
set -euo pipefail

PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
PORT="${ALMA_PG_PORT:-54329}"
STATE="${ALMA_PG_STATE:-${TMPDIR:-/tmp}/alma-pg-${PORT}.state}"

log() { echo "pg-down: $*" >&2; }

DIR="${1:-}"
if [[ -z "$DIR" && -f "$STATE" ]]; then DIR="$(cat "$STATE")"; fi
if [[ -z "$DIR" ]]; then
  log "no cluster recorded in $STATE (nothing to stop)"
  exit 0
fi
# Only ever delete a directory pg-up.sh made.
case "$(basename "$DIR")" in
  alma-pg.*) ;;
  *) log "refusing to remove $DIR: not a pg-up.sh directory"; exit 1 ;;
esac

if [[ -d "$DIR/data" ]]; then
  if [[ "$(id -u)" == 0 ]]; then
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  else
    "$PGBIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
fi
rm -rf "$DIR"
if [[ -f "$STATE" && "$(cat "$STATE")" == "$DIR" ]]; then rm -f "$STATE"; fi
log "stopped and removed $DIR"
