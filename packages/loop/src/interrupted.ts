import type { ToolResultBlock } from "@alma-harness/core";

/** Carries the step's results (real ones, then synthesized ones) out of a dispatch that stopped. */
export class InterruptedDispatch extends Error {
  constructor(
    readonly reason: Error,
    readonly results: ToolResultBlock[],
  ) {
    super(reason.message);
  }
}
