import { existsSync } from "node:fs";
import { join } from "node:path";
import { formatDoctor, runDoctor } from "@alma-harness/providers";
import { readEnv } from "../config/env.js";
import { DEFAULT_PUBLIC_DIR } from "../host.js";
import { selectModels } from "../models/select.js";
import { redact, sqlitePath } from "../runtime.js";
import type { ParsedArgs } from "./args.js";
import { baseUrl, type CliIo, write } from "./context.js";

export const DOCTOR_HELP = `alma doctor: check this machine's setup and, with a provider key set, the provider itself.

Usage: alma doctor [--url URL]
Checks Node, the provider the host would route to (keys are never printed), the store, the console
bundle, whether a host answers at --url, and the providers' live check: one tiny real request per
provider whose key is set (skipped, and said so, when none is). Exits non-zero when a check fails.`;

function nodeOk(version: string): boolean {
  const [major, minor] = version.replace(/^v/, "").split(".").map(Number);
  return (major ?? 0) > 20 || ((major ?? 0) === 20 && (minor ?? 0) >= 19);
}

/** What the line says of a Node that runs Alma: the supported LTS lines are 22 and 24. */
function nodeNote(version: string): string {
  if (!nodeOk(version)) return " (needs Node 22 or 24)";
  const major = Number(version.replace(/^v/, "").split(".")[0]);
  return major === 20
    ? " (works, but Node 20 is out of support since April 2026: use 22 or 24)"
    : "";
}

/** The providers package's live check: one tiny real request per provider whose key is set. */
async function liveCheck(io: CliIo): Promise<{ ok: boolean; lines: string[] }> {
  try {
    const results = await runDoctor(io.env);
    return {
      ok: results.every((r) => r.status !== "failed"),
      lines: formatDoctor(results).split("\n"),
    };
  } catch (error) {
    return { ok: false, lines: [`failed: ${(error as Error).message}`] };
  }
}

export async function doctorCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  let ok = true;
  const line = (name: string, text: string) => write(io.stdout, `${name.padEnd(9)} ${text}`);
  const node = process.version;
  if (!nodeOk(node)) ok = false;
  line("node", `${node}${nodeNote(node)}`);
  const env = readEnv(io.env, io.cwd);
  try {
    const models = await selectModels(env);
    line(
      "provider",
      models.offlineDemo ? "offline demo model (no provider key set)" : models.label,
    );
    line(
      "tiers",
      Object.entries(models.tiers)
        .map(([tier, model]) => `${tier}: ${model}`)
        .join(", "),
    );
  } catch (error) {
    ok = false;
    line("provider", `error: ${(error as Error).message}`);
  }
  line(
    "store",
    env.databaseUrl
      ? `postgres ${redact(env.databaseUrl)} (ALMA_DATABASE_URL)`
      : `sqlite ${sqlitePath(env.home)}`,
  );
  const bundle = join(DEFAULT_PUBLIC_DIR, "index.html");
  line(
    "console",
    existsSync(bundle)
      ? `built (${bundle})`
      : "not built: npm run build:console -w @alma-harness/server (npm start does it)",
  );
  const base = baseUrl(args, io);
  const health = await fetch(`${base}/healthz`).then(
    (r) => (r.ok ? "answers" : `answers with HTTP ${r.status}`),
    () => "not running",
  );
  line("host", `${base} ${health}`);
  const live = await liveCheck(io);
  if (!live.ok) ok = false;
  for (const l of live.lines) line("live", l);
  return ok ? 0 : 1;
}
