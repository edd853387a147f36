import type { Shape } from "./wire.js";

/**
 * The prompt prefix of an outgoing request body, as the provider caches it: a list of segments in
 * prefix order — each tool, then the system prompt, then each message block (Anthropic: tools →
 * system → messages, prompt-caching "Cache prefix order"; OpenAI and OpenRouter are modelled the
 * same way, tools first). Each segment is the JSON of its part without `cache_control` (the
 * markers move every request; they mark, they are not content). `breakpoint` is the index of the
 * last segment the request marked (Anthropic `cache_control`); automatic caching (OpenAI,
 * OpenRouter without markers) caches the whole prompt, so it is the last segment.
 */
export interface Prefix {
  readonly segments: readonly string[];
  readonly regions: readonly Region[];
  readonly breakpoint: number;
  readonly toolCount: number;
}
export type Region = "tools" | "system" | "messages";

type Json = Record<string, unknown>;

const strip = (value: unknown): string => {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    return JSON.stringify(value);
  const { cache_control: _marker, ...rest } = value as Json;
  return JSON.stringify(rest);
};
const marked = (value: unknown): boolean =>
  value !== null && typeof value === "object" && "cache_control" in (value as Json);

export function prefixOf(shape: Shape, body: unknown): Prefix {
  const b = body as Json;
  const segments: string[] = [];
  const regions: Region[] = [];
  let breakpoint = -1;
  const push = (region: Region, part: unknown, text: string = strip(part)) => {
    if (marked(part)) breakpoint = segments.length;
    segments.push(text);
    regions.push(region);
  };
  const tools = (b.tools as unknown[] | undefined) ?? [];
  for (const tool of tools) push("tools", tool);
  if (shape === "anthropic") {
    for (const block of (b.system as unknown[] | undefined) ?? []) push("system", block);
    for (const message of (b.messages as Json[] | undefined) ?? []) {
      for (const block of message.content as unknown[])
        push("messages", block, `${message.role}:${strip(block)}`);
    }
    return { segments, regions, breakpoint, toolCount: tools.length };
  }
  if (shape === "openai-responses") {
    if (b.instructions !== undefined) push("system", b.instructions);
    for (const item of (b.input as unknown[] | undefined) ?? []) push("messages", item);
  } else {
    for (const message of (b.messages as Json[] | undefined) ?? [])
      push(message.role === "system" ? "system" : "messages", message);
  }
  return { segments, regions, breakpoint: segments.length - 1, toolCount: tools.length };
}

/** Where `next` stops repeating `previous` up to the previous request's last breakpoint; undefined when it repeats it whole. */
export interface Break {
  readonly at: number;
  readonly region: Region;
  /** The break is inside the tools the previous request already advertised (a reorder or a removal), not an append after them. */
  readonly withinAdvertised: boolean;
}

export function breakBetween(previous: Prefix, next: Prefix): Break | undefined {
  for (let i = 0; i <= previous.breakpoint; i += 1) {
    if (next.segments[i] !== previous.segments[i]) {
      // A tool where the previous request had its system prompt is a break at the tools array too.
      const region = next.regions[i] === "tools" ? "tools" : (previous.regions[i] ?? "messages");
      return { at: i, region, withinAdvertised: i < previous.toolCount };
    }
  }
  return undefined;
}

/** The tool names of a body, in order (Anthropic with `defer_loading` marked `~name`). */
export function toolNames(body: unknown): string[] {
  const tools = ((body as Json).tools as Json[] | undefined) ?? [];
  return tools.map((t) => {
    const name = String(t.name ?? (t.function as Json | undefined)?.name ?? t.type);
    return t.defer_loading === true ? `~${name}` : name;
  });
}
