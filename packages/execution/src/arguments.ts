import { type JsonValue, snapshot, type StreamToolCall } from "@alma-harness/core";

/** Parsed arguments per call of this turn, so the step, the dispatch and the result list parse once. */
const parsedArguments = new WeakMap<
  StreamToolCall,
  { readonly text: string; readonly value: Record<string, JsonValue> | undefined }
>();

/** `parseArguments` of a call's arguments, remembered for that call (and its text) once parsed. */
export function argumentsOf(call: StreamToolCall): Record<string, JsonValue> | undefined {
  const known = parsedArguments.get(call);
  if (known !== undefined && known.text === call.arguments) return known.value;
  const value = parseArguments(call.arguments);
  parsedArguments.set(call, { text: call.arguments, value });
  return value;
}

export function parseArguments(text: string): Record<string, JsonValue> | undefined {
  try {
    const value: unknown = JSON.parse(text === "" ? "{}" : text);
    if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
    return snapshot(value) as Record<string, JsonValue>;
  } catch {
    return undefined;
  }
}
