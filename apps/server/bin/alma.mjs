#!/usr/bin/env node
// `alma`: runs src/cli/process.ts with tsx and the `alma-source` condition (the workspace packages
// resolve to their TypeScript sources), or dist/cli/process.js when the package has been built.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const built = fileURLToPath(new URL("../dist/cli/process.js", import.meta.url));
const source = fileURLToPath(new URL("../src/cli/process.ts", import.meta.url));
const args = process.argv.slice(2);
let command;
if (existsSync(built)) command = [built, ...args];
else {
  let tsx;
  try {
    tsx = import.meta.resolve("tsx");
  } catch {
    console.error("alma: tsx is not installed; run npm install at the repository root");
    process.exit(1);
  }
  command = ["--conditions=alma-source", "--import", tsx, source, ...args];
}
const child = spawn(process.execPath, command, { stdio: "inherit" });
// The child gets the terminal's SIGINT/SIGTERM itself and shuts down in order; this wrapper waits.
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
// `npx alma serve` runs this under `sh -c`: a supervisor's SIGTERM to npx reaches that shell, which
// dies of it without passing it on, and this process is re-parented. So a parent that goes away is
// a SIGTERM too: the host drains instead of running on, orphaned.
const parent = process.ppid;
const orphaned = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(orphaned);
  child.kill("SIGTERM");
}, 250);
orphaned.unref();
child.on("error", (error) => {
  console.error(`alma: ${error.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 130 : 1)));
