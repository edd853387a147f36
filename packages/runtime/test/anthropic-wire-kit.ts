import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import type { JsonSchema, ModelPolicy } from "@alma-harness/core";

/** The recorded Anthropic structured-output stream (providers' fixtures, see their MANIFEST.md), as SSE. */
const FIXTURE = fileURLToPath(
  new URL(
    "../../providers/test/fixtures/anthropic/anthropic-json-output-format.1.chunks.txt",
    import.meta.url,
  ),
);
const SSE = readFileSync(FIXTURE, "utf8")
  .split("\n")
  .filter((l) => l.trim().length > 0)
  .map((l) => `event: ${(JSON.parse(l) as { type: string }).type}\ndata: ${l}\n\n`)
  .join("");

/** The recorded answer's schema: three characters whose class is one of `classes`. */
export const character = (classes: readonly string[]): JsonSchema => ({
  type: "object",
  properties: {
    characters: {
      type: "array",
      items: {
        type: "object",
        properties: {
          name: { type: "string" },
          class: { type: "string", enum: [...classes] },
          description: { type: "string" },
        },
        required: ["name", "class", "description"],
        additionalProperties: false,
      },
    },
  },
  required: ["characters"],
  additionalProperties: false,
});

/** The recorded answer's prices (Sonnet-class, $3 / $15 per million) and what its usage (313 in, 305 out) costs. */
export const WIRE_STEP_PRICES = {
  version: "p1",
  models: { "claude-sonnet-4-5": { rates: { input: 3, output: 15 } } },
} as const;
export const WIRE_STEP_MICROS = 313 * 3 + 305 * 15;
/** The scope the process test's host processes call in. */
export const WIRE_STEP_SCOPE = Object.freeze({ org: "proc-steps", uid: "desk" });
export const WIRE_STEP_POLICY: ModelPolicy = {
  resolve: () => ({
    clientId: "anthropic",
    model: "claude-sonnet-4-5",
    maxOutputTokens: 2048,
    cache: false,
  }),
};

/**
 * A real HTTP server on 127.0.0.1 answering every request with the recorded stream, after `holdMs`
 * (so concurrent callers arrive while one is in flight); `bodies` holds each request's JSON body,
 * one per dispatch, from whichever process sent it.
 */
export async function anthropicWire(opts: { readonly holdMs?: number } = {}) {
  const bodies: unknown[] = [];
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (c: Buffer) => {
      text += c.toString("utf8");
    });
    req.on("end", () => {
      bodies.push(JSON.parse(text));
      setTimeout(() => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(SSE);
      }, opts.holdMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return {
    url,
    bodies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A step request for the recorded answer under `key`, its schema's classes `classes`. */
export const wireStep = (
  scope: { readonly org: string; readonly uid: string },
  key: string,
  classes: readonly string[] = ["warrior", "mage", "thief"],
) => ({
  scope,
  idempotencyKey: key,
  intent: { tier: "balanced" as const, sensitivity: "internal" as const },
  prompt: "Describe three characters.",
  output: { name: "characters", schema: character(classes) },
  temperature: 0,
});
