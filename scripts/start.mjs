// `npm start`: builds the operator console when its bundle is missing, then runs the host from its
// TypeScript sources (tsx, with the `alma-source` condition so workspace packages resolve to src/).
// Serves on 127.0.0.1:8787 unless PORT/HOST say otherwise; extra arguments go to `alma serve`.
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const server = fileURLToPath(new URL("../apps/server/", import.meta.url));

if (!existsSync(`${server}public/index.html`)) {
  console.log("building the operator console (first start)…");
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
// The host handles SIGINT/SIGTERM itself (it stops serving and closes its store); this waits for it.
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 130 : 1)));
