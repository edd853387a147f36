import { runCli } from "./main.js";

/** Runs the CLI on this process: its streams, its environment, SIGINT/SIGTERM to stop `serve`. */
export async function runProcess(argv: readonly string[]): Promise<void> {
  const stopSignal = new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
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
