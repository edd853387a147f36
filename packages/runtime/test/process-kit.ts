import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const exec = promisify(execFile);

/**
 * Runs `worker` (a file under this directory's `workers/`) as its own Node OS process on the
 * project's sources (`--conditions=alma-source --import tsx`), `spec` as its JSON argument, and
 * resolves with its last stdout line parsed (each worker prints one JSON line).
 */
export async function runWorker<T>(worker: string, spec: object): Promise<T> {
  const file = fileURLToPath(new URL(`./workers/${worker}`, import.meta.url));
  const out = await exec(
    process.execPath,
    ["--conditions=alma-source", "--import", "tsx", file, JSON.stringify(spec)],
    { cwd: ROOT, env: process.env },
  );
  return JSON.parse(out.stdout.trim().split("\n").at(-1) ?? "{}") as T;
}
