import { afterEach, describe, expect, it } from "vitest";
import { call, startHost, type TestHost } from "./helpers.js";

let t: TestHost;
afterEach(async () => {
  await t?.close();
});

async function post(raw: RequestInit["body"], headers: Record<string, string> = {}) {
  return call(t.url, "/v1/sessions/s1/turns", {
    token: await t.token(),
    raw,
    headers: { "content-type": "application/json", "idempotency-key": "k1", ...headers },
  });
}

describe("request bodies are refused before the runner", () => {
  it("413 for a body over the limit, declared or streamed without a length", async () => {
    t = await startHost({ http: { bodyLimit: 1024 } });
    const big = JSON.stringify({ input: "x".repeat(5_000) });
    const declared = await post(big);
    expect(declared.status).toBe(413);
    expect(declared.body).toMatchObject({ error: { code: "payload_too_large" } });
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 8; i += 1)
          controller.enqueue(new TextEncoder().encode("x".repeat(512)));
        controller.close();
      },
    });
    const streamed = await post(chunks);
    expect(streamed.status).toBe(413);
    expect(t.calls()).toBe(0);
  });

  it("400 for malformed JSON or bytes that are not UTF-8, 422 for JSON that is not an object", async () => {
    t = await startHost();
    expect((await post("{ not json")).body).toMatchObject({
      error: { code: "malformed_json", message: "the body is not valid JSON" },
    });
    expect((await post("{ not json")).status).toBe(400);
    const notUtf8 = await post(new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]));
    expect(notUtf8.status).toBe(400);
    expect(notUtf8.body).toMatchObject({
      error: { code: "malformed_json", message: "the body is not UTF-8" },
    });
    for (const body of ["[]", '"text"', "null", "3"]) expect((await post(body)).status).toBe(422);
    expect(t.calls()).toBe(0);
  });

  it("415 for a body that is not declared as JSON", async () => {
    t = await startHost();
    const res = await post('{"input":"hi"}', { "content-type": "text/plain" });
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({ error: { code: "unsupported_media_type" } });
    expect(t.calls()).toBe(0);
  });

  it("keeps serving on the same connection after refusing a body", async () => {
    t = await startHost({ http: { bodyLimit: 64 } });
    expect((await post(JSON.stringify({ input: "y".repeat(200) }))).status).toBe(413);
    expect((await call(t.url, "/healthz")).status).toBe(200);
  });
});
