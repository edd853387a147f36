import { defineTool, type Msg } from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { completed, harness, log, uncertain } from "./harness.js";

function outputOf(messages: readonly Msg[], index: number): unknown {
  const block = messages[index]?.blocks[0];
  return block?.type === "tool_result" ? block.output : undefined;
}

/** A zod tool whose refinement a model's input can fail, recording what its handler received. */
function bookTool(received: unknown[], refine: (day: string) => boolean = (d) => d !== "sunday") {
  return defineTool({
    name: "book",
    description: "Books a slot on a day.",
    input: z.object({
      day: z.string().refine(refine, "the clinic is closed on sunday"),
      slots: z.number().int().default(1),
    }),
    handler: (input) => {
      received.push(input);
      return { booked: input.day, slots: input.slots };
    },
  });
}

describe("a Standard Schema tool in a turn", () => {
  it("a failed refinement is the same TOOL_BAD_INPUT observation, and reaches no policy", async () => {
    const received: unknown[] = [];
    const asked: string[] = [];
    const h = harness({
      tools: [bookTool(received)],
      permissions: {
        decide: (r) => {
          asked.push(r.tool);
          return "allow";
        },
      },
      script: [
        scriptedToolCall({ id: "c1", name: "book", input: { day: "sunday" } }),
        scriptedText("closed"),
      ],
    });
    const outcome = await h.run();
    expect(log(outcome)[2]?.blocks[0]).toMatchObject({ code: "TOOL_BAD_INPUT", isError: true });
    expect(outputOf(log(outcome), 2)).toBe("invalid input: /day the clinic is closed on sunday");
    expect(received).toEqual([]);
    expect(asked).toEqual([]);
    expect(completed(outcome).reply).toEqual([{ type: "text", text: "closed" }]);
  });

  it("valid input runs the handler with the library's output; the log keeps the model's input", async () => {
    const received: unknown[] = [];
    const h = harness({
      tools: [bookTool(received)],
      script: [
        scriptedToolCall({ id: "c1", name: "book", input: { day: "monday" } }),
        scriptedText("booked"),
      ],
    });
    const outcome = await h.run();
    expect(received).toEqual([{ day: "monday", slots: 1 }]);
    expect(log(outcome)[1]?.blocks[0]).toMatchObject({ input: { day: "monday" } });
    expect(outputOf(log(outcome), 2)).toEqual({ booked: "monday", slots: 1 });
  });

  it("a refinement that throws is the tool's code failing: the turn is uncertain", async () => {
    const received: unknown[] = [];
    const h = harness({
      tools: [
        bookTool(received, () => {
          throw new Error("bug");
        }),
      ],
      script: [scriptedToolCall({ id: "c1", name: "book", input: { day: "monday" } })],
    });
    const outcome = await h.run();
    expect(uncertain(outcome).cause).toBe("tool:book");
    expect(received).toEqual([]);
  });
});
