import {
  type Block,
  canonicalJson,
  DuplicateEventError,
  FenceError,
  type JsonValue,
  type Msg,
  normalizeScope,
  type Scope,
  snapshot,
  textOf,
  ValidationError,
  validateId,
} from "@alma-harness/core";
import type { ResolvedConfig } from "./config.js";
import { EventRefusedError } from "./errors.js";
import { bindingOf } from "./keys.js";
import { DEFAULT_EVENT_LABELS } from "./render.js";
import { freeAdmission } from "./uncertain.js";

export type RecordedEvent =
  | {
      readonly id: string;
      readonly at: string;
      readonly kind: "message";
      readonly role: "user" | "assistant";
      readonly origin?: "human" | "system";
      readonly blocks: readonly { readonly type: "text"; readonly text: string }[];
    }
  | {
      readonly id: string;
      readonly at: string;
      readonly kind: "undelivered";
      readonly turn: string;
    };

export interface RecordEventsRequest {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly events: readonly RecordedEvent[];
}

export type RecordEventsResult =
  | { readonly status: "recorded"; readonly appended: number; readonly replayed: number }
  | { readonly status: "busy"; readonly holder: string }
  | { readonly status: "reconciliation_required" };

export interface EventsApi {
  record(request: RecordEventsRequest): Promise<RecordEventsResult>;
  assertNewInputEvent(scope: Scope, sessionId: string, eventId: string): Promise<void>;
}

const AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?(Z|[+-]\d{2}:\d{2})$/;

function normalizeEvents(raw: unknown): RecordedEvent[] {
  const events = snapshot(raw) as JsonValue;
  if (!Array.isArray(events) || events.length < 1 || events.length > 20)
    throw new ValidationError("events", "count_1_20", "record 1-20 events at a time");
  const ids = new Set<string>();
  return events.map((e, i) => {
    const path = `events[${i}]`;
    const ev = e as Record<string, JsonValue>;
    validateId(`${path}.id`, ev.id);
    if (ids.has(ev.id as string))
      throw new ValidationError(`${path}.id`, "unique", "event ids in a batch must be unique");
    ids.add(ev.id as string);
    if (typeof ev.at !== "string" || !AT.test(ev.at))
      throw new ValidationError(
        `${path}.at`,
        "timestamp",
        "at must be an ISO timestamp with a zone, at most milliseconds",
      );
    if (ev.kind === "undelivered") {
      if (Object.keys(ev).some((k) => !["id", "at", "kind", "turn"].includes(k)))
        throw new ValidationError(path, "unknown_field", `${path} has unknown fields`);
      validateId(`${path}.turn`, ev.turn);
      return ev as unknown as RecordedEvent;
    }
    if (ev.kind !== "message")
      throw new ValidationError(`${path}.kind`, "closed", "kind is message or undelivered");
    if (Object.keys(ev).some((k) => !["id", "at", "kind", "role", "origin", "blocks"].includes(k)))
      throw new ValidationError(path, "unknown_field", `${path} has unknown fields`);
    if (ev.role !== "user" && ev.role !== "assistant")
      throw new ValidationError(`${path}.role`, "closed", "role is user or assistant");
    if (
      ev.origin !== undefined &&
      (ev.role !== "assistant" || (ev.origin !== "human" && ev.origin !== "system"))
    ) {
      throw new ValidationError(
        `${path}.origin`,
        "closed",
        "origin (human or system) only on an assistant message",
      );
    }
    const blocks = ev.blocks;
    if (!Array.isArray(blocks) || blocks.length < 1 || blocks.length > 16)
      throw new ValidationError(`${path}.blocks`, "count_1_16", "a message takes 1-16 text blocks");
    for (const b of blocks as Record<string, JsonValue>[]) {
      if (
        b?.type !== "text" ||
        typeof b.text !== "string" ||
        b.text.length === 0 ||
        Object.keys(b).length !== 2
      )
        throw new ValidationError(`${path}.blocks`, "text", "blocks must be {type: text, text}");
    }
    return ev as unknown as RecordedEvent;
  });
}

function toMessage(event: RecordedEvent, labels: ResolvedConfig["eventLabels"]): Msg {
  if (event.kind === "undelivered") {
    const template = labels?.undelivered ?? DEFAULT_EVENT_LABELS.undelivered;
    return {
      role: "user",
      blocks: [{ type: "text", text: template.replace("{at}", event.at), origin: "harness" }],
      meta: { event: { id: event.id, kind: "undelivered" } },
    };
  }
  const blocks: Block[] = event.blocks.map((b) =>
    event.origin
      ? { type: "text", text: b.text, origin: event.origin }
      : { type: "text", text: b.text },
  );
  return { role: event.role, blocks, meta: { event: { id: event.id, kind: "message" } } };
}

function sameContent(a: Msg, b: Msg): boolean {
  return (
    canonicalJson({
      role: a.role,
      blocks: a.blocks,
      event: a.meta?.event ?? null,
    } as unknown as JsonValue) ===
    canonicalJson({
      role: b.role,
      blocks: b.blocks,
      event: b.meta?.event ?? null,
    } as unknown as JsonValue)
  );
}

