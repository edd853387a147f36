// Drives the useChat page in headless Chromium (the binary the console's browser test uses): a
// question answered, then a booking the person approves from the page. Returns what it saw.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

// Headless already; no sandbox (root), no GPU, nothing fetched in the background (a closed network).
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--disable-background-networking",
];

export async function checkInChromium(url: string): Promise<string[]> {
  const profile = mkdtempSync(join(tmpdir(), "alma-use-chat-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: FLAGS,
  });
  const seen: string[] = [];
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(url);
    const ready = () => page.waitForSelector("#status:text-is('ready')", { timeout: 20_000 });
    await page.fill("#input", "When are you open on Monday?");
    await page.click("#send");
    await page.waitForSelector("li[data-role=assistant] .text", { timeout: 20_000 });
    await ready();
    seen.push(
      `answer: ${(await page.locator("li[data-role=assistant] .text").allInnerTexts()).join(" ")}`,
    );
    seen.push(`tool: ${await page.locator(".tool").first().textContent()}`);
    await page.fill("#input", "Please book an appointment");
    await page.click("#send");
    await page.waitForSelector("button.approve", { timeout: 20_000 });
    seen.push(`ask: ${await page.locator(".tool[data-state=approval-requested]").textContent()}`);
    await page.click("button.approve");
    await page.waitForSelector(".tool[data-tool=book_appointment][data-state=output-available]", {
      timeout: 20_000,
    });
    await ready();
    const last = page.locator("li[data-role=assistant]").last();
    seen.push(`booked: ${(await last.locator(".text").allInnerTexts()).join(" ")}`);
    return seen;
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
}
