import { createHash } from "node:crypto";
import {
  type ConversationStream,
  type ConversationView,
  conversationRootKey,
  type RunTurnRequest,
} from "@alma-harness/conversation";
import { type Scope, validateId } from "@alma-harness/core";
import {
  createUIMessageStreamResponse,
  isToolUIPart,
  type UIMessage,
  validateUIMessages,
} from "ai";
import { createRoute, z } from "@hono/zod-openapi";
import { type HostApp, jsonBody, scopeOf, tenantAuth } from "./api.js";
import type { HostContext } from "./context.js";
import { HttpError } from "./errors.js";
import { body, errorAnswers, eventStream, Id, TENANT } from "./schemas.js";
import { admitting } from "./tenant-api.js";
import { assertLive, turnSlot } from "./tenant-routes.js";
import {
  askChunks,
  decidedChunks,
  errorChunk,
  finalChunks,
  progressChunks,
  replyChunks,
  type UiAsk,
  type UiChunk,
  viewToolChunks,
} from "./ui-chunks.js";

/** How long the stream waits for a running turn it did not start (a retry of the same message). */
const LIVE_WAIT_MS = 10 * 60_000;

type Write = (chunks: readonly UiChunk[]) => void;

/**
 * A UI message stream response (`ai`'s framing: SSE `data:` chunks, its headers, `[DONE]`) over
 * what `produce` writes. The `start` chunk opens it; a throw of `produce` is an `error` chunk; a
 * client that leaves cancels the response only (`departed`): the turn runs on.
 */
function uiResponse(
  host: HostContext,
  produce: (write: Write, departed: AbortSignal) => Promise<void>,
) {
  const departed = new AbortController();
  const stream = new ReadableStream<UiChunk>({
    start(controller) {
      const write: Write = (chunks) => {
        if (!departed.signal.aborted) for (const chunk of chunks) controller.enqueue(chunk);
      };
      write([{ type: "start" }]);
      void produce(write, departed.signal)
        .catch((error) => write([errorChunk(error)]))
        .finally(() => {
          if (!departed.signal.aborted) controller.close();
        });
    },
    cancel() {
      departed.abort();
    },
  });
  return createUIMessageStreamResponse({ stream, keepAliveMs: host.http.pingMs });
}

/** The asks of a parked view as the chat shows them; the person decides only `ui.approvals` tools. */
async function uiAsks(host: HostContext, scope: Scope, view: ConversationView): Promise<UiAsk[]> {
  if (view.status !== "awaiting_approval") return [];
  const out: UiAsk[] = [];
  for (const ask of view.asks) {
    const decides = host.ui.approvals.has(ask.tool);
    const found = decides ? await host.runtime.runner.findAsk(ask.askId) : undefined;
    const token = decides ? await host.runtime.runner.askToken(scope, ask.askId) : undefined;
    out.push({
      askId: ask.askId,
      callId: ask.callId,
      tool: ask.tool,
      ...(found ? { input: found.input } : {}),
      ...(token ? { approvalId: `${ask.askId}.${token}` } : {}),
    });
  }
  return out;
}

/** The end of a turn's stream: a parked turn's asks, then the view as metadata (or its error). */
async function writeEnd(host: HostContext, scope: Scope, view: ConversationView, write: Write) {
  let settled = view;
  if (view.status === "in_progress")
    settled = (await host.turns.wait(view.rootKey, LIVE_WAIT_MS)) ?? view;
  write(askChunks(await uiAsks(host, scope, settled)));
  write(finalChunks(settled));
}

/** Follows the turn's progress until its result or the client's departure (which only detaches). */
async function follow(stream: ConversationStream, write: Write, departed: AbortSignal) {
  const iterator = stream[Symbol.asyncIterator]();
  const gone = new Promise<"gone">((resolve) =>
    departed.addEventListener("abort", () => resolve("gone"), { once: true }),
  );
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), gone]);
      if (next === "gone" || next.done || next.value.type === "result") break;
      write(progressChunks(next.value));
    }
  } catch {
    // a resync (a slow reader, an unavailable step): the final view still comes from the result
  } finally {
    if (departed.aborted) void iterator.return?.();
  }
}

/** The text of the person's last message: its text parts, joined. */
function inputOf(message: UIMessage): string {
  const text = message.parts
    .flatMap((part) => (part.type === "text" ? [part.text] : []))
    .join("\n")
    .trim();
  if (text.length === 0) throw new HttpError("invalid_input", "the last message has no text");
  return text;
}

