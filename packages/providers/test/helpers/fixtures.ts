import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseYaml } from "./yaml.js";

/** The recorded provider traffic (copied from shared/fixtures/providers, see its MANIFEST.md). */
const ROOT = fileURLToPath(new URL("../fixtures/", import.meta.url));

export function fixturePath(name: string): string {
  const path = `${ROOT}${name}`;
  if (!existsSync(path)) throw new Error(`fixture ${name} not found under ${ROOT}`);
  return path;
}

export function readFixture(name: string): string {
  return readFileSync(fixturePath(name), "utf8");
}

/** `*.chunks.txt`: one JSON payload per line. */
export function chunkLines(name: string): string[] {
  return readFixture(name)
    .split("\n")
    .filter((l) => l.trim().length > 0);
}

/** SSE text from payload lines: `event:` named by each payload's `type` when `named`. */
export function toSse(
  lines: readonly string[],
  options: { named: boolean; done?: boolean },
): string {
  let out = "";
  for (const line of lines) {
    if (options.named) out += `event: ${(JSON.parse(line) as { type: string }).type}\n`;
    out += `data: ${line}\n\n`;
  }
  if (options.done) out += "data: [DONE]\n\n";
  return out;
}

export interface Interaction {
  readonly request: { readonly parsed_body?: unknown; readonly uri?: string };
  readonly response: {
    readonly status: { readonly code: number };
    readonly body?: { readonly string?: string };
    readonly parsed_body?: unknown;
  };
}

/** The interactions of a VCR cassette. */
export function cassette(name: string): Interaction[] {
  return (parseYaml(readFixture(name)) as { interactions: Interaction[] }).interactions;
}

/** The recorded Anthropic text reply, as its SSE body: the default answer of many tests. */
export const ANTHROPIC_TEXT = toSse(chunkLines("anthropic/anthropic-text.chunks.txt"), {
  named: true,
});
