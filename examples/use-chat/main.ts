// A minimal `useChat` page against Alma's host (issue 27 §4, §5): `npm run example:use-chat`.
// Builds the page (examples/use-chat/page) with Vite, starts the host with the offline demo model
// serving it, and prints a link. The person in the chat decides the booking tool's asks
// (`uiApprovals`). With `--check` it drives the page in headless Chromium instead (what CI runs):
// a question, then a booking approved from the page, and exits.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createHost, demoSetup, mintToken } from "@alma-harness/server";
import { build } from "vite";
import { checkInChromium } from "./check.js";

const work = mkdtempSync(join(tmpdir(), "alma-use-chat-"));
const publicDir = join(work, "public");
await build({
  root: fileURLToPath(new URL("./page", import.meta.url)),
  base: "/",
  configFile: false,
  logLevel: "error",
  build: { outDir: publicDir, emptyOutDir: true, assetsDir: "assets", target: "es2022" },
});

const jwtSecret = crypto.getRandomValues(new Uint8Array(32));
const host = await createHost({
  secrets: {
    jwtSecret,
    adminToken: `adm_${crypto.randomUUID().replaceAll("-", "")}`,
    trailKey: crypto.randomUUID() + crypto.randomUUID(),
    source: { jwt: "example", admin: "example", trail: "example" },
  },
  store: { home: join(work, "home"), databaseUrl: undefined },
  models: demoSetup(),
  uiApprovals: ["book_appointment"],
  http: { publicDir },
});
const { url } = await host.listen(0, "127.0.0.1");
const { token } = await mintToken(jwtSecret, { org: "sunrise-clinic", uid: "p-1001" });
const page = `${url}/?session=web-1&token=${encodeURIComponent(token)}`;

const stop = async () => {
  await host.close(0);
  rmSync(work, { recursive: true, force: true });
};
if (process.argv.includes("--check")) {
  try {
    for (const line of await checkInChromium(page)) console.log(line);
  } finally {
    await stop();
  }
} else {
  console.log(
    `useChat page: ${page}\n(ask "When are you open on Monday?" or "Please book an appointment"; Ctrl-C stops)`,
  );
  process.once("SIGINT", () => void stop().then(() => process.exit(0)));
}
