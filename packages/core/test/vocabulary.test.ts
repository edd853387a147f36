import { describe, expect, it } from "vitest";
import { isUncertainCause, stopTag, type UncertainCause } from "../src/index.js";

describe("the uncertain-cause vocabulary", () => {
  const causes: UncertainCause[] = [
    "deadline",
    "cancelled",
    "audit",
    "admission_fenced",
    "session_append",
    "call:main:aborted",
    "call:direct:error",
    "call:main:invalid:none:text_delta",
    "call:summary:unavailable:max_tokens",
    "call:main:unsettled:end_turn",
    "call:main:rejected:anthropic_rate_limit_v1",
    "call:delegate:overloaded:none",
    "hook:step:pre",
    "tool:opening_hours",
  ];
  it.each(causes)("%s is in it", (cause) => {
    expect(isUncertainCause(cause)).toBe(true);
  });

  it.each([
    "",
    "Deadline",
    "call:main",
    "call:robot:error",
    "hook:before",
    "tool:",
    "tool:has space",
    "call:main:Error",
    42,
    null,
  ])("%s is not", (value) => {
    expect(isUncertainCause(value)).toBe(false);
  });

  it("a stop reason a provider invented is named unknown, never verbatim", () => {
    expect(stopTag("end_turn")).toBe("end_turn");
    expect(stopTag("none")).toBe("none");
    expect(stopTag("my_custom_stop; drop table")).toBe("unknown");
  });
});
