import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeModelClient, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { sqlite } from "@alma-harness/runtime";
import { createSqliteStores } from "@alma-harness/store-sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { expectWholeTurn, openingHoursConfig, runToolTurn, seenFromOutside } from "./open.js";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe("the runner on SQLite with grouped commits (the sqlite() default)", () => {
  for (const [pure, most] of [
    [false, 4],
    [true, 3],
  ] as const)
    it(`a tool turn ${pure ? "with a pure tool " : ""}takes at most ${most} commits, what the handler may depend on is durable before it runs${pure ? " (nothing of its step)" : ""}, and all of it when the turn returns`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "alma-grouped-"));
      dirs.push(dir);
      const path = join(dir, "alma.db");
      const outside = createSqliteStores({ path, busyTimeoutMs: 0 });
      const seenByHandler: string[] = [];
      const model = new FakeModelClient([
        scriptedToolCall({ id: "c1", name: "opening_hours", input: {} }),
        scriptedText("9 to 5."),
      ]);
      const rt = sqlite({
        ...openingHoursConfig(
          model,
          async () => {
            // Another connection (another process) sees only what is committed.
            seenByHandler.push(...(await seenFromOutside(outside)));
            return { open: "09:00-17:00" };
          },
          pure,
        ),
        store: { path },
      });
      try {
        const stores = rt.stores as unknown as { commitCount(): number };
        const before = stores.commitCount();
        await runToolTurn(rt);
        expect(stores.commitCount() - before).toBeLessThanOrEqual(most);
        await expectWholeTurn(outside, seenByHandler, pure);
      } finally {
        await rt.close();
        outside.close();
      }
    });
});
