import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { HttpError } from "./errors.js";
import { createRoute, z } from "@hono/zod-openapi";
import type { HostApp } from "./api.js";

const TYPES: Readonly<Record<string, string>> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".map": "application/json; charset=utf-8",
};

/** No inline script, no third-party origin: the console is one bundle from this host. */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'";

const MISSING = `<!doctype html><meta charset="utf-8"><title>Alma console not built</title>
<p>The operator console has not been built. Run <code>npm run build:console -w @alma-harness/server</code>
(or <code>npm start</code>, which builds it when it is missing).</p>`;

async function index(dir: string): Promise<Response> {
  try {
    const html = await readFile(join(dir, "index.html"));
    return new Response(html, {
      headers: {
        "content-type": "text/html; charset=utf-8",
        "cache-control": "no-cache",
        "content-security-policy": CSP,
      },
    });
  } catch {
    return new Response(MISSING, {
      status: 503,
      headers: { "content-type": "text/html; charset=utf-8" },
    });
  }
}

async function asset(dir: string, name: string): Promise<Response> {
  // Only plain file names inside assets/: no separators, no dot-dot.
  if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/.test(name))
    throw new HttpError("not_found", "no such asset");
  const ext = name.slice(name.lastIndexOf("."));
  const type = TYPES[ext];
  if (!type) throw new HttpError("not_found", "no such asset");
  try {
    const bytes = await readFile(join(dir, "assets", name));
    return new Response(bytes, {
      headers: { "content-type": type, "cache-control": "public, max-age=31536000, immutable" },
    });
  } catch {
    throw new HttpError("not_found", "no such asset");
  }
}

const pageRoute = createRoute({
  method: "get",
  path: "/",
  summary: "The operator console's page",
  responses: {
    200: { description: "the console", content: { "text/html": { schema: z.string() } } },
    503: { description: "the console is not built: a page saying how to build it" },
  },
});

const assetRoute = createRoute({
  method: "get",
  path: "/assets/{file}",
  summary: "The console's hashed bundle files",
  // Any other name is 404, as a file that is not there: an asset is looked up, never validated.
  request: { params: z.object({ file: z.string() }) },
  responses: {
    200: { description: "the file (immutable)" },
    404: { $ref: "#/components/responses/Error" },
  },
});

/** The console: `/` serves the built page, `/assets/:file` its hashed bundle files. */
export function staticRoutes(app: HostApp, dir: string): void {
  app.openapi(pageRoute, () => index(dir));
  app.openapi(assetRoute, (c) => asset(dir, c.req.valid("param").file));
}
