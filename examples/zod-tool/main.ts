// A zod tool in a governed turn (issue 27 §3): `npm run example:zod-tool`.
// The schema is converted once, at registration, by zod's own converter; its refinement runs on
// every call, and a call that fails it is the same TOOL_BAD_INPUT observation as a JSON Schema
// failure: the model reads why and calls again. Offline: a scripted model plays the model's part.
import { defineTool } from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { memory } from "@alma-harness/runtime";
import { z } from "zod";
import { offlineConfig } from "../offline.js";

const book = defineTool({
  name: "book_slot",
  description: "Books a slot at the clinic on a weekday.",
  input: z.object({
    day: z
      .enum(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])
      .refine((day) => day !== "sunday", "the clinic is closed on sunday"),
    slots: z.number().int().min(1).max(3).default(1),
  }),
  // Typed by the schema: `input.day` is the enum, `input.slots` a number (the default filled in).
  handler: (input) => ({ booked: input.day, slots: input.slots }),
});

console.log("wire schema (zod's own conversion, once):", JSON.stringify(book.inputSchema));

const { runner, stores } = memory(
  offlineConfig(
    "You book slots for a clinic.",
    [book],
    [
      scriptedToolCall({ id: "c1", name: "book_slot", input: { day: "sunday" } }),
      scriptedToolCall({ id: "c2", name: "book_slot", input: { day: "monday" } }),
      scriptedText("Booked: Monday, one slot."),
    ],
  ),
);

const scope = { org: "clinic-a", uid: "patient-42" };
const view = await runner.runTurn({
  scope,
  sessionId: "zod-example",
  idempotencyKey: "msg-1",
  input: "Book me a slot on Sunday, or Monday if Sunday is closed.",
  intent: { tier: "balanced", sensitivity: "internal" },
});
if (view.status !== "completed") throw new Error(`the turn ended ${view.status}`);
// What the model read back for each call, from the session log.
const { messages } = await stores.sessions.load(scope, "zod-example");
for (const message of messages)
  for (const block of message.blocks)
    if (block.type === "tool_result")
      console.log(
        `tool result ${block.callId}: ${block.isError ? `error ${block.code}` : "ok"}`,
        JSON.stringify(block.output),
      );
console.log("reply:", view.result.reply.map((b) => (b.type === "text" ? b.text : "")).join(""));
