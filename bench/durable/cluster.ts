// The PostgreSQL the durable benchmark runs on: ALMA_BENCH_DATABASE_URL when set (a database of
// its own: anything else running there is counted too), else a throw-away cluster started with
// scripts/pg-up.sh (autovacuum off; pg_stat_statements preloaded when the PostgreSQL build ships
// it) and stopped with scripts/pg-down.sh at the end.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const exec = promisify(execFile);

export interface Database {
  readonly url: string;
  /** The cluster directory pg-up.sh made (ours to stop), absent for a given URL. */
  readonly dir?: string;
  /** How it was reached, for the report. */
  readonly origin: string;
}

/** The environment for pg-up.sh / pg-down.sh: never the caller's named cluster (its port or state file). */
function scriptEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.ALMA_PG_PORT;
  delete env.ALMA_PG_STATE;
  delete env.ALMA_PG_DIR;
  return env;
}

export async function openDatabase(): Promise<Database> {
  const given = process.env.ALMA_BENCH_DATABASE_URL;
  if (given) return { url: given, origin: "ALMA_BENCH_DATABASE_URL" };
  const bin = process.env.PGBIN ?? "/usr/lib/postgresql/15/bin";
  const library = join(bin, "..", "lib", "pg_stat_statements.so");
  const preload = existsSync(library);
  // Autovacuum off: its transactions on the bench database would count as the phase's commits.
  const options = `-c autovacuum=off${preload ? " -c shared_preload_libraries=pg_stat_statements" : ""}`;
  const { stdout } = await exec("bash", [join(ROOT, "scripts/pg-up.sh")], {
    cwd: ROOT,
    env: scriptEnv({ ALMA_PG_SERVER_OPTS: options }),
  });
  const exported = new Map(
    [...stdout.matchAll(/^export (\w+)='([^']*)'$/gm)].map((m) => [m[1]!, m[2]!]),
  );
  const url = exported.get("ALMA_TEST_DATABASE_URL");
  const dir = exported.get("ALMA_PG_DIR");
  if (!url || !dir) throw new Error(`pg-up.sh printed no cluster:\n${stdout}`);
  return {
    url,
    dir,
    origin: `a cluster of its own from scripts/pg-up.sh (fsync off, synchronous_commit off, autovacuum off${
      preload ? ", pg_stat_statements preloaded" : `; no ${library}, so no statement counts`
    })`,
  };
}

/** Stops the cluster pg-up.sh made for this run (nothing for a given URL). */
export async function closeDatabase(db: Database): Promise<void> {
  if (!db.dir) return;
  await exec("bash", [join(ROOT, "scripts/pg-down.sh"), db.dir], { cwd: ROOT, env: scriptEnv({}) });
}
