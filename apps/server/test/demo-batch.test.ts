import type { ModelRequest } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { DemoBatchTransport, demoSummary } from "../src/models/demo-batch.js";
import { usageOf } from "../src/models/demo.js";

const request = (text: string, tools: ModelRequest["tools"] = []): ModelRequest => ({
  model: "offline-demo",
  system: [{ type: "text", text: "Summarize." }],
  messages: [{ role: "user", blocks: [{ type: "text", text }] }],
  tools,
  maxOutputTokens: 400,
});

describe("the offline demo batch transport (production code of the host)", () => {
  it("a batch is in progress on its first poll and ended from the second; each item gets the deterministic summary at the demo's token counts, batch tier", async () => {
    const t = new DemoBatchTransport(() => 1_000);
    const items = [
      {
        customId: "routine",
        request: request(
          "Summarize today's day at Sunrise Clinic for the staff: all of it. Then more.\n\nThe day's appointments (2026-12-01):\n- 09:00 p-1001 booked\n- 10:30 p-1002 cancelled\n- 14:00 p-1003 booked",
        ),
      },
    ];
    const { batchId } = await t.submit("job-1", items);
    await expect(t.results(batchId), "not ended: no results").rejects.toMatchObject({
      kind: "invalid_request",
    });
    expect(await t.poll(batchId)).toBe("in_progress");
    expect(await t.poll(batchId)).toBe("ended");
    const [result] = await t.results(batchId);
    const text = demoSummary(items[0]?.request as ModelRequest);
    expect(text).toBe(
      "Offline demo summary (batch job). Asked: Summarize today's day at Sunrise Clinic for the staff: Given: 2 booked, 1 cancelled. A real provider writes the staff's three lines here.",
    );
    expect(result).toEqual({
      customId: "routine",
      type: "succeeded",
      stopReason: "end_turn",
      text,
      toolCalls: [],
      usage: { ...usageOf(items[0]?.request as ModelRequest, text), serviceTier: "batch" },
    });
    expect(await t.results(batchId), "the same answer every time").toEqual([result]);
    expect(t.submitted).toBe(1);
  });

  it("finds a job it holds by id (a lost acknowledgement), absent otherwise; a batch it never created (a restart) polls failed", async () => {
    const t = new DemoBatchTransport(() => 5_000);
    const { batchId } = await t.submit("job-1", [
      { customId: "routine", request: request("Summarize.") },
    ]);
    expect(await t.find("job-1", ["routine"], 5_000)).toEqual({ status: "found", batchId });
    expect(
      await t.find("job-1", ["routine"], 5_001),
      "created before the submission started: not this one",
    ).toEqual({ status: "absent" });
    expect(await t.find("job-2", ["routine"], 0)).toEqual({ status: "absent" });
    expect(await new DemoBatchTransport().poll(batchId)).toBe("failed");
  });

  it("refuses an item with tools (unsupported), before anything is sent", () => {
    const t = new DemoBatchTransport();
    expect(() =>
      t.validate(
        request("x", [{ name: "book", description: "d", inputSchema: { type: "object" } }]),
      ),
    ).toThrow(expect.objectContaining({ kind: "unsupported" }));
    expect(t.submitted).toBe(0);
  });
});
