import { describe, expect, it } from "vitest";
import { serverPerTest } from "../../providers/test/helpers/server.js";
import { DEFERRED, runSession, tally } from "./prefix/session.js";
import { toolNames } from "./prefix/property.js";
import { SHAPES } from "./prefix/wire.js";

/**
 * Issue 16, item 3: a prompt prefix that only grows. The property, on the real request bodies of
 * the four adapters over a real local socket: across the steps and turns of a 30-turn session,
 * each request repeats the previous request's prefix, up to its last cache breakpoint, byte for
 * byte, unless a documented cause (a rotation, a grant change, a TTL change) says otherwise. On
 * the shapes that load by appending (OpenAI Chat, Responses, OpenRouter, and Anthropic with
 * `deferredLoading: "append"`), a load is an append after the tools already advertised, never a
 * change inside them. The scripted answers are built from the documented stream shapes; the
 * Anthropic `defer_loading` / `tool_reference` request shape is built from the tool-search-tool
 * documentation (no recorded exchange of a client-side search exists).
 */
const server = serverPerTest();

describe("the prompt prefix only grows (issue 16, item 3)", () => {
  for (const shape of SHAPES) {
    it(`${shape}: every break of the prefix has a documented cause; a load never reorders what was advertised`, async () => {
      const run = await runSession(shape, server);
      const counts = tally(run);
      console.log(`prefix ${shape}: ${JSON.stringify(counts)}`);
      expect(counts.pairs).toBeGreaterThanOrEqual(40);
      expect(counts.unexplained).toBe(0);
      expect(run.pairs.filter((p) => p.break?.withinAdvertised && p.causes.length === 0)).toEqual(
        [],
      );
      expect(run.volatileLast).toBe(true);
      const beforeRotation = run.main.filter((r) => r.turn === 22).at(-1);
      const afterRotation = run.main.filter((r) => r.turn === 30).at(-1);
      if (shape === "anthropic") {
        // Native loading: every deferred definition on every request, the array the same within a grant.
        expect(counts.toolBreaks).toBe(2); // the grant change and its return
        expect(counts.appends).toBe(0);
        for (const request of run.main)
          expect(
            toolNames(request.body).filter((n) => n.startsWith("~")).length,
          ).toBeGreaterThanOrEqual(4);
        expect(toolNames(afterRotation?.body).slice(-6)).toEqual(DEFERRED.map((n) => `~${n}`));
        const references =
          JSON.stringify(afterRotation?.body).match(
            /"type":"tool_reference","tool_name":"[a-z_]+"/g,
          ) ?? [];
        // After the rotation the view shows two loading results: the tail's and the new one.
        expect(references).toEqual([
          '"type":"tool_reference","tool_name":"lab__order_test"',
          '"type":"tool_reference","tool_name":"billing__invoice"',
        ]);
      } else {
        // Appended in load order, and kept while the load lasts; the rotation keeps what its tail loads.
        const base = toolNames(run.main[0]?.body);
        expect(toolNames(beforeRotation?.body)).toEqual([
          ...base,
          "lab__get_results",
          "crm__find_patient",
          "billing__refund",
          "crm__update_patient",
          "lab__order_test",
        ]);
        expect(toolNames(afterRotation?.body)).toEqual([
          ...base,
          "lab__order_test",
          "billing__invoice",
        ]);
        expect(counts.withinAdvertised).toBe(3); // the grant change, its return, the rotation
        expect(counts.appends).toBe(5); // one per step that loaded: turns 2, 5, 7, 22, 24
        expect(counts.toolBreaks).toBe(8);
      }
    });
  }

  it("openai-responses native (gpt-5.4, tool search with client execution): the tools array is the same within a grant; loads arrive in tool_search_output items", async () => {
    const run = await runSession("openai-responses", server, { responsesNative: true });
    const counts = tally(run);
    console.log(`prefix openai-responses (native): ${JSON.stringify(counts)}`);
    expect(counts.pairs).toBeGreaterThanOrEqual(40);
    expect(counts.unexplained).toBe(0);
    expect(counts.toolBreaks).toBe(2); // the grant change and its return
    expect(counts.appends).toBe(0);
    expect(run.volatileLast).toBe(true);
    for (const request of run.main) expect(toolNames(request.body)).toContain("tool_search");
    const afterRotation = run.main.filter((r) => r.turn === 30).at(-1);
    expect(toolNames(afterRotation?.body).slice(-6)).toEqual(DEFERRED.map((n) => `~${n}`));
    const input =
      (
        afterRotation?.body as
          | { input?: { type?: string; tools?: { name: string }[] }[] }
          | undefined
      )?.input ?? [];
    const outputs = input.filter((i) => i.type === "tool_search_output");
    // After the rotation the view shows two loading results: the tail's and the new one.
    expect(outputs.map((o) => o.tools?.map((t) => t.name))).toEqual([
      ["lab__order_test"],
      ["billing__invoice"],
    ]);
    expect(JSON.stringify(afterRotation?.body)).not.toContain('"name":"search_tools"');
  });

  it("anthropic with deferredLoading append: loads append after the advertised tools, never inside them", async () => {
    const run = await runSession("anthropic", server, { anthropicLoading: "append" });
    const counts = tally(run);
    console.log(`prefix anthropic (append): ${JSON.stringify(counts)}`);
    expect(counts.unexplained).toBe(0);
    expect(toolNames(run.main.at(-1)?.body).some((n) => n.startsWith("~"))).toBe(false);
    expect(JSON.stringify(run.main.map((r) => r.body))).not.toContain("tool_reference");
  });
});
