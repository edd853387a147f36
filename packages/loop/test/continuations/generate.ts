// Writes the version-1 corpus once: `node --conditions=alma-source --import tsx
// packages/loop/test/continuations/generate.ts` from the repo root. A file already in v1/ is never
// written again: the corpus is what earlier engines wrote, and later versions must read it as is.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Continuation } from "@alma-harness/loop";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { defineTool } from "@alma-harness/core";
import { echoTool, harness } from "../harness.js";

const out = join(import.meta.dirname, "v1");

async function scenario(name: string, opts: Parameters<typeof harness>[0]): Promise<void> {
  const written: Continuation[] = [];
  const h = harness({ ...opts, continuations: { write: (c) => void written.push(c) } });
  // A park is a boundary too: the writer gets what a store keeps for the resume.
  await h.run();
  written.forEach((c, i) => {
    const parked = c.next.kind === "run_tools" && c.next.calls.some((x) => x.state === "asked");
    const file = join(out, `${name}-${i + 1}-${parked ? "parked" : c.next.kind}.json`);
    if (!existsSync(file)) writeFileSync(file, `${JSON.stringify(c, null, 2)}\n`);
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
