import { type MediaBlock, type Msg, ValidationError } from "@alma-harness/core";
import { EngineConfigError, MAX_MEDIA_BYTES, type MediaSourceContext } from "@alma-harness/loop";
import { scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, harness, log, SCOPE, uncertain } from "./harness.js";

const REF = "media://patients/4411/xray?token=SECRET";
const BYTES = new Uint8Array([1, 2, 3, 4, 5]);
const B64 = Buffer.from(BYTES).toString("base64");

const image = (ref = REF, extra: Partial<MediaBlock> = {}): MediaBlock => ({
  type: "media",
  kind: "image",
  ref,
  contentType: "image/png",
  ...extra,
});

function source(bytes: Uint8Array = BYTES, contentType?: string) {
  const asked: { ref: string; ctx: MediaSourceContext }[] = [];
  const fn = async (ref: string, ctx: MediaSourceContext) => {
    asked.push({ ref, ctx });
    return { bytes, ...(contentType !== undefined ? { contentType } : {}) };
  };
  return { asked, fn };
}

function mediaOf(msg: Msg | undefined): readonly MediaBlock[] {
  return (msg?.blocks ?? []).filter((b): b is MediaBlock => b.type === "media");
}

describe("media by bytes (spec: media-by-bytes)", () => {
  it("asks the source once per ref per turn; the bytes go as base64, the session keeps the ref alone", async () => {
    const src = source(BYTES, "Image/PNG; charset=binary");
    const h = harness({ media: { source: src.fn }, script: [scriptedText("I see it")] });
    const outcome = await h.run({ input: [{ type: "text", text: "look" }, image(), image()] });
    completed(outcome);
    expect(src.asked).toEqual([
      { ref: REF, ctx: { scope: SCOPE, sessionId: "s1", kind: "image", contentType: "image/png" } },
    ]);
    const sent = mediaOf(h.model.requests[0]?.messages[0]);
    expect(sent).toEqual([
      { type: "media", kind: "image", ref: REF, contentType: "image/png", sizeBytes: 5, data: B64 },
      { type: "media", kind: "image", ref: REF, contentType: "image/png", sizeBytes: 5, data: B64 },
    ]);
    const stored = mediaOf(log(outcome)[0]);
    expect(stored).toEqual([
      { type: "media", kind: "image", ref: REF, contentType: "image/png", sizeBytes: 5 },
      { type: "media", kind: "image", ref: REF, contentType: "image/png", sizeBytes: 5 },
    ]);
    expect(JSON.stringify(log(outcome))).not.toContain(B64);
  });

  it("the access trail has the kind and the size, never the ref", async () => {
    const src = source();
    const h = harness({ media: { source: src.fn }, script: [scriptedText("ok")] });
    completed(await h.run({ input: [image()] }));
    expect(h.trail("access").map((e) => [e.tool, e.resource, e.action])).toEqual([
      ["media", "provider:fake:image:bytes:5", "egress"],
    ]);
    expect(JSON.stringify(h.audit.events)).not.toContain(REF);
    expect(JSON.stringify(h.audit.events)).not.toContain("SECRET");
  });

  it("media at maxBytes passes; one byte over refuses the turn before any call, uncertain with cause media", async () => {
    const at = harness({
      media: { source: source(new Uint8Array(8)).fn, maxBytes: 8 },
      script: [scriptedText("ok")],
    });
    completed(await at.run({ input: [image()] }));
    expect(at.model.calls).toBe(1);

    const over = harness({
      media: { source: source(new Uint8Array(9)).fn, maxBytes: 8 },
      script: [scriptedText("never")],
    });
    expect(uncertain(await over.run({ input: [image()] })).cause).toBe("media");
    expect(over.model.calls).toBe(0);

    const inline = harness({ media: { maxBytes: 4 }, script: [scriptedText("never")] });
    expect(uncertain(await inline.run({ input: [image("upload-1", { data: B64 })] })).cause).toBe(
      "media",
    );
    expect(inline.model.calls).toBe(0);
  });

  it("a source failure after admission leaves the turn uncertain with cause media, and no call", async () => {
    const h = harness({
      media: {
        source: async () => {
          throw new Error("bucket down");
        },
      },
      script: [scriptedText("never")],
    });
    expect(uncertain(await h.run({ input: [image()] })).cause).toBe("media");
    expect(h.model.calls).toBe(0);
  });

  it("a block's own bytes go without asking the source; the stored block drops them", async () => {
    const src = source();
    const h = harness({ media: { source: src.fn }, script: [scriptedText("ok")] });
    const outcome = await h.run({
      input: [image("upload-1", { data: B64, contentType: "IMAGE/JPEG" })],
    });
    completed(outcome);
    expect(src.asked).toEqual([]);
    expect(mediaOf(h.model.requests[0]?.messages[0])).toEqual([
      {
        type: "media",
        kind: "image",
        ref: "upload-1",
        contentType: "image/jpeg",
        sizeBytes: 5,
        data: B64,
      },
    ]);
    expect(mediaOf(log(outcome)[0])).toEqual([
      { type: "media", kind: "image", ref: "upload-1", contentType: "image/jpeg", sizeBytes: 5 },
    ]);
  });

  it("history media on a later turn is a placeholder by default: the bytes go once", async () => {
    const src = source();
    const h = harness({
      media: { source: src.fn },
      script: [scriptedText("first"), scriptedText("second")],
    });
    const first = await h.run({ input: [image()] });
    completed(first);
    completed(
      await h.run({
        history: log(first),
        revision: 2,
        input: [{ type: "text", text: "and now?" }],
      }),
    );
    expect(src.asked).toHaveLength(1);
    expect(h.model.requests[1]?.messages[0]?.blocks).toEqual([
      { type: "text", text: "[image: image/png, 5 bytes, sent earlier]", origin: "harness" },
    ]);
    expect(JSON.stringify(h.model.requests[1])).not.toContain(B64);
    // the later turn's input has no media: nothing more on the access trail
    expect(h.trail("access")).toHaveLength(1);
  });

  it('with replay "bytes" history media goes again, asked from the source', async () => {
    const src = source();
    const h = harness({
      media: { source: src.fn, replay: "bytes" },
      script: [scriptedText("first"), scriptedText("second")],
    });
    const first = await h.run({ input: [image()] });
    completed(first);
    const second = await h.run({
      history: log(first),
      revision: 2,
      input: [{ type: "text", text: "and now?" }],
    });
    completed(second);
    expect(src.asked.map((a) => a.ref)).toEqual([REF, REF]);
    expect(mediaOf(h.model.requests[1]?.messages[0])).toEqual([
      { type: "media", kind: "image", ref: REF, contentType: "image/png", sizeBytes: 5, data: B64 },
    ]);
    expect(h.trail("access").map((e) => e.resource)).toEqual([
      "provider:fake:image:bytes:5",
      "provider:fake:image:bytes:5",
    ]);
    expect(JSON.stringify(log(second))).not.toContain(B64);
  });

  it("without media configured, a block carrying content is refused before admission; a ref-only block goes by reference", async () => {
    const h = harness({ script: [scriptedText("ok")] });
    await expect(h.run({ input: [image("upload-1", { data: B64 })] })).rejects.toBeInstanceOf(
      ValidationError,
    );
    await expect(h.run({ input: [image(`data:image/png;base64,${B64}`)] })).rejects.toBeInstanceOf(
      ValidationError,
    );
    expect(h.model.calls).toBe(0);
    const url = "https://media.example/a.png";
    completed(await h.run({ input: [image(url)] }));
    expect(mediaOf(h.model.requests[0]?.messages[0])).toEqual([image(url)]);
  });

  it("with media configured, a data: URL ref and malformed bytes are refused before admission", async () => {
    const h = harness({ media: {}, script: [scriptedText("ok")] });
    await expect(h.run({ input: [image(`data:image/png;base64,${B64}`)] })).rejects.toBeInstanceOf(
      ValidationError,
    );
    await expect(
      h.run({ input: [image("upload-1", { data: "not base64!" })] }),
    ).rejects.toBeInstanceOf(ValidationError);
    expect(h.model.calls).toBe(0);
  });

  it("checks its configuration when the engine is built", () => {
    expect(() => harness({ media: { maxBytes: MAX_MEDIA_BYTES + 1 } })).toThrow(EngineConfigError);
    expect(() => harness({ media: { maxBytes: 0 } })).toThrow(EngineConfigError);
    expect(() => harness({ media: { replay: "bytes" } })).toThrow(EngineConfigError);
    expect(() => harness({ media: { source: "x" as never } })).toThrow(EngineConfigError);
  });
});
