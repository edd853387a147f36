import {
  deepFreeze,
  type LifecycleHooks,
  type ModelRequest,
  type StepPrePatch,
  trailKind,
} from "@alma-harness/core";
import { UncertainTurnError } from "./errors.js";
import type { Recorder } from "./recorder.js";
import type { StepCall } from "./step-results.js";

/**
 * Field names the context trail may carry verbatim: what `step:pre` may return and what a request
 * holds. Any other key a hook returns is recorded as `unknown_field`, so nothing a hook writes
 * (a schema, a prompt) reaches the trail through a key.
 */
const NAMED_FIELDS: ReadonlySet<string> = new Set([
  "maxOutputTokens",
  "model",
  "clientId",
  "tools",
  "output",
  "toolChoice",
  "temperature",
  "cache",
  "reasoning",
  "serviceTier",
  "system",
  "messages",
  "providerTools",
  "deferredTools",
  "deferredToolSpecs",
] satisfies readonly (keyof StepPrePatch | keyof ModelRequest)[]);

/**
 * The hook boundary. `step:pre` sees a frozen snapshot of the choice and the request; of what it
 * returns only a lower `maxOutputTokens` is honored. Routing, tools, output schema, tool choice
 * (its absence included), temperature and cache are pinned: an attempt is refused. Every field it
 * touched lands on the context trail, by name only, before the request goes out as pinned.
 */
export async function applyStepPre(
  hook: LifecycleHooks["step:pre"],
  rec: Recorder,
  call: StepCall,
): Promise<ModelRequest> {
  if (!hook) return call.request;
  let patch: StepPrePatch | undefined;
  await rec.commit();
  try {
    patch = await hook(
      deepFreeze({
        turnId: rec.turnId,
        step: call.step,
        choice: call.choice,
        request: call.request,
      }),
    );
  } catch (error) {
    throw new UncertainTurnError("hook:step:pre", "the step:pre hook threw", error);
  }
  if (patch === undefined || patch === null) return call.request;
  if (typeof patch !== "object" || Array.isArray(patch))
    throw new UncertainTurnError("hook:step:pre", "step:pre must return an object or nothing");
  let request = call.request;
  const touched: { field: string; honored: boolean }[] = [];
  for (const key of Object.keys(patch)) {
    const field = NAMED_FIELDS.has(key) ? key : "unknown_field";
    let honored = false;
    if (key === "maxOutputTokens") {
      // Read once: a getter cannot show the check one value and the request another.
      const value: unknown = (patch as Record<string, unknown>)[key];
      honored =
        typeof value === "number" &&
        Number.isSafeInteger(value) &&
        value >= 1 &&
        value < request.maxOutputTokens;
      if (honored) request = deepFreeze({ ...request, maxOutputTokens: value as number });
    }
    touched.push({ field, honored });
  }
  for (const { field, honored } of touched) {
    await rec.record("context", {
      step: call.step,
      field: trailKind(field),
      decision: honored ? "honored" : "refused",
    });
  }
  return request;
}
