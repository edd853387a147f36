import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { hostRoutes } from "../src/http/app.js";
import { call, hostPerTest } from "./helpers.js";

const startHost = hostPerTest();

interface Document {
  readonly openapi: string;
  readonly paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>>;
}

/** Every method and path the host's router serves, in OpenAPI's spelling (`{name}` for `:name`). */
function served(routes: readonly { method: string; path: string }[]): string[] {
  const out = new Set<string>();
  for (const r of routes) {
    // The 405 answers (`ALL`) and the access-log middleware (`*`) are not routes of their own.
    if (r.method === "ALL" || r.path === "*" || r.path === "/*") continue;
    out.add(`${r.method.toLowerCase()} ${r.path.replace(/:([^/]+)/g, "{$1}")}`);
  }
  return [...out].sort();
}

describe("GET /openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const t = await startHost();
    const res = await call(t.url, "/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe("3.1.0");
    const validator = new Validator();
    const result = await validator.validate(res.body);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("describes every route the host serves, and no other", async () => {
    const t = await startHost();
    const doc = (await call(t.url, "/openapi.json")).body as unknown as Document;
    const documented = Object.entries(doc.paths)
      .flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m} ${path}`))
      .sort();
    const routes = served(hostRoutes(t.host.context).routes);
    expect(routes.length).toBeGreaterThan(40);
    expect(documented).toEqual(routes);
  });

  it("declares each route's path parameters, the tenant and operator tokens, and the error body", async () => {
    const t = await startHost();
    const doc = (await call(t.url, "/openapi.json")).body as unknown as Document & {
      components: Record<string, Record<string, unknown>>;
    };
    for (const [path, methods] of Object.entries(doc.paths)) {
      const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      for (const op of Object.values(methods)) {
        const inPath = (op.parameters ?? []).filter((p) => p.in === "path").map((p) => p.name);
        expect(inPath.sort(), path).toEqual(names.sort());
      }
    }
    const turns = doc.paths["/v1/sessions/{sessionId}/turns"]?.post as Record<string, unknown>;
    expect(turns.security).toEqual([{ tenant: [] }]);
    expect(JSON.stringify(turns.requestBody)).toContain('"input"');
    expect(Object.keys(doc.components.securitySchemes ?? {}).sort()).toEqual([
      "operator",
      "tenant",
    ]);
    expect(doc.components.schemas?.Error).toBeDefined();
    // A turn's answers: the view as JSON or the same turn as SSE; a 202 says where and when.
    const answers = turns.responses as Record<string, Record<string, Record<string, unknown>>>;
    expect(Object.keys(answers["200"]?.content ?? {}).sort()).toEqual([
      "application/json",
      "text/event-stream",
    ]);
    expect(JSON.stringify(answers["200"]?.content)).toContain("#/components/schemas/TurnView");
    expect(Object.keys(answers["202"]?.headers ?? {}).sort()).toEqual([
      "Location",
      "Preference-Applied",
      "Retry-After",
    ]);
    // The bodies the issue found undocumented: a call's `output`, the events of `/events`.
    const calls = doc.paths["/v1/calls"]?.post as Record<string, unknown>;
    expect(JSON.stringify(calls.requestBody)).toContain('"output"');
    const events = doc.paths["/v1/sessions/{sessionId}/events"]?.post as Record<string, unknown>;
    expect(JSON.stringify(events.requestBody)).toContain("#/components/schemas/RecordedEvent");
  });
});
