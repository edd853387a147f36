#!/usr/bin/env bash
# Packages that install: builds every package, packs each (`npm pack`), installs the library
# tarballs into an empty folder outside the repository, and runs README's "Quickstart in code" there
# with plain `npx tsx` and, as JavaScript, with plain `node`; both must print the reply. Then checks
# that the optional drivers stay optional: neither better-sqlite3 nor pg got installed, and
# each store without its driver is a MissingDependencyError naming it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
REPLY="We are open 9 to 5 on Monday."

# A folder no ancestor of which holds a node_modules (Node would resolve a missing package there).
clean_base() {
  local base d
  for base in "${PACK_CHECK_BASE:-}" /var/tmp "${TMPDIR:-/tmp}" "$HOME"; do
    [ -n "$base" ] && [ -d "$base" ] || continue
    d="$base"
    while [ ! -e "$d/node_modules" ] && [ "$d" != / ]; do d="$(dirname "$d")"; done
    if [ ! -e "$d/node_modules" ]; then
      echo "$base"
      return
    fi
  done
  echo "pack-check: no folder without a node_modules above it (set PACK_CHECK_BASE)" >&2
  exit 1
}
WORK="$(mktemp -d "$(clean_base)/alma-pack.XXXXXX")"
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT

echo "== build"
[ "${PACK_CHECK_SKIP_BUILD:-}" = 1 ] || npm run build --silent >/dev/null

echo "== pack"
mkdir -p "$WORK/tarballs"
npm pack --workspaces --silent --pack-destination "$WORK/tarballs" >/dev/null
ls "$WORK/tarballs"

echo "== install into $WORK/app (outside the repository)"
APP="$WORK/app"
mkdir -p "$APP"
cd "$APP"
printf '{ "name": "quickstart", "private": true, "type": "module" }\n' >package.json
# The libraries (the host app is private and not a library).
LIBS=()
for t in "$WORK"/tarballs/alma-harness-*.tgz; do
  case "$t" in */alma-harness-server-*) ;; *) LIBS+=("$t") ;; esac
done
npm install --no-audit --no-fund --silent "${LIBS[@]}" tsx

echo "== every installed package has its LICENSE, and source maps that carry their sources"
node -e '
const fs = require("fs");
const path = require("path");
const root = "node_modules/@alma-harness";
let maps = 0;
for (const name of fs.readdirSync(root)) {
  const dir = path.join(root, name);
  if (!fs.readFileSync(path.join(dir, "LICENSE"), "utf8").includes("Apache License"))
    throw new Error(`${name}: no Apache-2.0 LICENSE`);
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const f = path.join(d, e.name);
      if (e.isDirectory()) walk(f);
      else if (f.endsWith(".js.map")) {
        const m = JSON.parse(fs.readFileSync(f, "utf8"));
        if (!m.sourcesContent || m.sourcesContent.length !== m.sources.length || m.sourcesContent.some((c) => typeof c !== "string"))
          throw new Error(`${f}: no sourcesContent`);
        maps++;
      }
    }
  };
  walk(path.join(dir, "dist"));
}
console.log(`LICENSE in every package; ${maps} source maps, each with its sources`);
'

echo "== the README's quickstart"
node "$ROOT/scripts/readme-snippet.mjs" "$ROOT/README.md" "Quickstart in code" >quickstart.ts
node -e '
const ts = require(process.argv[1]);
const src = require("fs").readFileSync("quickstart.ts", "utf8");
const out = ts.transpileModule(src, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
require("fs").writeFileSync("quickstart.mjs", out.outputText);
' "$ROOT/node_modules/typescript"

check() {
  local how="$1" out
  shift
  out="$("$@")"
  echo "$how: $out"
  if ! grep -qF "$REPLY" <<<"$out"; then
    echo "pack-check: $how did not print the reply" >&2
    exit 1
  fi
}
check "npx tsx quickstart.ts" npx --no-install tsx quickstart.ts
check "node quickstart.mjs" node quickstart.mjs

echo "== the drivers are optional"
for driver in better-sqlite3 pg; do
  if [ -e "node_modules/$driver" ]; then
    echo "pack-check: $driver was installed, but it is an optional peer" >&2
    exit 1
  fi
done
cat >missing-driver.mjs <<'JS'
// The runtime imports without either driver; each store names its own when it opens.
import { memory } from "@alma-harness/runtime";
import { createPostgresStores } from "@alma-harness/store-postgres";
import { createSqliteStores } from "@alma-harness/store-sqlite";
const show = (error) => console.log(`${error.name} ${error.code} ${error.packageName}`);
if (typeof memory !== "function") throw new Error("no memory()");
try {
  createSqliteStores({ path: ":memory:" });
  console.log("sqlite: no error");
} catch (error) {
  show(error);
}
await createPostgresStores({ connectionString: "postgres://127.0.0.1:1/none" }).then(
  () => console.log("postgres: no error"),
  show,
);
JS
out="$(node missing-driver.mjs)"
echo "$out"
expected="MissingDependencyError missing_dependency better-sqlite3
MissingDependencyError missing_dependency pg"
if [ "$out" != "$expected" ]; then
  echo "pack-check: a store without its driver is not a MissingDependencyError naming it" >&2
  exit 1
fi
echo "pack-check: ok"
