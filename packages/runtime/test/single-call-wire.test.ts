import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import type { JsonSchema } from "@alma-harness/core";
import { inMemoryStores } from "@alma-harness/core/memory";
import { createAnthropicClient } from "@alma-harness/providers";
import { createGovernedStepRunner } from "@alma-harness/single-call";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** The recorded Anthropic structured-output stream (providers' fixtures, see their MANIFEST.md), as SSE. */
const FIXTURE = fileURLToPath(new URL("../../providers/test/fixtures/anthropic/anthropic-json-output-format.1.chunks.txt", import.meta.url));
const SSE = readFileSync(FIXTURE, "utf8")
  .split("\n")
  .filter((l) => l.trim().length > 0)
  .map((l) => `event: ${(JSON.parse(l) as { type: string }).type}\ndata: ${l}\n\n`)
  .join("");

const character = (classes: readonly string[]): JsonSchema => ({
  type: "object",
  properties: {
    characters: {
      type: "array",
      items: { type: "object", properties: { name: { type: "string" }, class: { type: "string", enum: [...classes] }, description: { type: "string" } }, required: ["name", "class", "description"], additionalProperties: false },
    },
  },
  required: ["characters"],
  additionalProperties: false,
});

let server: Server;
let url = "";
const bodies: unknown[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    let text = "";
    req.on("data", (c: Buffer) => {
      text += c.toString("utf8");
    });
    req.on("end", () => {
      bodies.push(JSON.parse(text));
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(SSE);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("a step call through the real Anthropic adapter, on recorded traffic over a local socket", () => {
  const runner = (stores = inMemoryStores()) =>
    createGovernedStepRunner({
      stores,
      clients: [createAnthropicClient({ apiKey: "sk-ant-test", baseURL: url })],
      policy: { resolve: () => ({ clientId: "anthropic", model: "claude-sonnet-4-5", maxOutputTokens: 2048, cache: false }) },
      prices: { version: "p1", models: { "claude-sonnet-4-5": { rates: { input: 3, output: 15 } } } },
      policyVersion: "policy-1",
      configRevision: "rev-1",
      trailKey: "single-call-wire-trail-key-of-32-bytes-or-more",
      resultRetentionMs: 86_400_000,
    });
  const scope = { org: "guild", uid: "scribe" };
  const request = (key: string, classes: readonly string[]) => ({
    scope,
    idempotencyKey: key,
    intent: { tier: "balanced" as const, sensitivity: "internal" as const },
    prompt: "Describe three characters.",
    output: { name: "characters", schema: character(classes) },
    temperature: 0,
  });

  it("sends output_config.format, validates the recorded answer against the schema and settles its recorded usage", async () => {
    const result = await runner().run(request("k1", ["warrior", "mage", "thief"]));
    expect(result.status).toBe("completed");
    if (result.status !== "completed") return;
    expect((result.object.characters as { name: string }[]).map((c) => c.name)).toEqual(["Theron Ironheart", "Lyra Starweaver", "Rook Shadowstep"]);
    // 313 input and 305 output tokens at $3 / $15 per million.
    expect(result.receipt).toMatchObject({ usage: { inputTokens: 313, outputTokens: 305 }, usdMicros: 313 * 3 + 305 * 15, kind: "single" });
    expect(bodies.at(-1)).toMatchObject({ model: "claude-sonnet-4-5", temperature: 0, output_config: { format: { type: "json_schema", schema: character(["warrior", "mage", "thief"]) } } });
  });

  it("the same recorded answer under a schema it does not satisfy is invalid, with the receipt", async () => {
    const result = await runner().run(request("k2", ["warrior", "mage"]));
    expect(result).toMatchObject({ status: "invalid", reason: "schema", problem: "/characters/2/class must be equal to one of the allowed values", receipt: { usdMicros: 313 * 3 + 305 * 15 } });
  });
});
