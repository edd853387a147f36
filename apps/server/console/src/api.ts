/** The console's view of the host API: the operator token, tenant tokens minted with it, SSE. */

import { readSseEvents } from "../../src/sse-events.js";

export interface Info {
  readonly offlineDemo: boolean;
  readonly model: string;
  readonly provider: string;
  readonly tiers: Record<string, string>;
  readonly caps: { readonly perTurnUsd: number; readonly perClinicDayUsd: number };
  readonly store: { readonly kind: string; readonly durable: boolean };
  readonly tenants: readonly { readonly org: string; readonly name: string }[];
}

/** A tenant and the people the host knows in it (operator view). */
export interface Tenant {
  readonly org: string;
  readonly name: string;
  readonly people: readonly { readonly uid: string; readonly name: string | null }[];
}

/** A random id; `crypto.randomUUID` needs a secure context, `getRandomValues` does not. */
export function randomId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) =>
    b.toString(16).padStart(2, "0"),
  ).join("");
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const TOKEN_KEY = "alma.adminToken";

/** The operator token: from the URL fragment (`#admin=…`, then removed from the address bar) or this tab's storage. */
export function adminToken(): string | undefined {
  const m = /(?:^#|&)admin=([^&]+)/.exec(location.hash);
  if (m?.[1]) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

export function saveAdminToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}

async function failOn(response: Response): Promise<void> {
  if (response.ok) return;
  let code = "http_error";
  let message = `HTTP ${response.status}`;
  try {
    const body = (await response.json()) as { error?: { code: string; message: string } };
    if (body.error) ({ code, message } = body.error);
  } catch {
    // not JSON
  }
  throw new ApiError(response.status, code, message);
}

export async function getJson<T>(path: string, token?: string): Promise<T> {
  const response = await fetch(path, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  await failOn(response);
  return (await response.json()) as T;
}

export async function postJson<T>(path: string, token: string, body?: unknown): Promise<T> {
  const response = await fetch(path, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  await failOn(response);
  return (await response.json()) as T;
}

export async function deleteJson<T>(path: string, token: string): Promise<T> {
  const response = await fetch(path, {
    method: "DELETE",
    headers: { authorization: `Bearer ${token}` },
  });
  await failOn(response);
  return (await response.json()) as T;
}

const tenantTokens = new Map<string, { token: string; expiresAt: number }>();

/** A tenant token for chatting as a patient, minted by the host for the operator. */
export async function tenantToken(admin: string, org: string, uid: string): Promise<string> {
  const key = `${org}/${uid}`;
  const cached = tenantTokens.get(key);
  if (cached && cached.expiresAt > Date.now() + 60_000) return cached.token;
  const minted = await postJson<{ token: string; expiresAt: number }>("/v1/admin/tokens", admin, {
    org,
    uid,
  });
  tenantTokens.set(key, minted);
  return minted.token;
}

export interface SseEvent {
  readonly event: string;
  readonly data: unknown;
  /** The event's resumable position, when it has one (text, asks, the result). */
  readonly id?: string;
}

/** The events of one SSE body, their data parsed (the reader the CLI uses too). */
async function* frames(body: NonNullable<Response["body"]>): AsyncGenerator<SseEvent> {
  for await (const e of readSseEvents(body))
    yield { event: e.event, data: JSON.parse(e.data) as unknown, ...(e.id ? { id: e.id } : {}) };
}

/** Whether a stream's event settles the turn (a result other than parked or running, or an error). */
function settles(e: SseEvent): boolean {
  if (e.event === "error") return true;
  if (e.event !== "result") return false;
  const status = (e.data as { status?: string }).status;
  return status !== "awaiting_approval" && status !== "in_progress";
}

/**
 * Posts a turn with `Accept: text/event-stream` and yields its events until the turn settles. When
 * the stream breaks (a dropped connection, a restart of the host) or the turn parks on an ask, it
 * reads on from the last event id (`GET` the turn's `Location` with `Last-Event-ID`): every event
 * once, the parked turn's continuation after the operator's decision.
 */
export async function* streamTurn(
  token: string,
  sessionId: string,
  text: string,
): AsyncGenerator<SseEvent> {
  const first = await fetch(`/v1/sessions/${encodeURIComponent(sessionId)}/turns`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "text/event-stream",
      "idempotency-key": `console-${randomId()}`,
    },
    body: JSON.stringify({ input: text }),
  });
  await failOn(first);
  const location = first.headers.get("location");
  let response: Response | undefined = first;
  let lastId: string | undefined;
  let failures = 0;
  for (;;) {
    if (response?.body) {
      try {
        for await (const e of frames(response.body)) {
          if (e.id) lastId = e.id;
          yield e;
          if (settles(e)) return;
        }
      } catch {
        // the connection broke: read on below
      }
    }
    if (!location) throw new ApiError(0, "no_result", "the stream ended without a result");
    response = await fetch(location, {
      headers: {
        authorization: `Bearer ${token}`,
        accept: "text/event-stream",
        ...(lastId ? { "last-event-id": lastId } : {}),
      },
    }).catch(() => undefined);
    if (response?.ok) failures = 0;
    else {
      if (response && response.status < 500) await failOn(response);
      failures += 1;
      if (failures > 30)
        throw new ApiError(0, "lost_host", "lost the host; the turn is kept there");
      response = undefined;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}
