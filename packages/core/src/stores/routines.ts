import { type CapAction, type CapInput, normalizePerTurnCap } from "../caps.js";
import { ValidationError } from "../errors.js";
import { normalizeIntent, type RoutingIntent } from "../routing.js";
import { type Scope, validateId } from "../scope.js";
import { snapshot } from "../snapshot.js";
import {
  closedObject,
  decodeCursor,
  encodeCursor,
  pageLimit,
  scopeKey,
  validateOneOf,
  validateTime,
} from "./rules.js";

/**
 * How a routine's work runs: `turn` through the governed loop now (the conversation runner's
 * `runTurn`); `job` handed to a provider batch job and collected on a later tick (a `RoutineJobs`
 * seam of `@alma-harness/schedule`).
 */
export type RoutineExecution = "turn" | "job";
export const ROUTINE_EXECUTIONS: readonly RoutineExecution[] = Object.freeze(["turn", "job"]);

/** When a routine fires: a five- or six-field cron expression read in an IANA time zone. */
export interface RoutineSchedule {
  /** 1–120 printable ASCII characters; its meaning is checked by `@alma-harness/schedule` (core does not parse cron). */
  readonly cron: string;
  /** An IANA time zone name the runtime's `Intl` knows ("America/Sao_Paulo", "UTC"). */
  readonly timeZone: string;
}

/**
 * A routine is data (seed 001, "Routines"): a goal, an intent, a schedule, a profile or none, its
 * own per-run cap and a named destination. Nothing in it is code; the runner in
 * `@alma-harness/schedule` claims each slot, runs it governed and records it.
 */
export interface Routine {
  readonly scope: Scope;
  /** 1–100 printable ASCII characters without spaces, unique in its scope. */
  readonly id: string;
  /** The turn's input: 1–8,000 characters of text, no control characters but tab and newline. */
  readonly goal: string;
  readonly intent: RoutingIntent;
  readonly schedule: RoutineSchedule;
  /** The tool profile the run's turn is granted; absent: none (the runner's default grant). */
  readonly profile?: string;
  /** The run's own cap, as the per-turn cap of its one turn: `usd` and what crossing it does (a number means block). */
  readonly cap: { readonly usd: number; readonly onExceeded: CapAction };
  /** The named destination an `OutputSink` delivers the result to. */
  readonly destination: string;
  /** Run a slot the host missed (it was down) late, instead of recording it `missed`. Default false. */
  readonly catchUp: boolean;
  readonly execution: RoutineExecution;
  /** A paused routine fires nothing; the slots that passed while it was paused are recorded `missed` when it resumes (or run late with `catchUp`). Default true. */
  readonly enabled: boolean;
  /** Epoch ms; slots at or before it never fire. */
  readonly createdAt: number;
}

/** A routine as a host writes it: the cap as any `CapInput` (a number blocks), the flags optional. */
export type RoutineInput = Omit<Routine, "cap" | "catchUp" | "execution" | "enabled"> & {
  readonly cap: CapInput;
  readonly catchUp?: boolean;
  readonly execution?: RoutineExecution;
  readonly enabled?: boolean;
};

/** What `RoutineStore.put` did: `created`, `updated` (its `createdAt` kept), or `unchanged`. */
export interface RoutinePutResult {
  readonly status: "created" | "updated" | "unchanged";
  readonly routine: Routine;
}

export interface RoutinePage {
  readonly items: readonly Routine[];
  readonly nextCursor?: string;
}

/**
 * Where routines are kept. Guarantees:
 * - Input is validated before any I/O (`normalizeRoutine`): a closed record, bounded, with typed
 *   `ValidationError` / `InvalidIdError` / `InvalidScopeError` for bad data, even on a closed store.
 * - `put` upserts by `(scope, id)`; an update keeps the stored `createdAt` (slots do not re-fire).
 * - `list` reads one scope by id; `scan` reads every scope by `(scope, id)` for the host's tick
 *   (trusted host code only: a request's scope never reaches it).
 * - `eraseScope` removes the scope's routines (their goals are the tenant's content).
 */
