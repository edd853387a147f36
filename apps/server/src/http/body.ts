import { HttpError } from "./errors.js";

export const DEFAULT_BODY_LIMIT = 64 * 1024;

const CLOSE = { connection: "close" };

/**
 * Reads a JSON object body of at most `limit` bytes. Everything is refused here, before any of it
 * reaches the runner: a wrong content type (415), a declared or actual size over the limit (413,
 * counted while streaming, so a body without Content-Length cannot slip past), bytes that are not
 * UTF-8 JSON (400) or JSON that is not an object (422).
 */
export async function readJsonObject(
  request: Request,
  limit = DEFAULT_BODY_LIMIT,
): Promise<Record<string, unknown>> {
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/json\s*(;|$)/i.test(type))
    throw new HttpError("unsupported_media_type", "send the body as application/json");
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (Number.isFinite(declared) && declared > limit)
    throw new HttpError("payload_too_large", `the body is over ${limit} bytes`, { headers: CLOSE });
  const bytes = await readLimited(request, limit);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new HttpError("malformed_json", "the body is not UTF-8");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError("malformed_json", "the body is not valid JSON");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new HttpError("invalid_input", "the body must be a JSON object");
  return value as Record<string, unknown>;
}

async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let next: Awaited<ReturnType<typeof reader.read>>;
    try {
      next = await reader.read();
    } catch {
      // The socket failed or timed out mid-body (the server's request timeout): not the host's fault.
      throw new HttpError("request_timeout", "the request body did not arrive in time", {
        headers: CLOSE,
      });
    }
    const { done, value } = next;
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw new HttpError("payload_too_large", `the body is over ${limit} bytes`, {
        headers: CLOSE,
      });
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}
