import { createHash, timingSafeEqual } from "node:crypto";
import { normalizeScope, type Scope } from "@alma-harness/core";
import { errors, jwtVerify, SignJWT } from "jose";
import { HttpError } from "./errors.js";

export const TOKEN_ISSUER = "alma-host";
export const TOKEN_AUDIENCE = "alma-tenant";
export const DEFAULT_TOKEN_TTL_S = 8 * 3600;

/** Mints a tenant token: HS256 over the server secret, carrying `org` and `uid`, with an expiry. */
export async function mintToken(
  secret: Uint8Array,
  scope: Scope,
  opts: { ttlSeconds?: number; now?: number } = {},
): Promise<{ token: string; expiresAt: number }> {
  const s = normalizeScope(scope);
  const nowS = Math.floor((opts.now ?? Date.now()) / 1000);
  const exp = nowS + (opts.ttlSeconds ?? DEFAULT_TOKEN_TTL_S);
  const token = await new SignJWT({ org: s.org, uid: s.uid })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setIssuer(TOKEN_ISSUER)
    .setAudience(TOKEN_AUDIENCE)
    .setSubject(`${s.org}/${s.uid}`)
    .setIssuedAt(nowS)
    .setExpirationTime(exp)
    .sign(secret);
  return { token, expiresAt: exp * 1000 };
}

export function bearer(request: Request): string | undefined {
  const header = request.headers.get("authorization");
  const m = header ? /^Bearer\s+([\x21-\x7e]{1,4096})$/i.exec(header.trim()) : null;
  return m?.[1];
}

/**
 * The tenant scope of a request, from its verified token only (never from the body or the path).
 * Missing, malformed, forged, expired or not-yet-valid tokens are 401 and nothing runs.
 */
export async function verifyTenant(
  request: Request,
  secret: Uint8Array,
  now: () => number,
): Promise<Scope> {
  const token = bearer(request);
  if (!token) throw unauthorized("a bearer token is required");
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, secret, {
      algorithms: ["HS256"],
      issuer: TOKEN_ISSUER,
      audience: TOKEN_AUDIENCE,
      requiredClaims: ["exp", "org", "uid"],
      currentDate: new Date(now()),
    }));
  } catch (error) {
    throw unauthorized(
      error instanceof errors.JWTExpired ? "the token has expired" : "the token is not valid",
    );
  }
  try {
    return normalizeScope({ org: payload.org, uid: payload.uid });
  } catch {
    throw unauthorized("the token's org and uid are not valid");
  }
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/** The operator's token, compared in constant time; a tenant token is not an operator token. */
export function verifyAdmin(request: Request, adminToken: string): void {
  const token = bearer(request);
  if (!token) throw unauthorized("the operator token is required");
  if (!timingSafeEqual(digest(token), digest(adminToken)))
    throw unauthorized("the operator token is not valid");
}

function unauthorized(message: string): HttpError {
  return new HttpError("unauthorized", message, {
    headers: { "www-authenticate": 'Bearer realm="alma"' },
  });
}
