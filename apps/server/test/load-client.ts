import { Agent, request } from "node:http";

/**
 * A turn request over `node:http` as a load test sees it: a stream (200, its events in order), a
 * refusal (any other status, with its `Retry-After` and error code), or a socket error (the code
 * Node reported: `ECONNRESET`, `EPIPE`, a hang-up).
 */
export type LoadOutcome =
  | { readonly kind: "stream"; readonly status: 200; readonly events: readonly SseSeen[] }
  | {
      readonly kind: "refused";
      readonly status: number;
      readonly retryAfter: string | undefined;
      readonly code: string | undefined;
    }
  | { readonly kind: "error"; readonly code: string };

export interface SseSeen {
  readonly event: string;
  readonly data: string;
}

/** An agent that opens a socket per request, as many at once as asked: every turn its own connection. */
export function loadAgent(): Agent {
  return new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
}

/** The events of an SSE body (comments and `retry:` left out). */
export function sseEvents(text: string): SseSeen[] {
  const out: SseSeen[] = [];
  for (const frame of text.split("\n\n")) {
    let event = "";
    let data = "";
    for (const line of frame.split("\n")) {
      if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data = line.slice(6);
    }
    if (event) out.push({ event, data });
  }
  return out;
}

function errorCode(body: string): string | undefined {
  try {
    return (JSON.parse(body) as { error?: { code?: string } }).error?.code;
  } catch {
    return undefined;
  }
}

/** POSTs one turn with `Accept: text/event-stream` and reads its whole answer. Never rejects. */
export function sseTurnOverHttp(
  url: string,
  agent: Agent,
  turn: { token: string; session: string; key: string; input: string },
): Promise<LoadOutcome> {
  const body = JSON.stringify({ input: turn.input });
  return new Promise((resolve) => {
    const req = request(`${url}/v1/sessions/${turn.session}/turns`, {
      method: "POST",
      agent,
      headers: {
        authorization: `Bearer ${turn.token}`,
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(body)),
        accept: "text/event-stream",
        "idempotency-key": turn.key,
      },
    });
    req.on("error", (error: NodeJS.ErrnoException) =>
      resolve({ kind: "error", code: error.code ?? error.message }),
    );
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", (error: NodeJS.ErrnoException) =>
        resolve({ kind: "error", code: error.code ?? error.message }),
      );
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        if (res.statusCode === 200)
          resolve({ kind: "stream", status: 200, events: sseEvents(text) });
        else {
          const retryAfter = res.headers["retry-after"];
          resolve({
            kind: "refused",
            status: res.statusCode ?? 0,
            retryAfter: typeof retryAfter === "string" ? retryAfter : undefined,
            code: errorCode(text),
          });
        }
      });
    });
    req.end(body);
  });
}

/** A GET over `node:http`: its status, or the socket error's code. Never rejects. */
export function getOverHttp(url: string, agent: Agent): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request(url, { agent });
    req.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
      res.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
    req.end();
  });
}