/** A new message: a turn keyed by the message's id (a retry of it replays), streamed as it settles. */
async function turnStream(host: HostContext, scope: Scope, sessionId: string, message: UIMessage) {
  const digest = createHash("sha256").update(message.id).digest("hex").slice(0, 32);
  const idempotencyKey = `ui-${digest}`;
  const turn: RunTurnRequest = {
    scope,
    sessionId,
    idempotencyKey,
    input: inputOf(message),
    intent: host.intent,
    signal: host.shutdown.signal,
  };
  await assertLive(host, scope, sessionId);
  const rootKey = conversationRootKey(scope, sessionId, idempotencyKey);
  const release = await turnSlot(host, scope, rootKey);
  try {
    await host.loop.enter();
    host.shutdown.admit();
  } catch (error) {
    release();
    throw error;
  }
  const stream = host.turns.track(rootKey, scope, sessionId, host.clock.now(), () =>
    host.runtime.runner.streamTurn(turn),
  );
  void stream.result.then(release, release);
  return uiResponse(host, async (write, departed) => {
    await follow(stream, write, departed);
    if (!departed.aborted) await writeEnd(host, scope, await stream.result, write);
  });
}

interface Answer {
  readonly askId: string;
  readonly token: string;
  readonly callId: string;
  readonly approved: boolean;
}

/** The approval responses of the chat's last assistant message, checked before anything runs. */
function answersOf(message: UIMessage): Answer[] {
  const answers: Answer[] = [];
  for (const part of message.parts) {
    if (!isToolUIPart(part) || part.state !== "approval-responded") continue;
    const id = part.approval.id;
    const dot = id.indexOf(".");
    if (dot < 0) throw new HttpError("invalid_input", "an approval id is not one this host sent");
    answers.push({
      askId: id.slice(0, dot),
      token: id.slice(dot + 1),
      callId: part.toolCallId,
      approved: part.approval.approved,
    });
  }
  if (answers.length === 0)
    throw new HttpError("invalid_input", "the last message is the assistant's with no answer");
  return answers;
}

/** Approval responses: each through `resolveAsk` (token checked, first wins), then the turn's end. */
async function approvalStream(host: HostContext, scope: Scope, message: UIMessage) {
  const answers = answersOf(message);
  for (const answer of answers) {
    const ask = await host.runtime.runner.findAsk(validateId("approvalId", answer.askId));
    // Another person's ask, or one this chat may not decide, reads as unknown.
    if (!ask || ask.scope.org !== scope.org || ask.scope.uid !== scope.uid)
      throw new HttpError("not_found", "no pending ask with this approval id for you");
    if (!host.ui.approvals.has(ask.tool))
      throw new HttpError("forbidden", "this tool's asks are decided by the operator");
  }
  host.shutdown.admit();
  const shown = new Set(message.parts.flatMap((p) => (isToolUIPart(p) ? [p.toolCallId] : [])));
  const continuing = new Set(answers.filter((a) => a.approved).map((a) => a.callId));
  return uiResponse(host, async (write) => {
    let view: ConversationView | undefined;
    for (const answer of answers) {
      const decision = answer.approved ? "approve" : "deny";
      const resolved = await host.runtime.runner.resolveAsk({
        scope,
        askId: answer.askId,
        decision,
        by: scope.uid,
        token: answer.token,
      });
      view = resolved.view;
      write(decidedChunks(answer.callId, answer.approved));
    }
    if (!view) return;
    write(viewToolChunks(view, shown, continuing));
    write(replyChunks(view));
    await writeEnd(host, scope, view, write);
  });
}

/** `POST /v1/ui/chat`: what `useChat`'s `DefaultChatTransport` sends (`{id, messages, trigger, messageId}`). */
async function postUiChat(
  host: HostContext,
  scope: Scope,
  sessionId: string,
  sent: readonly unknown[],
): Promise<Response> {
  let messages: UIMessage[];
  try {
    messages = await validateUIMessages({ messages: sent });
  } catch (error) {
    throw new HttpError("invalid_input", `messages: ${(error as Error).message}`.slice(0, 500));
  }
  const last = messages.at(-1);
  if (last?.role === "assistant") return approvalStream(host, scope, last);
  if (last?.role !== "user")
    throw new HttpError("invalid_input", "the last message must be the person's, or approvals");
  return turnStream(host, scope, sessionId, last);
}

const chatRoute = (host: HostContext) =>
  createRoute({
    method: "post",
    path: "/v1/ui/chat",
    summary: "A turn, or the person's approvals, in the AI SDK's UI message stream protocol",
    security: TENANT,
    middleware: [tenantAuth(host), admitting(host), jsonBody(host)] as const,
    request: {
      body: body({
        id: Id.openapi({ description: "the chat's id: the session" }),
        messages: z.array(z.unknown()).openapi({ description: "the chat's `UIMessage`s" }),
        trigger: z.string().optional(),
        messageId: z.string().optional(),
      }),
    },
    responses: {
      200: {
        description: "the turn, or the decided asks' turn, as it settles",
        content: eventStream("the AI SDK's UI message stream: `data:` chunks, then `[DONE]`"),
      },
      ...errorAnswers([401, 403, 404, 409, 410, 413, 415, 422, 429, 503]),
    },
  });

export function uiRoutes(app: HostApp, host: HostContext): void {
  app.openapi(chatRoute(host), (c) => {
    const { id, messages } = c.req.valid("json");
    return postUiChat(host, scopeOf(c), id, messages);
  });
}
