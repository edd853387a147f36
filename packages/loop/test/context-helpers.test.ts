import * as context from "@alma-harness/memory/context";
import { describe, expect, it } from "vitest";
import * as loop from "../src/index.js";

describe("the context helpers", () => {
  it("are re-exported by the loop with identity kept", () => {
    expect(loop.trimContext).toBe(context.trimContext);
    expect(loop.trimmedMarkerMessage).toBe(context.trimmedMarkerMessage);
    expect(loop.estimateTokens).toBe(context.estimateTokens);
    expect(loop.estimateMessageTokens).toBe(context.estimateMessageTokens);
    expect(loop.estimateMessagesTokens).toBe(context.estimateMessagesTokens);
    expect(loop.TRIMMED_MARKER_PREFIX).toBe("[context-trimmed]");
  });
});
