import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createSqliteStores } from "@alma-harness/store-sqlite";
import { describe, expect, it } from "vitest";
import { mintToken } from "../src/http/auth.js";
import { sqlitePath } from "../src/runtime.js";
import { ANA, SUNRISE } from "./helpers.js";

// The sources, as the bin runs them when the package is not built (a stale dist/ must not stand in).
const SOURCE = fileURLToPath(new URL("../src/cli/process.ts", import.meta.url));
const TSX = import.meta.resolve("tsx");
const JWT_SECRET = "process-test-secret-process-test-secret-0123";
const ADMIN = "adm_process_test_operator_token_0123456789";

/**
 * SIGTERM to a real `alma serve` process while a turn waits for the operator: the pending ask is
 * denied by shutdown, attributed to the kernel (the model reads that the service stopped, never
 * that a person denied it), the turn settles inside the grace period (none is cancelled), the
 * process exits 0, and the reopened SQLite store holds no admission for the session and the turn's
 * stored final result.
 */
describe("alma serve: SIGTERM with a pending permission ask", () => {
  it("exits within the grace period, leaving no admission held", async () => {
    const home = mkdtempSync(join(tmpdir(), "alma-sigterm-"));
    const child = spawn(
      process.execPath,
      ["--conditions=alma-source", "--import", TSX, SOURCE, "serve", "--port", "0"],
      {
        env: {
          PATH: process.env.PATH,
          ALMA_HOME: home,
          ALMA_PROVIDER: "demo",
          ALMA_JWT_SECRET: JWT_SECRET,
          ALMA_ADMIN_TOKEN: ADMIN,
          ALMA_SHUTDOWN_GRACE_MS: "20000",
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString("utf8");
    });
    child.stderr.on("data", (c: Buffer) => {
      err += c.toString("utf8");
    });
    const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      while (!/front desk: (http:\/\/\S+)/.test(out)) {
        if (child.exitCode !== null) throw new Error(`serve exited early: ${err}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const url = (/front desk: (http:\/\/\S+)/.exec(out) as RegExpExecArray)[1] as string;
      const { token } = await mintToken(new TextEncoder().encode(JWT_SECRET), {
        org: SUNRISE,
        uid: ANA,
      });
      const started = await fetch(`${url}/v1/sessions/s1/turns`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          "idempotency-key": "book-1",
          prefer: "respond-async",
        },
        body: JSON.stringify({ input: "Please book an appointment" }),
      });
      expect(started.status).toBe(202);
      const { rootKey } = (await started.json()) as { rootKey: string };
      for (;;) {
        const asks = (await (
          await fetch(`${url}/v1/admin/asks`, { headers: { authorization: `Bearer ${ADMIN}` } })
        ).json()) as { asks: unknown[] };
        if (asks.asks.length === 1) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      child.kill("SIGTERM");
      const [code] = await exited;
      expect(code).toBe(0);
      expect(out).toContain(
        "1 pending asks denied by shutdown, 0 turns cancelled after the grace period",
      );

      const stores = createSqliteStores({ path: sqlitePath(home) });
      try {
        const scope = { org: SUNRISE, uid: ANA };
        expect(await stores.admissions.holder(scope, "s1")).toBeUndefined();
        const record = await stores.rootResults.get(scope, rootKey, Date.now());
        expect(record?.state).toBe("stored");
        // Nobody decided: the trail says the kernel denied it at shutdown, and the model read that,
        // never a person's denial (issue 25).
        const policy = await stores.audit.query(scope, { turnId: rootKey, trail: "policy" });
        const resolved = policy.items.filter(
          (e): e is Extract<typeof e, { trail: "policy" }> =>
            e.trail === "policy" && e.action === "permission.resolved",
        );
        expect(resolved.map((e) => [e.decision, e.by, e.reason])).toEqual([
          ["deny", "kernel", "shutdown"],
        ]);
        const view = await stores.sessions.load(scope, "s1");
        const denials = view.messages.flatMap((m) =>
          m.blocks.flatMap((b) =>
            b.type === "tool_result" && b.code === "TOOL_DENIED" ? [b.output] : [],
          ),
        );
        expect(denials).toEqual(["permission denied: the service stopped before anyone decided"]);
        expect(JSON.stringify(view.messages)).not.toContain("denied by the operator");
      } finally {
        stores.close();
      }
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
      rmSync(home, { recursive: true, force: true });
    }
  }, 60_000);
});
