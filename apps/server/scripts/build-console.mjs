// Builds the operator console (console/) with Vite into public/, which the host serves.
// `npm run build:console -w @alma-harness/server`; scripts/start.mjs and scripts/test.mjs run it when public/ is missing or older than its sources.
import { fileURLToPath } from "node:url";
import { build } from "vite";

const root = fileURLToPath(new URL("../console", import.meta.url));
const outDir = fileURLToPath(new URL("../public", import.meta.url));

await build({
  root,
  base: "/",
  configFile: false,
  logLevel: "warn",
  build: {
    outDir,
    emptyOutDir: true,
    assetsDir: "assets",
    target: "es2022",
    sourcemap: false,
    modulePreload: { polyfill: false },
  },
});
console.log(`console built into ${outDir}`);
