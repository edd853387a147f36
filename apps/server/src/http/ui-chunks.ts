import type { ConversationStreamEvent, ConversationView } from "@alma-harness/conversation";
import type { JsonValue } from "@alma-harness/core";
import type { UIMessageChunk } from "ai";
import { describe } from "./errors.js";
import { type TurnBody, viewResponse } from "./views.js";

/**
 * The turn stream in the AI SDK's UI message stream protocol (issue 27 §4), as data: each of the
 * host's stream events becomes the protocol's chunks, typed by the `ai` package's own
 * `UIMessageChunk` (the framing is `ai`'s `createUIMessageStreamResponse`, never ours).
 *
 * - settled step text → one text part per step (`text-start`, one `text-delta`, `text-end`);
 * - a tool's metadata → a tool part: `tool-input-available` with empty input (the stream never
 *   carries arguments), then `tool-output-available` with `{ isError: false }` or
 *   `tool-output-error`: the host shows that a tool ran, never its payload;
 * - the final view → the `finish` chunk's `messageMetadata` (what the JSON API answers);
 * - a view the JSON API answers as an error → an `error` chunk (its code and message);
 * - a parked ask → its tool part and, for a tool the person in the chat may decide, a
 *   `tool-approval-request` whose `approvalId` is the ask id and its decision token.
 */
export type UiChunk = UIMessageChunk<UiMetadata>;

/** The message metadata: the final view's JSON body (what the JSON API answers) and its HTTP status. */
export type UiMetadata = TurnBody & { readonly httpStatus: number };

type Progress = Exclude<ConversationStreamEvent, { type: "result" }>;

/** A parked ask as the UI stream shows it: its call, and (when the person decides it) its approval. */
export interface UiAsk {
  readonly askId: string;
  readonly callId: string;
  readonly tool: string;
  /** The call's arguments: present only for a tool whose asks the person decides. */
  readonly input?: JsonValue;
  /** The approval id (`<askId>.<decision token>`): present only for such a tool. */
  readonly approvalId?: string;
}

/** The chunks of one progress event of the turn. */
export function progressChunks(event: Progress): UiChunk[] {
  if (event.type === "text") {
    const id = `text-${event.step}`;
    return [
      { type: "start-step" },
      { type: "text-start", id },
      { type: "text-delta", id, delta: event.text },
      { type: "text-end", id },
      { type: "finish-step" },
    ];
  }
  if (event.type === "tool") {
    const base = { toolCallId: event.callId };
    return [
      { type: "tool-input-available", ...base, toolName: event.name, input: {} },
      event.isError
        ? { type: "tool-output-error", ...base, errorText: "the tool call failed" }
        : { type: "tool-output-available", ...base, output: { isError: false } },
    ];
  }
  // Usage has no part of its own: the final view's metadata carries the turn's cost.
  return [];
}

/** The asks of a parked turn: a tool part each, and an approval request where the person decides. */
export function askChunks(asks: readonly UiAsk[]): UiChunk[] {
  return asks.flatMap((ask): UiChunk[] => [
    {
      type: "tool-input-available",
      toolCallId: ask.callId,
      toolName: ask.tool,
      input: ask.input ?? {},
    },
    ...(ask.approvalId
      ? [
          {
            type: "tool-approval-request",
            approvalId: ask.approvalId,
            toolCallId: ask.callId,
          } as const,
        ]
      : []),
  ]);
}

/** A decided ask's tool part after the turn went on: denied, or its call's outcome in the view. */
export function decidedChunks(callId: string, approved: boolean): UiChunk[] {
  return approved ? [] : [{ type: "tool-output-denied", toolCallId: callId }];
}

/**
 * The tool calls a completed view lists that the chat does not show settled yet: an approved call
 * (`continuing`, whose part has its input) gets its outcome; a call the chat never saw gets its
 * part; a call it shows already gets nothing.
 */
export function viewToolChunks(
  view: ConversationView,
  shown: ReadonlySet<string>,
  continuing: ReadonlySet<string>,
): UiChunk[] {
  if (view.status !== "completed") return [];
  return view.result.toolCalls.flatMap((call): UiChunk[] => {
    if (shown.has(call.id) && !continuing.has(call.id)) return [];
    const outcome: UiChunk = call.isError
      ? { type: "tool-output-error", toolCallId: call.id, errorText: "the tool call failed" }
      : { type: "tool-output-available", toolCallId: call.id, output: { isError: false } };
    if (continuing.has(call.id)) return [outcome];
    return [
      { type: "tool-input-available", toolCallId: call.id, toolName: call.name, input: {} },
      outcome,
    ];
  });
}

/**
 * A resumed turn's reply as one text part: a decision's run is not streamed step by step
 * (`resolveAsk` answers its view), so its settled reply is what the chat gets.
 */
export function replyChunks(view: ConversationView): UiChunk[] {
  if (view.status !== "completed") return [];
  const text = view.result.reply.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");
  if (text.length === 0) return [];
  const id = `text-${view.rootKey}-reply`;
  return [
    { type: "start-step" },
    { type: "text-start", id },
    { type: "text-delta", id, delta: text },
    { type: "text-end", id },
    { type: "finish-step" },
  ];
}

/** The end of the stream: the view as the finish chunk's metadata, or the error the JSON API answers. */
export function finalChunks(view: ConversationView): UiChunk[] {
  try {
    const { status, body } = viewResponse(view);
    const finishReason = view.status === "awaiting_approval" ? "tool-calls" : "stop";
    return [
      {
        type: "finish",
        finishReason,
        messageMetadata: { httpStatus: status, ...body },
      },
    ];
  } catch (error) {
    const { code, message } = describe(error);
    return [{ type: "error", errorText: `${code}: ${message}` }];
  }
}

/** A failure before or outside the turn (a refused decision, a store error) as an error chunk. */
export function errorChunk(error: unknown): UiChunk {
  const { code, message } = describe(error);
  return { type: "error", errorText: `${code}: ${message}` };
}
