import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { ALMA, GEN_AI, trailSpans } from "@alma-harness/otel";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { BasicTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { IKeyValue } from "@opentelemetry/otlp-transformer/build/src/common/internal-types.js";
import type { IExportTraceServiceRequest } from "@opentelemetry/otlp-transformer/build/src/trace/internal-types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { w2 } from "./trail-fixture.js";

/** The request's JSON, typed by the OTel package's own OTLP definitions (opentelemetry-proto's JSON mapping). */
type OtlpJson = IExportTraceServiceRequest;

const received: { contentType: string; body: OtlpJson }[] = [];
const server = createServer(async (req: IncomingMessage, res) => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  if (req.method === "POST" && req.url === "/v1/traces") {
    received.push({
      contentType: String(req.headers["content-type"]),
      body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as OtlpJson,
    });
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  } else res.writeHead(404).end();
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** An OTLP attribute's value as its JSON mapping carries it (`stringValue`, `intValue` as a string…). */
function attribute(attrs: readonly IKeyValue[]) {
  return (key: string) => {
    const value = attrs.find((a) => a.key === key)?.value;
    if (!value) return undefined;
    if (value.intValue !== undefined && value.intValue !== null) return Number(value.intValue);
    return value.stringValue ?? value.boolValue ?? value.doubleValue;
  };
}

describe("over OTLP/HTTP to a receiver the test starts", () => {
  it("the real OTLP exporter delivers the turn's spans, GenAI attributes and cost intact", async () => {
    const { port } = server.address() as AddressInfo;
    const provider = new BasicTracerProvider({
      spanProcessors: [
        new SimpleSpanProcessor(
          new OTLPTraceExporter({ url: `http://127.0.0.1:${port}/v1/traces` }),
        ),
      ],
    });
    const spans = trailSpans({ tracer: provider.getTracer("alma") });
    for (const event of w2()) spans.observe(event);
    await provider.forceFlush();
    await provider.shutdown();

    expect(received.length).toBeGreaterThan(0);
    expect(received[0]!.contentType).toContain("application/json");
    const all = received.flatMap((r) =>
      (r.body.resourceSpans ?? []).flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans ?? [])),
    );
    expect(all.map((s) => s.name).sort()).toEqual([
      "chat claude-sonnet-4-5",
      "chat claude-sonnet-4-5",
      "execute_tool book",
      "invoke_agent",
    ]);
    const turn = all.find((s) => s.name === "invoke_agent")!;
    const turnAttr = attribute(turn.attributes);
    expect(turnAttr(ALMA.costMicros)).toBe(210);
    expect(turnAttr(ALMA.outcome)).toBe("completed");
    expect(turn.startTimeUnixNano).toBe(String(1_767_225_600_000n * 1_000_000n));
    for (const child of all.filter((s) => s !== turn)) {
      expect(child.traceId).toBe(turn.traceId);
      expect(child.parentSpanId).toBe(turn.spanId);
    }
    const chat = attribute(all.find((s) => s.name.startsWith("chat"))!.attributes);
    expect(chat(GEN_AI.provider)).toBe("anthropic");
    expect(chat(GEN_AI.requestModel)).toBe("claude-sonnet-4-5");
    expect(chat(GEN_AI.inputTokens)).toBe(1200);
    expect(chat(GEN_AI.outputTokens)).toBe(35);
    expect(chat(ALMA.costMicros)).toBe(105);
    const tool = attribute(all.find((s) => s.name === "execute_tool book")!.attributes);
    expect(tool(ALMA.permissionDecision)).toBe("allow");
  });
});
