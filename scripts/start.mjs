// `npm start`: builds the operator console when its bundle is missing or stale, then runs the host from its
// TypeScript sources (tsx, with the `alma-source` condition so workspace packages resolve to src/).
// Serves on 127.0.0.1:8787 unless PORT/HOST say otherwise; extra arguments go to `alma serve`.
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { consoleStale } from "../apps/server/scripts/console-stale.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const server = fileURLToPath(new URL("../apps/server/", import.meta.url));

if (consoleStale(server)) {
  console.log("building the operator console (missing, or older than its sources)…");
  const built = spawnSync(process.execPath, [`${server}scripts/build-console.mjs`], {
    stdio: "inherit",
    cwd: server,
  });
  if (built.status !== 0) {
    console.error("npm start: the console build failed; see above");
    process.exit(built.status ?? 1);
  }
}

const child = spawn(
  process.execPath,
  ["--conditions=alma-source", "--import", "tsx", `${server}src/main.ts`, ...process.argv.slice(2)],
  {
    stdio: "inherit",
    cwd: root,
  },
);
// A supervisor (Docker, systemd, PM2) signals npm's process: npm forwards the signal to its script,
// which is this process (`exec` in package.json: no shell in between that would die of it and leave
// the host re-parented to PID 1), and this forwards it to the host, which drains (stops admitting,
// lets running turns settle up to ALMA_SHUTDOWN_GRACE_MS, closes its store); this exits with it.
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 130 : 1)));
