import type { Msg } from "@alma-harness/core";

/** One message of a session as people read it: text, tool names, results' error flags; no payloads. */
export interface TranscriptEntry {
  readonly role: "user" | "assistant";
  readonly turn?: string;
  readonly text: string;
  /** `human`/`system` for a product-side message recorded out of turn. */
  readonly origin?: "human" | "system";
  readonly event?: string;
  readonly toolCalls?: readonly string[];
  readonly toolResults?: readonly { readonly name: string; readonly isError: boolean }[];
}

/** A turn of the session: its root key, the person's input and the last assistant text. */
export interface TranscriptTurn {
  readonly rootKey: string;
  readonly input: string;
  readonly reply: string;
  readonly tools: readonly string[];
}

function textOf(msg: Msg): { text: string; origin?: "human" | "system" } {
  let origin: "human" | "system" | undefined;
  const parts: string[] = [];
  for (const b of msg.blocks) {
    if (b.type !== "text" || b.origin === "harness") continue;
    if (b.origin === "human" || b.origin === "system") origin = b.origin;
    parts.push(b.text);
  }
  return { text: parts.join("\n"), ...(origin ? { origin } : {}) };
}

/** The readable form of a session's messages (the harness context and tool payloads are left out). */
export function transcriptOf(messages: readonly Msg[]): TranscriptEntry[] {
  return messages.map((msg) => {
    const calls = msg.blocks
      .filter((b) => b.type === "tool_call")
      .map((b) => (b.type === "tool_call" ? b.name : ""));
    const results = msg.blocks
      .filter((b) => b.type === "tool_result")
      .map((b) =>
        b.type === "tool_result"
          ? { name: b.name, isError: b.isError }
          : { name: "", isError: false },
      );
    return {
      role: msg.role,
      ...(msg.meta?.turn ? { turn: msg.meta.turn } : {}),
      ...textOf(msg),
      ...(msg.meta?.event ? { event: msg.meta.event.kind } : {}),
      ...(calls.length > 0 ? { toolCalls: calls } : {}),
      ...(results.length > 0 ? { toolResults: results } : {}),
    };
  });
}

/** Groups a transcript into turns, in order. */
export function turnsOf(entries: readonly TranscriptEntry[]): TranscriptTurn[] {
  const byKey = new Map<string, { input: string; reply: string; tools: string[] }>();
  for (const e of entries) {
    if (!e.turn) continue;
    let t = byKey.get(e.turn);
    if (!t) {
      t = { input: "", reply: "", tools: [] };
      byKey.set(e.turn, t);
    }
    if (e.role === "user" && !t.input && !e.toolResults) t.input = e.text;
    if (e.role === "assistant" && e.text) t.reply = e.text;
    for (const name of e.toolCalls ?? []) t.tools.push(name);
  }
  return [...byKey.entries()].map(([rootKey, t]) => ({ rootKey, ...t }));
}
