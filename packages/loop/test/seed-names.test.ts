// Names seed 001 (`../shared/seeds/001_1e3222a344f96376.txt`, @alma-harness/core) gives the
// contracts the loop runs against, checked through the public exports under the seed's spelling
// (issue 29).
import type { MediaBlock, MediaSource, MediaSourceContext } from "@alma-harness/core";
import type * as loop from "@alma-harness/loop";
import { scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, expectTypeOf, it } from "vitest";
import { completed, harness, SCOPE } from "./harness.js";

const REF = "media://patients/4411/xray";

describe('seed 001: "with a MediaSource configured the loop asks the product for the bytes and they go to the provider as base64"', () => {
  it("a core MediaSource is the loop's media.source: asked once per ref, its bytes sent as base64", async () => {
    const asked: { ref: string; ctx: MediaSourceContext }[] = [];
    const source: MediaSource = async (ref, ctx) => {
      asked.push({ ref, ctx });
      return { bytes: new Uint8Array([7, 8, 9]) };
    };
    const h = harness({ media: { source }, script: [scriptedText("I see it")] });
    const image: MediaBlock = { type: "media", kind: "image", ref: REF, contentType: "image/png" };
    completed(await h.run({ input: [image] }));
    expect(asked).toEqual([
      { ref: REF, ctx: { scope: SCOPE, sessionId: "s1", kind: "image", contentType: "image/png" } },
    ]);
    const sent = h.model.requests[0]?.messages[0]?.blocks.find((b) => b.type === "media");
    expect(sent).toMatchObject({ ref: REF, data: Buffer.from([7, 8, 9]).toString("base64") });
  });

  it("the loop's MediaSource, MediaSourceContext and MediaBytes are core's", () => {
    expectTypeOf<loop.MediaSource>().toEqualTypeOf<MediaSource>();
    expectTypeOf<loop.MediaSourceContext>().toEqualTypeOf<MediaSourceContext>();
    expectTypeOf<NonNullable<loop.MediaConfig["source"]>>().toEqualTypeOf<MediaSource>();
  });
});
