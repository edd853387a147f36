import { describe, expect, it } from "vitest";
import { doctorCli, type FetchLike, formatDoctor, runDoctor } from "../src/index.js";
import { ANTHROPIC_TEXT, chunkLines, toSse } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

const server = serverPerTest();

/** Sends every provider's request to the local server instead of the internet. */
const local = (): FetchLike => (url, init) =>
  globalThis.fetch(`${server.url}${new URL(url).pathname}`, init);

describe("doctor (live check)", () => {
  it("skips every provider without its key and sends nothing", async () => {
    const results = await runDoctor({}, local());
    expect(results.map((r) => r.status)).toEqual([
      "skipped",
      "skipped",
      "skipped",
      "skipped",
      "skipped",
    ]);
    expect(results[0]?.detail).toContain("ANTHROPIC_API_KEY");
    expect(server.requests).toHaveLength(0);
    const lines: string[] = [];
    const code = await doctorCli({}, (line) => lines.push(line));
    expect(code).toBe(0);
    expect(lines.join("\n")).toContain("nothing was sent");
  });

  it("sends one tiny request per configured provider and reports what worked", async () => {
    server.enqueue(
      { body: ANTHROPIC_TEXT },
      {
        status: 401,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ error: { message: "Incorrect API key provided" } }),
      },
      { body: toSse(chunkLines("openai/openai-text.chunks.txt"), { named: false, done: true }) },
      { body: toSse(chunkLines("openai/openai-text.chunks.txt"), { named: false, done: true }) },
    );
    const results = await runDoctor(
      {
        ANTHROPIC_API_KEY: "sk-ant-secret",
        OPENAI_API_KEY: "sk-secret",
        ALMA_OPENAI_COMPAT_URL: "http://127.0.0.1:1/v1",
        ALMA_OPENAI_COMPAT_MODEL: "llama3",
      },
      local(),
    );
    expect(results.map((r) => [r.check, r.status])).toEqual([
      ["anthropic", "ok"],
      ["openai (chat completions)", "failed"],
      ["openai (responses)", "failed"],
      ["openrouter", "skipped"],
      ["openai-compatible", "ok"],
    ]);
    expect(results[0]?.detail).toBe("claude-haiku-4-5: stop end_turn, 12 in / 30 out");
    expect(results[1]?.detail).toContain("[auth]");
    expect(formatDoctor(results)).not.toMatch(/sk-ant-secret|sk-secret/);
    expect(server.requests.map((r) => r.path)).toEqual([
      "/v1/messages",
      "/v1/chat/completions",
      "/v1/responses",
      "/v1/chat/completions",
    ]);
  });
});
