import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PUBLIC_DIR } from "../src/host.js";
import { startHost, type TestHost } from "./helpers.js";

const CHROMIUM = "/usr/bin/chromium";
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const ARTIFACTS = fileURLToPath(new URL("../test-artifacts/", import.meta.url));
// The flags this machine's env notes name for headless Chromium (closed network, root, no GPU).
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const title = HAVE_CHROMIUM
  ? "operator console in headless Chromium"
  : `operator console in headless Chromium [SKIPPED: ${CHROMIUM} is absent; install it with apt-get install -y chromium]`;

if (!HAVE_CHROMIUM)
  console.warn(`browser test skipped: ${CHROMIUM} is absent (apt-get install -y chromium)`);

describe.skipIf(!HAVE_CHROMIUM)(title, () => {
  let t: TestHost;
  let context: BrowserContext;
  let page: Page;
  let profile: string;

  beforeAll(async () => {
    if (!existsSync(join(DEFAULT_PUBLIC_DIR, "index.html"))) {
      const built = spawnSync(
        process.execPath,
        [fileURLToPath(new URL("../scripts/build-console.mjs", import.meta.url))],
        { encoding: "utf8" },
      );
      if (built.status !== 0) throw new Error(`the console build failed: ${built.stderr}`);
    }
    mkdirSync(ARTIFACTS, { recursive: true });
    t = await startHost();
    profile = mkdtempSync(join(tmpdir(), "alma-chromium-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      viewport: { width: 1360, height: 860 },
    });
    page = context.pages()[0] ?? (await context.newPage());
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await t?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it("chats through a turn with a tool call, approves the permission ask, and shows the timeline and spend", async () => {
    await page.goto(`${t.url}/#admin=${t.admin}`);
    await expect
      .poll(() => page.getByTestId("demo-badge").textContent())
      .toBe("offline demo model");
    expect(page.url()).not.toContain("admin=");

    // A turn with a tool call: step text arrives over SSE, then the answer.
    await page.getByTestId("chat-input").fill("When are you open on Monday?");
    await page.getByTestId("send").click();
    await page.getByText("Let me check the opening hours.").waitFor();
    await page.locator(".bubble.assistant", { hasText: "is open on monday" }).waitFor();

    // A booking: the turn parks on the operator; the ask shows up, read from the store.
    await page.getByTestId("chat-input").fill("Please book an appointment");
    await page.getByTestId("send").click();
    await page.getByText(/Waiting for the clinic to approve book \(book_appointment\)/).waitFor();
    const ask = page.getByTestId("ask");
    await ask.waitFor();
    await expect.poll(() => ask.textContent()).toMatch(/"slotId":"[^"]+"/);
    await expect.poll(() => ask.textContent()).toMatch(/expires/);
    await page.screenshot({ path: join(ARTIFACTS, "console-permission-ask.png") });
    await ask.getByTestId("approve").click();
    // The chat's stream ended with the park; it reads on from the ask's event id after the decision.
    await page.getByText("The clinic decided; the assistant goes on.").waitFor();
    await page
      .locator(".bubble.assistant", { hasText: "Your appointment is booked for" })
      .waitFor();
    await page.getByText(/Sent to the patient: Confirmed: your appointment on/).waitFor();
    await expect.poll(() => page.getByTestId("asks-count").textContent()).toBe("0");
    await page.screenshot({ path: join(ARTIFACTS, "console-chat.png") });

    // The turn's timeline, from its trails.
    await page.getByTestId("tab-sessions").click();
    await page.getByTestId("session").first().click();
    await page.getByTestId("turn").filter({ hasText: "Please book an appointment" }).click();
    const timeline = page.getByTestId("timeline");
    await timeline.waitFor();
    await expect
      .poll(() => page.getByTestId("timeline-outcome").textContent())
      .toMatch(/^completed · terminal_tool/);
    const events = await page.getByTestId("timeline-event").allTextContents();
    expect(events.some((e) => /asked the operator: book slot:/.test(e))).toBe(true);
    expect(events.some((e) => /approved by operator/.test(e))).toBe(true);
    expect(
      events.some((e) => /main call, balanced\/confidential → demo · offline-demo/.test(e)),
    ).toBe(true);
    expect(events.some((e) => /step 2 · context v1 · message revision \d+/.test(e))).toBe(true);
    expect(events.some((e) => /completed \(terminal_tool\)/.test(e))).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, "console-timeline.png") });

    // Spend per clinic per day against the cap.
    await page.getByTestId("tab-spend").click();
    const sunrise = page.locator('[data-testid="spend-tenant"][data-org="sunrise-clinic"]');
    await sunrise.waitFor();
    await expect
      .poll(() => sunrise.getByTestId("spend-today").textContent())
      .toMatch(/^today \$0\.0\d+ · [\d.]+% of the daily cap$/);
    expect(await sunrise.locator("rect.bar").count()).toBe(14);
    expect(
      await page.locator('[data-org="harbor-dental"] [data-testid="spend-today"]').textContent(),
    ).toBe("today $0.000000 · 0.00% of the daily cap");
    await expect.poll(() => page.getByTestId("demo-badge").isVisible()).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, "console-spend.png") });

    // Late usage of a cut call, listed beside the uncertain turns (recorded as a cut stream's drain would).
    const inbox = t.host.context.runtime.stores.usageInbox;
    expect(inbox).toBeDefined();
    await inbox?.record({
      scope: { org: "sunrise-clinic", uid: "p-1001" },
      sessionId: "console-late",
      rootKey: "root-late",
      turnId: "root-late",
      operationId: "op-late-1",
      kind: "main",
      clientId: "demo",
      model: "offline-demo",
      attribution: "known",
      usage: { inputTokens: 120, outputTokens: 30 },
      source: "stream_after_deadline",
      observedAt: Date.UTC(2026, 0, 1, 9, 30),
    });
    await page.getByTestId("tab-reconcile").click();
    await page.getByTestId("uncertain-turns").waitFor();
    const late = page.getByTestId("late-usage-row");
    await late.waitFor();
    expect(await late.count()).toBe(1);
    await expect
      .poll(() => late.textContent())
      .toMatch(/sunrise-clinic\/p-1001 · session console-late · main call op-late-1/);
    expect(await late.textContent()).toMatch(
      /stream_after_deadline · offline-demo · 120 in \/ 30 out \(known\) · not settled/,
    );
    await page.screenshot({ path: join(ARTIFACTS, "console-late-usage.png") });
  }, 60_000);

  it("shows a patient's profile facts with their sources (by session pseudonym), forgets one and erases the rest", async () => {
    const rt = t.host.context.runtime;
    const scope = { org: "sunrise-clinic", uid: "p-1001" };
    t.host.context.directory.saw(scope);
    const sessionId = "+15550004004";
    const source = (at: number) => ({ sessionId, turnId: "t1", at: Date.UTC(2026, 0, 1, 9, at) });
    const fact = (factId: string, key: string, text: string, at: number) => ({
      scope,
      factId,
      key,
      text,
      source: source(at),
      sensitivity: "confidential" as const,
      confidence: 0.9,
    });
    await rt.stores.profiles.put(
      fact("f-old", "allergy.penicillin", "Allergic to penicillin (hives).", 1),
    );
    await rt.stores.profiles.put(
      fact("f-new", "allergy.penicillin", "Allergic to penicillin and amoxicillin.", 2),
    );
    await rt.stores.profiles.put(fact("f-diet", "diet.vegetarian", "Vegetarian.", 3));
    await rt.stores.episodes.put({
      scope,
      episodeId: "ep-1",
      source: source(2),
      sensitivity: "confidential",
      summary: "Told us about the allergy.",
    });
    await page.getByTestId("tab-memory").click();
    await page.locator('[data-testid="memory-person"][data-uid="p-1001"]').click();
    const rows = page.getByTestId("memory-fact");
    await expect.poll(() => rows.count()).toBe(3);
    expect(await page.getByTestId("memory-summary").textContent()).toBe("3 facts · 1 episodes");
    expect(await page.getByTestId("fact-text").allTextContents()).toEqual([
      "Vegetarian.",
      "Allergic to penicillin and amoxicillin.",
      "Allergic to penicillin (hives).",
    ]);
    for (const text of await page.getByTestId("fact-source").allTextContents())
      expect(text).toMatch(/^session sp_[0-9a-f]{32} · turn t1 · 2026-01-01 09:0\d$/);
    expect(await page.locator('[data-fact="f-old"]').textContent()).toContain("superseded");
    expect(
      await page.getByTestId("memory-detail").textContent(),
      "the session id itself is never shown",
    ).not.toContain(sessionId);
    await page.screenshot({ path: join(ARTIFACTS, "console-memory.png") });

    await page.locator('[data-fact="f-new"]').getByTestId("forget-fact").click();
    await expect.poll(() => rows.count()).toBe(2);
    expect((await rt.stores.profiles.list(scope)).items.map((f) => f.factId)).toEqual([
      "f-diet",
      "f-old",
    ]);

    await page.getByTestId("erase-memory").click();
    expect(await page.getByTestId("erase-memory").textContent()).toMatch(
      /^Confirm: erase every fact and episode of p-1001$/,
    );
    await page.getByTestId("erase-memory").click();
    await page.getByTestId("memory-empty").waitFor();
    expect(await page.getByTestId("memory-summary").textContent()).toBe("0 facts · 0 episodes");
    expect((await rt.stores.profiles.list(scope)).items).toEqual([]);
    expect((await rt.stores.episodes.list(scope)).items).toEqual([]);
    const erasures = (await rt.stores.audit.query(scope, { trail: "lifecycle" })).items.flatMap(
      (e) => (e.trail === "lifecycle" && e.action === "erasure.completed" ? [e.detail] : []),
    );
    expect(erasures).toEqual(["fact:0:1:0", "memory:1:2:0"]);
  }, 60_000);

  it("shows each clinic's nightly routine (a batch job), ticks the scheduler: the run goes submitted → completed across ticks, its summary delivered once", async () => {
    // A once-a-minute batch routine created two minutes ago: its last slot is due now (the nightly ones fire at 22:00).
    const created = Date.now() - 120_000;
    await t.host.context.routines.scheduler.saveRoutine({
      scope: { org: "sunrise-clinic", uid: "back-office" },
      id: "minutely-check",
      goal: "Summarize the last minute at the clinic for the staff.",
      intent: { tier: "balanced", sensitivity: "confidential" },
      schedule: { cron: "* * * * *", timeZone: "UTC" },
      cap: { usd: 0.05, onExceeded: "block" },
      destination: "clinic-staff",
      catchUp: false,
      execution: "job",
      enabled: true,
      createdAt: created,
    });
    await page.getByTestId("tab-routines").click();
    const rows = page.getByTestId("routine-row");
    await expect.poll(() => rows.count()).toBe(3);
    const harbor = page.locator('[data-testid="routine-row"][data-org="harbor-dental"]');
    expect(await harbor.textContent()).toMatch(
      /nightly-day-summary · "0 22 \* \* \*" America\/Sao_Paulo/,
    );
    expect(await harbor.textContent(), "the nightly routine is a batch job").toMatch(
      /cap \$0\.05 \(block\) · job/,
    );
    const tickStatus = () => page.getByTestId("routines-tick-status").textContent();
    const submitted = page.locator('[data-testid="routine-run"][data-state="submitted"]');
    const completed = page.locator('[data-testid="routine-run"][data-state="completed"]');
    // First tick: the slot is handed to the (offline demo) batch API — submitted, nothing delivered.
    await page.getByTestId("routines-tick").click();
    await expect
      .poll(tickStatus)
      .toMatch(/last tick .*: 0 ran, [1-9]\d* submitted or waiting on a batch job, 0 missed/);
    await expect.poll(() => submitted.count()).toBeGreaterThan(0);
    expect(await submitted.first().textContent()).toMatch(
      /^sunrise-clinic · minutely-check · .* · attempt 1submitted$/,
    );
    expect(await page.getByTestId("routine-message").count()).toBe(0);
    // The batch ends after its first poll, so the run completes within two more ticks (a new minute's slot may submit meanwhile).
    for (let i = 0; i < 2 && (await completed.count()) === 0; i += 1) {
      const before = await tickStatus();
      await page.getByTestId("routines-tick").click();
      await expect.poll(tickStatus).not.toBe(before);
    }
    await expect.poll(() => completed.count()).toBeGreaterThan(0);
    expect(await completed.first().textContent()).toMatch(
      /sunrise-clinic · minutely-check · .* · attempt 1completed · \$0\.0\d+/,
    );
    // One message per completed run: each delivery id once.
    const messages = page.getByTestId("routine-message");
    await expect.poll(() => messages.count()).toBe(await completed.count());
    const ids = await page
      .locator('[data-testid="routine-message"] > div:first-child')
      .allTextContents();
    expect(new Set(ids).size).toBe(ids.length);
    expect(await messages.first().textContent()).toMatch(
      /^minutely-check@.*#1Offline demo summary \(batch job\)\. Asked: Summarize the last minute at the clinic for the staff\./,
    );
    await page.screenshot({ path: join(ARTIFACTS, "console-routines.png") });
  }, 60_000);

  it("at 390 x 844: a wrong token says so, a pasted link logs in (hashchange), the ask is reachable and the chat readable", async () => {
    const phone = await context.newPage();
    try {
      await phone.setViewportSize({ width: 390, height: 844 });
      await phone.goto(`${t.url}/`);
      await phone.evaluate("sessionStorage.clear()");
      await phone.reload();
      await phone.getByTestId("admin-token").fill("adm_not_the_operator_token");
      await phone.getByRole("button", { name: "Open" }).click();
      await expect
        .poll(() => phone.getByTestId("login-error").textContent())
        .toMatch(/^The host refused that operator token\./);
      await phone.screenshot({ path: join(ARTIFACTS, "console-phone-login-refused.png") });

      // The banner's link pasted into this open tab: only the fragment changes.
      await phone.evaluate(
        `location.hash = ${JSON.stringify(`#admin=${encodeURIComponent(t.admin)}`)}`,
      );
      await phone.getByTestId("tab-chat").waitFor();
      await expect.poll(() => phone.url()).not.toContain("admin=");

      await phone.getByTestId("chat-input").fill("Please book an appointment");
      await phone.getByTestId("send").click();
      const ask = phone.getByTestId("ask").first();
      await ask.waitFor();
      await ask.getByTestId("approve").scrollIntoViewIfNeeded();
      await phone.screenshot({ path: join(ARTIFACTS, "console-phone-ask.png") });
      // Reachable: the approve button is inside the viewport and nothing covers its centre.
      const approve = await ask.getByTestId("approve").boundingBox();
      expect(approve).not.toBeNull();
      const box = approve as { x: number; y: number; width: number; height: number };
      expect(box.x + box.width).toBeLessThanOrEqual(390);
      const [cx, cy] = [box.x + box.width / 2, box.y + box.height / 2];
      const hit = await phone.evaluate(
        `document.elementFromPoint(${cx}, ${cy})?.getAttribute("data-testid")`,
      );
      expect(hit).toBe("approve");
      await ask.getByTestId("approve").click();
      const answer = phone.locator(".bubble.assistant", {
        hasText: "Your appointment is booked for",
      });
      await answer.waitFor();
      await answer.scrollIntoViewIfNeeded();
      // Readable: the chat spans the screen and the asks panel does not overlap it.
      const chat = (await phone.getByTestId("chat-log").boundingBox()) as {
        x: number;
        y: number;
        width: number;
        height: number;
      };
      const asks = (await phone.locator(".asks-panel").boundingBox()) as {
        y: number;
        height: number;
      };
      expect(chat.width).toBeGreaterThan(330);
      expect(asks.y + asks.height <= chat.y || chat.y + chat.height <= asks.y).toBe(true);
      expect(await phone.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await phone.screenshot({ path: join(ARTIFACTS, "console-phone-chat.png"), fullPage: true });
    } finally {
      await phone.close();
    }
  }, 60_000);
});
