import { runCli } from "./main.js";

/** Runs the CLI on this process: its streams, its environment, SIGINT/SIGTERM to stop `serve`. */
export async function runProcess(argv: readonly string[]): Promise<void> {
  // `on`, not `once`: a terminal's Ctrl-C reaches every process of the group, so a wrapper
  // (`npm start`, the `alma` bin) that forwards it makes the host see it twice. A repeat must not
  // fall back to the default action (exit at once, no drain): the drain is already bounded by
  // ALMA_SHUTDOWN_GRACE_MS, and SIGKILL is the way to stop without one.
  const stopSignal = new Promise<void>((resolve) => {
    process.on("SIGINT", () => resolve());
    process.on("SIGTERM", () => resolve());
  });
  const code = await runCli(argv, {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    stopSignal,
  });
  process.exitCode = code;
  // Every command is done here, serve included once its shutdown finished: nothing left behind (a
  // socket's timer, a provider's keep-alive agent) may keep the process alive past it.
  process.exit(code);
}

const entry = process.argv[1] ?? "";
if (entry.endsWith("/cli/process.ts") || entry.endsWith("/cli/process.js"))
  void runProcess(process.argv.slice(2));
