import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { EnvError } from "./env.js";

export interface HostSecrets {
  /** The HS256 key tenant tokens are signed with (at least 32 bytes). */
  readonly jwtSecret: Uint8Array;
  /** The operator's bearer token for `/v1/admin/*`. */
  readonly adminToken: string;
  /**
   * The trail key (HMAC-SHA256, at least 32 bytes): session pseudonyms and hashed subjects on the
   * audit trails. Kept across restarts so trails stay joinable; every process on one PostgreSQL
   * database needs the same one (`ALMA_TRAIL_KEY`). Absent (a host built by hand): the runtime's
   * own rule applies (SQLite keeps one beside the database; PostgreSQL requires one).
   */
  readonly trailKey?: string;
  /** Where each came from, for the start banner (never the value). */
  readonly source: { readonly jwt: string; readonly admin: string; readonly trail?: string };
}

/**
 * A secret from the environment, else from a file under `home`, else a fresh random one written
 * there with mode 0600. Files make a dev host keep its tokens valid across restarts, and let
 * `alma token` on the same machine mint a token the running host accepts.
 */
function loadOrCreate(
  home: string,
  file: string,
  fromEnv: string | undefined,
  fresh: () => string,
): { value: string; source: string } {
  if (fromEnv !== undefined) return { value: fromEnv, source: "environment" };
  const path = join(home, file);
  try {
    const value = readFileSync(path, "utf8").trim();
    if (value.length > 0) return { value, source: path };
  } catch {
    // absent: create below
  }
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const value = fresh();
  writeFileSync(path, `${value}\n`, { mode: 0o600 });
  return { value, source: `${path} (created)` };
}

export function loadSecrets(
  home: string,
  env: {
    readonly jwtSecret: string | undefined;
    readonly adminToken: string | undefined;
    readonly trailKey?: string | undefined;
  },
): HostSecrets {
  const jwt = loadOrCreate(home, "jwt-secret", env.jwtSecret, () =>
    randomBytes(32).toString("hex"),
  );
  const admin = loadOrCreate(
    home,
    "admin-token",
    env.adminToken,
    () => `adm_${randomBytes(24).toString("base64url")}`,
  );
  const key = new TextEncoder().encode(jwt.value);
  if (key.length < 32) throw new EnvError("ALMA_JWT_SECRET must be at least 32 bytes");
  if (admin.value.length < 16)
    throw new EnvError("ALMA_ADMIN_TOKEN must be at least 16 characters");
  const trail = loadOrCreate(home, "trail-key", env.trailKey, () =>
    randomBytes(32).toString("hex"),
  );
  if (new TextEncoder().encode(trail.value).length < 32)
    throw new EnvError("ALMA_TRAIL_KEY must be at least 32 bytes");
  return {
    jwtSecret: key,
    adminToken: admin.value,
    trailKey: trail.value,
    source: { jwt: jwt.source, admin: admin.source, trail: trail.source },
  };
}
