import { type JsonValue, snapshot, type ToolResultBlock } from "@alma-harness/core";

/** Renders an observation as the model will read it, to measure and cut it. */
export function renderOutput(output: JsonValue): string {
  return typeof output === "string" ? output : JSON.stringify(output);
}

/** Output over `max` characters is cut with a marker; it is never sent whole. */
export function boundOutput(output: JsonValue, max: number): JsonValue {
  const text = renderOutput(output);
  if (text.length <= max) return output;
  return `${text.slice(0, max)}\n[output truncated: ${text.length - max} of ${text.length} characters cut]`;
}

/** A handler's return value as JSON data, or undefined when it is not plain data. */
export function toObservation(value: unknown): JsonValue | undefined {
  if (value === undefined) return null;
  try {
    return snapshot(value);
  } catch {
    return undefined;
  }
}

/** A call's error observation: the model reads `message`, the trail records `code`. */
export function errorResult(
  call: { readonly id: string; readonly name: string },
  code: string,
  message: string,
): ToolResultBlock {
  return {
    type: "tool_result",
    callId: call.id,
    name: call.name,
    output: message,
    isError: true,
    code,
  };
}
