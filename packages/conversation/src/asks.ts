import { timingSafeEqual } from "node:crypto";
import {
  askTokenMac,
  type DecideResult,
  type ParkedTurnSummary,
  type Scope,
  normalizeScope,
  ValidationError,
  validateId,
} from "@alma-harness/core";
import { closedObject, validateAskId } from "@alma-harness/core/stores";
import type { ResolvedConfig } from "./config.js";
import { AskRefusedError, ConversationConfigError } from "./errors.js";
import { parkingOf } from "./parking.js";

/** What `resolveAsk` takes: a person's decision on one parked ask, by id (or by a token a UI was handed). */
export interface ResolveAskRequest {
  readonly scope: Scope;
  readonly askId: string;
  readonly decision: "approve" | "deny";
  /** Who decided, as the host knows them (an operator id); recorded on the ask. */
  readonly by: string;
  /** The digest the decider saw; absent: the ask's own (an operator route that showed the ask). */
  readonly digest?: string;
  /** A decision token (`askToken`): checked before anything, and good for one decision. */
  readonly token?: string;
}

/** A recorded decision, and what the turn came to (`awaiting_approval` while other asks wait). */
export interface ResolveAskResult {
  readonly askId: string;
  readonly rootKey: string;
  readonly decision: "approve" | "deny";
}

const TOKEN_PREFIX = "at1";

/**
 * A decision token for a UI: the ask id, its digest and its expiry, signed with the deployment's
 * trail key and bound to the scope (`at1.<payload>.<mac>`). It decides once, before the expiry, for
 * that very call input; a forged, replayed, expired or late token is refused (`AskRefusedError`).
 */
export function askTokenOf(
  config: ResolvedConfig,
  scope: Scope,
  ask: { readonly askId: string; readonly digest: string; readonly expiresAt: number },
): string {
  const payload = Buffer.from(JSON.stringify([ask.askId, ask.digest, ask.expiresAt])).toString(
    "base64url",
  );
  return `${TOKEN_PREFIX}.${payload}.${askTokenMac(config.trailKey, scope, payload)}`;
}

interface TokenClaims {
  readonly digest: string;
  readonly expiresAt: number;
}

/** Reads a token back: its MAC first (constant time), then its claims; any other shape is forged. */
function readToken(
  config: ResolvedConfig,
  scope: Scope,
  askId: string,
  token: unknown,
): TokenClaims {
  const forged = () => new AskRefusedError("token_forged", askId);
  if (typeof token !== "string" || token.length > 1_000) throw forged();
  const [prefix, payload, mac, ...rest] = token.split(".");
  if (prefix !== TOKEN_PREFIX || !payload || !mac || rest.length > 0) throw forged();
  const want = Buffer.from(askTokenMac(config.trailKey, scope, payload));
  const got = Buffer.from(mac);
  if (got.length !== want.length || !timingSafeEqual(got, want)) throw forged();
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    throw forged();
  }
  if (!Array.isArray(claims) || claims.length !== 3) throw forged();
  const [id, digest, expiresAt] = claims as [unknown, unknown, unknown];
  if (id !== askId || typeof digest !== "string" || typeof expiresAt !== "number") throw forged();
  return { digest, expiresAt };
}

/** The request read once, as data, with its closed fields. */
function normalizeResolve(raw: unknown): ResolveAskRequest {
  const r = closedObject("resolveAsk", raw, [
    "scope",
    "askId",
    "decision",
    "by",
    "digest",
    "token",
  ]);
  if (r.decision !== "approve" && r.decision !== "deny")
    throw new ValidationError("decision", "closed", 'decision is "approve" or "deny"');
  return {
    scope: normalizeScope(r.scope),
    askId: validateAskId(r.askId),
    decision: r.decision,
    by: validateId("by", r.by),
    ...(r.digest !== undefined ? { digest: String(r.digest) } : {}),
    ...(r.token !== undefined ? { token: r.token as string } : {}),
  };
}

/**
 * Records a person's decision on a parked ask, durably, first-wins: a token is checked first (MAC,
 * ask, expiry), then the store decides (digest, expiry, an earlier decision). Every refusal is an
 * `AskRefusedError` and records nothing. The caller goes on with the turn once it is ready.
 */
export async function recordDecision(
  config: ResolvedConfig,
  raw: ResolveAskRequest,
): Promise<{ readonly result: ResolveAskResult; readonly turn: ParkedTurnSummary }> {
  const parked = parkingOf(config);
  if (!parked) throw new ConversationConfigError('resolveAsk needs asks: "park"');
  const req = normalizeResolve(raw);
  const now = config.clock.now();
  const claims =
    req.token !== undefined ? readToken(config, req.scope, req.askId, req.token) : undefined;
  if (claims && now >= claims.expiresAt) throw new AskRefusedError("token_expired", req.askId);
  const found = (await parked.find(req.askId)).find(
    (t) => t.scope.org === req.scope.org && t.scope.uid === req.scope.uid,
  );
  const ask = found?.asks.find((a) => a.askId === req.askId);
  if (!found || !ask) throw new AskRefusedError("unknown_ask", req.askId);
  const allowed = req.decision === "approve";
  const decided: DecideResult = await parked.decide({
    scope: req.scope,
    askId: req.askId,
    digest: claims?.digest ?? req.digest ?? ask.digest,
    decision: {
      allowed,
      by: "operator",
      ...(allowed ? {} : { reason: "operator_denied" }),
      decidedBy: req.by,
    },
    now,
  });
  const turn = refusalOf(decided, req);
  return { result: { askId: req.askId, rootKey: found.rootKey, decision: req.decision }, turn };
}

/** The store's answer as the turn to go on with, or the typed refusal. */
function refusalOf(decided: DecideResult, req: ResolveAskRequest): ParkedTurnSummary {
  switch (decided.status) {
    case "recorded":
      return decided.turn;
    case "same":
      // A token decides once; an equal decision without a token is an idempotent retry.
      if (req.token !== undefined) throw new AskRefusedError("token_replayed", req.askId);
      return decided.turn;
    case "conflict":
      throw new AskRefusedError(
        req.token !== undefined ? "token_replayed" : "already_decided",
        req.askId,
      );
    case "digest_mismatch":
      throw new AskRefusedError("digest_mismatch", req.askId);
    case "expired":
      throw new AskRefusedError("expired", req.askId);
    case "unknown":
      throw new AskRefusedError("unknown_ask", req.askId);
  }
}
