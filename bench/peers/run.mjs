// npm run bench:peers — installs bench/peers on demand (its own package.json and lockfile, its own
// node_modules, not a workspace), then runs peers.bench.ts from the repo root the way the other
// benchmarks run: node --conditions=alma-source --import tsx (its child processes add --expose-gc
// for the heap figure). Arguments and BENCH_* variables pass through.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const modules = join(here, "node_modules");
const stamp = join(modules, ".alma-bench-peers-stamp");

if (!existsSync(join(root, "node_modules", "tsx"))) {
  console.error(
    "bench:peers: run `npm install` at the repo root first (tsx and the workspace packages come from there)",
  );
  process.exit(1);
}

// Stale when package.json or the lockfile changed since the last install this script ran.
const digest = createHash("sha256");
for (const file of ["package.json", "package-lock.json"]) {
  const path = join(here, file);
  digest.update(`${file}\0${existsSync(path) ? readFileSync(path) : ""}\0`);
}
const want = digest.digest("hex");
const have = existsSync(stamp) ? readFileSync(stamp, "utf8").trim() : "";

if (!existsSync(modules) || have !== want) {
  const prefix = relative(root, here) || ".";
  console.error(
    `bench:peers: installing the peers (npm install --prefix ${prefix} --no-audit --no-fund)`,
  );
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const install = spawnSync(npm, ["install", "--prefix", prefix, "--no-audit", "--no-fund"], {
    cwd: root,
    stdio: "inherit",
  });
  if (install.status !== 0) process.exit(install.status ?? 1);
  writeFileSync(stamp, `${want}\n`);
}

const run = spawnSync(
  process.execPath,
  [
    "--conditions=alma-source",
    "--import",
    "tsx",
    join("bench", "peers", "peers.bench.ts"),
    ...process.argv.slice(2),
  ],
  {
    cwd: root,
    stdio: "inherit",
  },
);
process.exit(run.status ?? 1);
