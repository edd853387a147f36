import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ConversationConfigError } from "@alma-harness/conversation";
import { processTrailKey, type TrailKey, trailKey } from "@alma-harness/core";
import type { RuntimeConfig } from "./compose.js";

/** The file beside an embedded database that holds its trail key. */
export const TRAIL_KEY_FILE = "trail-key";

/**
 * The embedded store's trail key: the configured one, else the key in `trail-key` beside the
 * database file, else a fresh random one written there with mode 0600, so the trails (pseudonyms
 * and hashes) stay joinable across restarts. An in-memory database gets the per-process key.
 * Whoever can read this file can test a guessed session id against the trails: keep it with the
 * database's own protection, or supply the key from a secret store.
 */
export function embeddedTrailKey(config: RuntimeConfig, databasePath: string): TrailKey {
  if (config.trailKey !== undefined) return keyOf(config.trailKey);
  if (databasePath === ":memory:" || databasePath === "") return processTrailKey();
  const path = join(dirname(databasePath), TRAIL_KEY_FILE);
  try {
    const stored = readFileSync(path, "utf8").trim();
    if (stored.length > 0) return keyOf(stored);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT")
      throw new ConversationConfigError(`the trail key file ${path} could not be read`);
  }
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const fresh = randomBytes(32).toString("hex");
  // `wx`: two processes opening one new database at once keep the first key, never two.
  try {
    writeFileSync(path, `${fresh}\n`, { mode: 0o600, flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST")
      return keyOf(readFileSync(path, "utf8").trim());
    throw error;
  }
  return keyOf(fresh);
}

/** PostgreSQL serves many processes: they must share one key, so it is required (never generated per process). */
export function sharedTrailKey(config: RuntimeConfig): TrailKey {
  if (config.trailKey === undefined) {
    throw new ConversationConfigError(
      "trailKey is required for PostgreSQL: every process on the database must share one key (at least 32 bytes)",
    );
  }
  return keyOf(config.trailKey);
}

function keyOf(material: NonNullable<RuntimeConfig["trailKey"]>): TrailKey {
  try {
    return trailKey(material);
  } catch (error) {
    throw new ConversationConfigError((error as Error).message);
  }
}
