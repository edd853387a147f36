#!/usr/bin/env bash
# The whole suite on another supported Node line (default 24, the active LTS): when the machine's
# node is another line, that line's node comes from the npm registry's `node` package, the tree is
# copied (without node_modules: better-sqlite3 is built per Node ABI, so this tree's stays as it
# is) and installed and tested there. `bash scripts/node-lts.sh [LINE]`; CI runs it after npm test.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
LINE="${1:-24}"

if [ "$(node -p 'process.versions.node.split(".")[0]')" = "$LINE" ]; then
  echo "node-lts: this machine runs Node $LINE already; npm test covered it"
  exit 0
fi

WORK="$(mktemp -d "${ALMA_NODE_LTS_BASE:-/var/tmp}/alma-node.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
npm install --prefix "$WORK/node" --no-audit --no-fund --silent "node@$LINE"
export PATH="$WORK/node/node_modules/.bin:$PATH"
echo "node-lts: Node $(node -v) from the npm registry's node package"
# Native modules (better-sqlite3) build against this Node's own headers, which its platform package
# ships; else node-gyp may take the machine's (another ABI) when it cannot download them.
HEADERS="$(find "$WORK/node" -path '*/include/node/node_version.h' | head -1)"
if [ -n "$HEADERS" ]; then export npm_config_nodedir="${HEADERS%/include/node/node_version.h}"; fi

mkdir "$WORK/repo"
tar -C "$ROOT" \
  --exclude=./node_modules --exclude='./*/*/node_modules' --exclude='./*/*/dist' \
  --exclude=./.alma --exclude=./apps/server/test-artifacts -cf - . | tar -C "$WORK/repo" -xf -
cd "$WORK/repo"
npm ci --no-audit --no-fund
npm test