export interface RoutineStore {
  put(routine: RoutineInput): Promise<RoutinePutResult>;
  get(scope: Scope, id: string): Promise<Routine | undefined>;
  remove(scope: Scope, id: string): Promise<boolean>;
  list(
    scope: Scope,
    query?: { readonly cursor?: string; readonly limit?: number },
  ): Promise<RoutinePage>;
  scan(query?: { readonly cursor?: string; readonly limit?: number }): Promise<RoutinePage>;
}

const FIELDS = [
  "scope",
  "id",
  "goal",
  "intent",
  "schedule",
  "profile",
  "cap",
  "destination",
  "catchUp",
  "execution",
  "enabled",
  "createdAt",
] as const;
/** A routine is small: a goal of 8,000 characters (up to 4 bytes each) and a dozen short fields. */
const LIMITS = Object.freeze({
  maxDepth: 4,
  maxNodes: 64,
  maxStringBytes: 32 * 1024,
  maxTotalBytes: 40 * 1024,
});
export const ROUTINE_LIMITS = Object.freeze({
  idChars: 100,
  goalChars: 8000,
  cronChars: 120,
  timeZoneChars: 64,
});
/** A control character other than tab and newline (goals are text a person could type). */
function hasControl(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a) || c === 0x7f) return true;
  }
  return false;
}

/** Whether the runtime's `Intl` knows `zone` as a time zone. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function validateRoutineId(value: unknown, field = "routine.id"): string {
  const id = validateId(field, value);
  if (id.length > ROUTINE_LIMITS.idChars)
    throw new ValidationError(
      field,
      "max_chars",
      `${field} must be at most ${ROUTINE_LIMITS.idChars} characters`,
    );
  return id;
}

function validateSchedule(value: unknown): RoutineSchedule {
  const s = closedObject("routine.schedule", value, ["cron", "timeZone"]);
  const { cron, timeZone } = s;
  if (
    typeof cron !== "string" ||
    cron.length < 1 ||
    cron.length > ROUTINE_LIMITS.cronChars ||
    !/^[\x20-\x7e]+$/.test(cron)
  ) {
    throw new ValidationError(
      "routine.schedule.cron",
      "cron_text",
      `cron must be 1-${ROUTINE_LIMITS.cronChars} printable ASCII characters`,
    );
  }
  if (
    typeof timeZone !== "string" ||
    timeZone.length < 1 ||
    timeZone.length > ROUTINE_LIMITS.timeZoneChars ||
    !/^[A-Za-z0-9_+\-/]+$/.test(timeZone) ||
    !isTimeZone(timeZone)
  ) {
    throw new ValidationError(
      "routine.schedule.timeZone",
      "time_zone",
      "timeZone must be an IANA time zone name",
    );
  }
  return Object.freeze({ cron, timeZone });
}

function validateGoal(value: unknown): string {
  if (
    typeof value !== "string" ||
    value.trim().length === 0 ||
    value.length > ROUTINE_LIMITS.goalChars ||
    hasControl(value)
  ) {
    throw new ValidationError(
      "routine.goal",
      "goal_text",
      `goal must be 1-${ROUTINE_LIMITS.goalChars} characters of text`,
    );
  }
  return value;
}

function validateCap(value: unknown): Routine["cap"] {
  try {
    const cap = normalizePerTurnCap(value);
    return Object.freeze({ usd: cap.usdMicros / 1_000_000, onExceeded: cap.onExceeded });
  } catch (error) {
    throw new ValidationError(
      "routine.cap",
      "cap",
      error instanceof Error ? error.message.replace("perTurnUsd", "cap") : "cap is not a cap",
    );
  }
}

function validateFlag(field: string, value: unknown, def: boolean): boolean {
  if (value === undefined) return def;
  if (typeof value !== "boolean")
    throw new ValidationError(field, "boolean", `${field} must be true or false`);
  return value;
}

/** The routine validated and frozen, with its scope's key; every store (and the runner) calls it before any I/O. */
export function normalizeRoutine(input: unknown): {
  readonly routine: Routine;
  readonly key: string;
} {
  // Read once through the bounded snapshot: a getter never runs, a Proxy, a cycle or an oversize record is refused.
  const r = closedObject("routine", snapshot(input, LIMITS), FIELDS);
  const { scope, key } = scopeKey(r.scope);
  const routine: Routine = Object.freeze({
    scope,
    id: validateRoutineId(r.id),
    goal: validateGoal(r.goal),
    intent: Object.freeze(normalizeIntent(r.intent, "routine.intent")),
    schedule: validateSchedule(r.schedule),
    ...(r.profile !== undefined ? { profile: validateId("routine.profile", r.profile) } : {}),
    cap: validateCap(r.cap),
    destination: validateId("routine.destination", r.destination),
    catchUp: validateFlag("routine.catchUp", r.catchUp, false),
    execution:
      r.execution === undefined
        ? "turn"
        : validateOneOf("routine.execution", r.execution, ROUTINE_EXECUTIONS),
    enabled: validateFlag("routine.enabled", r.enabled, true),
    createdAt: validateTime("routine.createdAt", r.createdAt),
  });
  return Object.freeze({ routine, key });
}

