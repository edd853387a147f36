import { ValidationError } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { createOpenRouterClient, type OpenRouterRouting } from "../src/index.js";
import { baseRequest, collect, collectError, usageEvidence, userText } from "./helpers/collect.js";
import { cassette } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

/**
 * Issue 19, finding 4: OpenRouter's `provider` routing object (openrouter.ai/docs/features/
 * provider-routing; its SDK's `Provider` model: `dataCollection` "allow" is the default, `zdr`
 * restricts to zero-data-retention endpoints), on recorded traffic.
 */
const server = serverPerTest();
const MODEL = "anthropic/claude-sonnet-4.5";
const client = (providerRouting?: OpenRouterRouting) =>
  createOpenRouterClient({
    apiKey: "sk-or-test",
    baseURL: `${server.url}/api/v1`,
    ...(providerRouting ? { providerRouting } : {}),
  });
const recorded = () =>
  cassette("openrouter/test_openrouter_streaming_reasoning.yaml")[0]?.response.body?.string ?? "";
const request = (overrides = {}) =>
  baseRequest(MODEL, { messages: [userText("What is 2+2?")], ...overrides });

describe("OpenRouter data policy", () => {
  it("sends the client's preference as the provider object and names the upstream that served", async () => {
    server.enqueue({ body: recorded() });
    const events = await collect(
      client({
        data_collection: "deny",
        order: ["anthropic"],
        allow_fallbacks: false,
        require_parameters: true,
      }),
      request(),
    );
    expect(server.requests[0]?.body).toEqual({
      model: MODEL,
      messages: [{ role: "user", content: "What is 2+2?" }],
      stream: true,
      stream_options: { include_usage: true },
      max_completion_tokens: 1024,
      provider: {
        data_collection: "deny",
        order: ["anthropic"],
        allow_fallbacks: false,
        require_parameters: true,
      },
    });
    expect(usageEvidence(events)).toMatchObject({ status: "known", upstream: "google" });
  });

  it("refuses above internal without zdr or data_collection deny, before any byte; allows at or below internal", async () => {
    for (const sensitivity of ["confidential", "restricted"] as const) {
      for (const routing of [
        undefined,
        { data_collection: "allow" as const },
        { zdr: false, only: ["anthropic"] },
      ]) {
        const { error } = await collectError(client(routing), request({ sensitivity }));
        expect(error).toMatchObject({
          kind: "unsupported",
          provider: "openrouter",
          retryable: false,
        });
      }
    }
    expect(server.requests).toHaveLength(0);
    server.enqueue({ body: recorded() }, { body: recorded() }, { body: recorded() });
    await collect(client(), request({ sensitivity: "internal" }));
    await collect(client({ zdr: true }), request({ sensitivity: "restricted" }));
    await collect(client({ data_collection: "deny" }), request({ sensitivity: "confidential" }));
    expect(server.requests.map((r) => (r.body as { provider?: unknown }).provider)).toEqual([
      undefined,
      { zdr: true },
      { data_collection: "deny" },
    ]);
  });

  it("a per-call preference is chosen from the call's model and sensitivity, and checked like a static one", async () => {
    const seen: unknown[] = [];
    const routing: OpenRouterRouting = (call) => {
      seen.push(call);
      return call.sensitivity === "restricted"
        ? { zdr: true }
        : call.sensitivity === "confidential"
          ? ({ zdr: "yes" } as never)
          : undefined;
    };
    server.enqueue({ body: recorded() });
    await collect(client(routing), request({ sensitivity: "restricted" }));
    expect(server.requests[0]?.body).toMatchObject({ provider: { zdr: true } });
    expect(
      (await collectError(client(routing), request({ sensitivity: "confidential" }))).error,
    ).toMatchObject({ kind: "unsupported" });
    expect(seen).toContainEqual({ model: MODEL, sensitivity: "restricted" });
  });

  it("bad static preferences are a typed error at construction", () => {
    expect(() => client({ zdr: "true" } as never)).toThrow(ValidationError);
    expect(() => client({ data_collection: "maybe" } as never)).toThrow(ValidationError);
    expect(() => client({ only: ["ok", "not a slug"] } as never)).toThrow(ValidationError);
    expect(() => client({ only: Array.from({ length: 33 }, (_, i) => `p${i}`) })).toThrow(
      ValidationError,
    );
    expect(() => client({ only: Array.from({ length: 32 }, (_, i) => `p${i}`) })).not.toThrow();
    expect(() => client({ sort: "price" } as never)).toThrow(ValidationError);
  });
});
