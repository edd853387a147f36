// The examples of issue 27 §5, each run by its one npm script as CI runs it, its output checked.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";

const HAVE_CHROMIUM = existsSync("/usr/bin/chromium");

function runScript(name: string, ...args: string[]): string {
  const argv = ["run", "--silent", name, ...(args.length > 0 ? ["--", ...args] : [])];
  const run = spawnSync("npm", argv, { encoding: "utf8", timeout: 120_000 });
  if (run.status !== 0) throw new Error(`npm run ${name} failed (${run.status}):\n${run.stderr}`);
  return run.stdout;
}

describe("examples", () => {
  it("example:zod-tool: zod's refinement refuses Sunday as TOOL_BAD_INPUT, then Monday books", () => {
    const out = runScript("example:zod-tool");
    expect(out).toContain('"enum":["monday"');
    expect(out).toContain(
      'tool result c1: error TOOL_BAD_INPUT "invalid input: /day the clinic is closed on sunday"',
    );
    expect(out).toContain('tool result c2: ok {"booked":"monday","slots":1}');
    expect(out).toContain("reply: Booked: Monday, one slot.");
  });

  it("example:otel-console: the console exporter prints the turn's spans in the caller's trace", () => {
    const out = runScript("example:otel-console");
    expect(out).toContain("name: 'invoke_agent'");
    expect(out).toContain("name: 'chat demo'");
    expect(out).toContain("name: 'execute_tool opening_hours'");
    expect(out).toContain("'alma.cost.usd_micros': 210");
    expect(out).toContain("'alma.permission.decision': 'allow'");
    expect(out).toContain("spanId: '00f067aa0ba902b7'");
    expect(out).not.toContain("Monday?");
    expect(out).toContain("turn completed");
  });

  it.skipIf(!HAVE_CHROMIUM)(
    `example:use-chat --check: the useChat page answers and books after an approval in headless Chromium${HAVE_CHROMIUM ? "" : " [SKIPPED: /usr/bin/chromium is absent]"}`,
    () => {
      const out = runScript("example:use-chat", "--check");
      expect(out).toMatch(/answer: .*open on monday .* from 08:00 to 18:00/);
      expect(out).toContain("tool: opening_hours: output-available");
      expect(out).toContain("ask: book_appointment: approval-requested");
      expect(out).toMatch(/booked: .*Your appointment is booked for/);
    },
    150_000,
  );
});
