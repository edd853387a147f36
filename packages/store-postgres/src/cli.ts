#!/usr/bin/env node
/**
 * alma-pg-migrate <postgresql-url> [--schema alma] [--root-schema alma_root]
 * Applies the packaged migrations to both schemas and prints the versions it applied.
 */
import { realpathSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { pgDriver } from "./driver.js";
import { DEFAULT_ROOT_SCHEMA, DEFAULT_SCHEMA, migrate } from "./migrate.js";

const USAGE = "usage: alma-pg-migrate <postgresql-url> [--schema alma] [--root-schema alma_root]";

export function parseArgs(argv: readonly string[]): {
  url: string;
  schema: string;
  rootSchema: string;
} {
  let url: string | undefined;
  let schema = DEFAULT_SCHEMA;
  let rootSchema = DEFAULT_ROOT_SCHEMA;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--schema" || arg === "--root-schema") {
      const value = argv[++i];
      if (value === undefined) throw new Error(`${arg} needs a value\n${USAGE}`);
      if (arg === "--schema") schema = value;
      else rootSchema = value;
    } else if (arg !== undefined && !arg.startsWith("--") && url === undefined) url = arg;
    else throw new Error(`unexpected argument ${arg}\n${USAGE}`);
  }
  if (url === undefined) throw new Error(USAGE);
  return { url, schema, rootSchema };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const pool = new (pgDriver().Pool)({ connectionString: args.url, max: 1 });
  try {
    const applied = await migrate(pool, { schema: args.schema, rootSchema: args.rootSchema });
    process.stdout.write(
      applied.length === 0
        ? "alma-pg-migrate: up to date\n"
        : `alma-pg-migrate: applied ${applied.join(", ")}\n`,
    );
  } finally {
    await pool.end();
  }
}

/** Run only when executed (directly or through the npm bin symlink), not when imported. */
function invokedDirectly(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(script)).href;
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