/** Finishes an event batch's admission; after a failure, whether a read-back (or a release) shows the session free. */
async function finishedOrFreed(
  config: ResolvedConfig,
  scope: Scope,
  admissionId: string,
): Promise<boolean> {
  try {
    if ((await config.stores.admissions.finish(scope, admissionId))?.state === "finished")
      return true;
  } catch {
    // read back below
  }
  return freeAdmission(config, scope, admissionId);
}

/** Recorded events: idempotent by id over the whole log, fenced on their own admission. */
export function eventsApi(config: ResolvedConfig): EventsApi {
  const { stores } = config;
  return {
    async assertNewInputEvent(scope, sessionId, eventId) {
      const found = await stores.sessions.findEvents(scope, sessionId, [eventId]);
      if (found.length > 0) throw new DuplicateEventError(eventId);
    },
    async record(request) {
      const scope = normalizeScope(request.scope);
      const sessionId = validateId("sessionId", request.sessionId);
      const events = normalizeEvents(request.events);
      const messages = events.map((e) => toMessage(e, config.eventLabels));
      const present = await stores.sessions.findEvents(
        scope,
        sessionId,
        events.map((e) => e.id),
      );
      const prefix = replayedPrefix(events, messages, present);
      const fresh = messages.slice(prefix);
      if (fresh.length === 0) return { status: "recorded", appended: 0, replayed: prefix };
      const view = await stores.sessions.load(scope, sessionId);
      // An erased session takes no event: refused before an admission would write its id again.
      if (view.erased) throw new FenceError("the session was erased");
      checkUndelivered(events.slice(prefix), view.messages);
      return appendFenced(config, { scope, sessionId, events, fresh, prefix });
    },
  };
}

/**
 * How many of the batch's leading events the log already holds, each with the same content: a
 * retry replays them. An event already recorded after a fresh one, or with other content, conflicts.
 */
function replayedPrefix(
  events: readonly RecordedEvent[],
  messages: readonly Msg[],
  present: readonly Msg[],
): number {
  const byId = new Map(present.map((m) => [m.meta?.event?.id ?? "", m]));
  let prefix = 0;
  for (const [i, event] of events.entries()) {
    const found = byId.get(event.id);
    if (!found) continue;
    const msg = messages[i] as Msg;
    if (i !== prefix || !sameContent(found, msg)) throw new EventRefusedError(event.id, "conflict");
    prefix += 1;
  }
  return prefix;
}

/** An undelivered mark names a turn of the session that replied with text; anything else is refused. */
function checkUndelivered(fresh: readonly RecordedEvent[], log: readonly Msg[]): void {
  for (const event of fresh) {
    if (event.kind !== "undelivered") continue;
    const replied = log.some(
      (m) => m.meta?.turn === event.turn && m.role === "assistant" && textOf(m.blocks).length > 0,
    );
    if (!replied) throw new EventRefusedError(event.id, "no_reply");
  }
}

/**
 * The fresh events appended under an admission of their own (a key derived from the batch's ids),
 * then the admission finished. A failed write whose outcome the stores cannot confirm is
 * `reconciliation_required`; an append that failed but landed whole (read back) is recorded.
 */
async function appendFenced(
  config: ResolvedConfig,
  batch: {
    readonly scope: Scope;
    readonly sessionId: string;
    readonly events: readonly RecordedEvent[];
    readonly fresh: readonly Msg[];
    readonly prefix: number;
  },
): Promise<RecordEventsResult> {
  const { stores } = config;
  const { scope, sessionId, events, fresh, prefix } = batch;
  const now = config.clock.now();
  const rootKey = `ev_${bindingOf(events.map((e) => e.id)).slice(3, 40)}`;
  const admissionId = config.ids.next("adm");
  let admitted: Awaited<ReturnType<typeof stores.admissions.admit>>;
  try {
    admitted = await stores.admissions.admit({
      scope,
      sessionId,
      rootKey,
      kind: "events",
      admissionId,
      now,
      deadlineAt: now + 60_000,
    });
  } catch (error) {
    // Landed or not, the admission is released by its id: confirmed, nothing happened.
    if (await freeAdmission(config, scope, admissionId)) throw error;
    return { status: "reconciliation_required" };
  }
  if (admitted.status === "busy") return { status: "busy", holder: admitted.holder.rootKey };
  try {
    await stores.sessions.append(scope, sessionId, fresh, { admissionId, now });
  } catch (error) {
    const finished = await stores.admissions.finish(scope, admissionId).catch(() => undefined);
    if (!finished) return { status: "reconciliation_required" };
    const after = await stores.sessions.findEvents(
      scope,
      sessionId,
      events.map((e) => e.id),
    );
    if (after.length === events.length)
      return { status: "recorded", appended: fresh.length, replayed: prefix };
    throw error;
  }
  // The batch is in the log; a lost finish acknowledgement is read back, never left holding the session.
  if (!(await finishedOrFreed(config, scope, admissionId)))
    return { status: "reconciliation_required" };
  return { status: "recorded", appended: fresh.length, replayed: prefix };
}
