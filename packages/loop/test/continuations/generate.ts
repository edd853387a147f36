// Writes the current version's corpus once: `node --conditions=alma-source --import tsx
// packages/loop/test/continuations/generate.ts` from the repo root. A file already written is never
// written again: the corpus is what earlier engines wrote, and later versions must read it as is.
// Version 1 (in v1/) was the record itself; from version 2 (in v2/) a file is what a store holds at
// that boundary: the record, whose messages refer to outputs, and every output stored so far.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  CONTINUATION_VERSION,
  type Continuation,
  referToOutputs,
  type TurnMessageOutput,
} from "@alma-harness/loop";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { defineTool } from "@alma-harness/core";
import { echoTool, harness } from "../harness.js";

const out = join(import.meta.dirname, `v${CONTINUATION_VERSION}`);
mkdirSync(out, { recursive: true });

async function scenario(name: string, opts: Parameters<typeof harness>[0]): Promise<void> {
  const written: Continuation[] = [];
  const h = harness({ ...opts, continuations: { write: (c) => void written.push(c) } });
  // A park is a boundary too: the writer gets what a store keeps for the resume.
  await h.run();
  const held = new Map<string, TurnMessageOutput>();
  written.forEach((c, i) => {
    const parked = c.next.kind === "run_tools" && c.next.calls.some((x) => x.state === "asked");
    const file = join(out, `${name}-${i + 1}-${parked ? "parked" : c.next.kind}.json`);
    const { record, outputs } = referToOutputs(c, new Set(held.keys()));
    for (const o of outputs) held.set(o.digest, o);
    const stored = { record, outputs: [...held.values()] };
    if (!existsSync(file)) writeFileSync(file, `${JSON.stringify(stored, null, 2)}\n`);
  });
}

await scenario("w2", {
  tools: [echoTool],
  script: [
    scriptedToolCall({ id: "c1", name: "echo", input: { text: "hi" } }, { text: "Looking." }),
    scriptedText("Done."),
  ],
});
await scenario("parallel-unknown", {
  tools: [echoTool],
  limits: { maxParallelToolCalls: 2 },
  script: [
    scriptedToolCall([
      { id: "c1", name: "echo", input: { text: "a" } },
      { id: "c2", name: "ghost", input: {} },
    ]),
    scriptedText("One of them failed."),
  ],
});
await scenario("call-limit", {
  tools: [echoTool],
  limits: { maxCalls: 1 },
  script: [scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } })],
});

const book = defineTool({
  name: "book",
  description: "Books a slot.",
  input: { type: "object", properties: { slot: { type: "string" } }, required: ["slot"] },
  authorize: (input) => ({ action: "write", subject: `slot:${String(input.slot)}` }),
  handler: (input) => ({ booked: input.slot }),
});
await scenario("parked", {
  tools: [echoTool, book],
  permissions: { decide: (r) => (r.tool === "book" ? "ask" : "allow") },
  asks: "park",
  script: [
    scriptedToolCall([
      { id: "c1", name: "echo", input: { text: "first" } },
      { id: "c2", name: "book", input: { slot: "mon-9" } },
      { id: "c3", name: "echo", input: { text: "after" } },
    ]),
  ],
});
