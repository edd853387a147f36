import type { ModelRequest } from "@alma-harness/core";
import { createAnthropicClient } from "./anthropic/client.js";
import { createOpenAIChatClient } from "./openai-chat/client.js";
import { createOpenAICompatibleClient } from "./openai-compatible/client.js";
import { createOpenAIResponsesClient } from "./openai-responses/client.js";
import { createOpenRouterClient } from "./openrouter/client.js";
import type { FetchLike, ProviderClient } from "./shared/types.js";

/** One line of the live check. Never contains a key or a prompt. */
export interface DoctorResult {
  readonly check: string;
  readonly status: "ok" | "failed" | "skipped";
  readonly detail: string;
}

export type DoctorEnv = Readonly<Record<string, string | undefined>>;

const TIMEOUT_MS = 60_000;

interface Check {
  readonly name: string;
  readonly needs: string;
  readonly client: () => ProviderClient;
  readonly model: string;
}

function checks(
  env: DoctorEnv,
  fetch: FetchLike | undefined,
): { check: Check | undefined; name: string; needs: string }[] {
  const f = fetch ? { fetch } : {};
  const has = (key: string) => typeof env[key] === "string" && env[key] !== "";
  const list: { name: string; needs: string; ok: boolean; make: () => Check }[] = [
    {
      name: "anthropic",
      needs: "ANTHROPIC_API_KEY",
      ok: has("ANTHROPIC_API_KEY"),
      make: () => ({
        name: "anthropic",
        needs: "",
        model: env.ALMA_ANTHROPIC_MODEL || "claude-haiku-4-5",
        client: () => createAnthropicClient({ apiKey: env.ANTHROPIC_API_KEY, ...f }),
      }),
    },
    {
      name: "openai (chat completions)",
      needs: "OPENAI_API_KEY",
      ok: has("OPENAI_API_KEY"),
      make: () => ({
        name: "openai",
        needs: "",
        model: env.ALMA_OPENAI_MODEL || "gpt-4.1-nano",
        client: () => createOpenAIChatClient({ apiKey: env.OPENAI_API_KEY, ...f }),
      }),
    },
    {
      name: "openai (responses)",
      needs: "OPENAI_API_KEY",
      ok: has("OPENAI_API_KEY"),
      make: () => ({
        name: "openai",
        needs: "",
        model: env.ALMA_OPENAI_MODEL || "gpt-4.1-nano",
        client: () => createOpenAIResponsesClient({ apiKey: env.OPENAI_API_KEY, ...f }),
      }),
    },
    {
      name: "openrouter",
      needs: "OPENROUTER_API_KEY",
      ok: has("OPENROUTER_API_KEY"),
      make: () => ({
        name: "openrouter",
        needs: "",
        model: env.ALMA_OPENROUTER_MODEL || "openai/gpt-4.1-mini",
        client: () =>
          createOpenRouterClient({ apiKey: env.OPENROUTER_API_KEY, appName: "alma doctor", ...f }),
      }),
    },
    {
      name: "openai-compatible",
      needs: "ALMA_OPENAI_COMPAT_URL and ALMA_OPENAI_COMPAT_MODEL",
      ok: has("ALMA_OPENAI_COMPAT_URL") && has("ALMA_OPENAI_COMPAT_MODEL"),
      make: () => ({
        name: "openai-compatible",
        needs: "",
        model: env.ALMA_OPENAI_COMPAT_MODEL ?? "",
        client: () =>
          createOpenAICompatibleClient({
            baseURL: env.ALMA_OPENAI_COMPAT_URL ?? "",
            apiKey: env.ALMA_OPENAI_COMPAT_KEY || undefined,
            ...f,
          }),
      }),
    },
  ];
  return list.map((c) => ({ name: c.name, needs: c.needs, check: c.ok ? c.make() : undefined }));
}

function tinyRequest(model: string): ModelRequest {
  return {
    model,
    system: [],
    messages: [
      { role: "user", blocks: [{ type: "text", text: "Reply with the single word: ok" }] },
    ],
    tools: [],
    maxOutputTokens: 16,
  };
}

async function runOne(check: Check): Promise<{ status: "ok" | "failed"; detail: string }> {
  try {
    const client = check.client();
    const request = tinyRequest(check.model);
    client.validate(request);
    let stop = "";
    let usage = "usage unknown";
    for await (const event of client.stream(request, AbortSignal.timeout(TIMEOUT_MS))) {
      if (
        event.type === "usage" &&
        (event.evidence.status === "known" || event.evidence.status === "unpriced")
      ) {
        usage = `${event.evidence.usage.inputTokens} in / ${event.evidence.usage.outputTokens} out`;
      }
      if (event.type === "response_completed") stop = String(event.stopReason);
    }
    return { status: "ok", detail: `${check.model}: stop ${stop}, ${usage}` };
  } catch (error) {
    const kind =
      typeof error === "object" && error !== null && "kind" in error
        ? ` [${String((error as { kind: unknown }).kind)}]`
        : "";
    return {
      status: "failed",
      detail: `${check.model}${kind}: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}

/**
 * The live check (`alma doctor`): one tiny real request per provider whose key is in `env`
 * (ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY, ALMA_OPENAI_COMPAT_URL with
 * ALMA_OPENAI_COMPAT_MODEL and optional ALMA_OPENAI_COMPAT_KEY; models overridable with
 * ALMA_ANTHROPIC_MODEL, ALMA_OPENAI_MODEL, ALMA_OPENROUTER_MODEL). A provider without its key is
 * `skipped` and says which variable to set. Sequential, each bounded by a 60 s timeout. Not part
 * of `npm test`: it spends a few tokens on the user's accounts.
 */
export async function runDoctor(env: DoctorEnv, fetch?: FetchLike): Promise<DoctorResult[]> {
  const results: DoctorResult[] = [];
  for (const { name, needs, check } of checks(env, fetch)) {
    if (!check) {
      results.push({ check: name, status: "skipped", detail: `set ${needs} to check it` });
      continue;
    }
    const outcome = await runOne(check);
    results.push({ check: name, ...outcome });
  }
  return results;
}

/** Human-readable lines for a terminal. */
export function formatDoctor(results: readonly DoctorResult[]): string {
  const mark = { ok: "ok     ", failed: "FAILED ", skipped: "skipped" } as const;
  return results.map((r) => `${mark[r.status]}  ${r.check}: ${r.detail}`).join("\n");
}