/** A routine's identity validated: its scope (and key) and id. */
export function normalizeRoutineRef(
  scope: unknown,
  id: unknown,
): { readonly scope: Scope; readonly key: string; readonly id: string } {
  const s = scopeKey(scope);
  return Object.freeze({ ...s, id: validateRoutineId(id, "routineId") });
}

export const ROUTINE_PAGE = Object.freeze({ def: 50, max: 100 });

/** A listing's page size and the decoded cursor: `[id]` in one scope, `[scopeKey, id]` across scopes. */
export function normalizeRoutineQuery(
  query: unknown,
  across: boolean,
): { readonly limit: number; readonly after?: readonly string[] } {
  const q = closedObject("query", query ?? {}, ["cursor", "limit"]);
  const limit = pageLimit(q.limit, ROUTINE_PAGE.def, ROUTINE_PAGE.max);
  const after = decodeCursor(q.cursor, across ? ["string", "string"] : ["string"]) as
    | readonly string[]
    | undefined;
  return after === undefined ? { limit } : { limit, after };
}

/** The cursor after `r` in one scope (`[id]`) or across scopes (`[scopeKey, id]`). */
export function routineCursorKey(r: Routine, across: boolean): readonly string[] {
  return across ? [`${r.scope.org}/${r.scope.uid}`, r.id] : [r.id];
}

export function routineCursor(r: Routine, across: boolean): string {
  return encodeCursor(routineCursorKey(r, across));
}

/** What a put of `incoming` over `stored` becomes: the stored `createdAt` is kept. */
export function routineUpdate(stored: Routine | undefined, incoming: Routine): RoutinePutResult {
  if (stored === undefined) return Object.freeze({ status: "created", routine: incoming });
  const next = Object.freeze({ ...incoming, createdAt: stored.createdAt });
  return Object.freeze({
    status: routineText(next) === routineText(stored) ? "unchanged" : "updated",
    routine: next,
  });
}

/** The stored JSON of a routine (everything but the scope, which its row keys), version 1. */
export function routineText(r: Routine): string {
  const { scope: _s, ...rest } = r;
  return JSON.stringify({ v: 1, ...rest });
}

/** A routine read back from its row's JSON and its scope. */
export function routineFromText(scope: Scope, text: string): Routine {
  const parsed = JSON.parse(text) as { v?: unknown } & Omit<Routine, "scope">;
  if (parsed.v !== 1)
    throw new ValidationError("record", "record_version", "a routine row has an unknown version");
  const { v: _v, ...rest } = parsed;
  return normalizeRoutine({ scope, ...rest }).routine;
}
