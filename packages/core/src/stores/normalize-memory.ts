import { InvalidIdError, ValidationError } from "../errors.js";
import { SENSITIVITIES, type Sensitivity, sensitivityRank } from "../routing.js";
import { type Scope, validateId } from "../scope.js";
import { type JsonObject, snapshot, utf8Length } from "../snapshot.js";
import type { Episode, MemoryErasureTarget, MemorySource, ProfileFact } from "./memory-records.js";
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
 * The rules every memory store (memory, SQLite, PostgreSQL) applies before any I/O, once, here:
 * closed records read through the bounded `snapshot` (a getter never runs, a Proxy or a cycle is
 * refused, an unknown field is a typed error naming the rule, never the value), ids of 1–128
 * printable ASCII characters, the fact key pattern, byte bounds on the texts, a confidence in 0..1
 * and the closed sensitivity union. It also owns what a word is for the full-text indexes
 * (`memoryTerms`, `memoryDocument`), so the three stores agree on what matches.
 */

export const MEMORY_LIMITS = Object.freeze({
  idChars: 128,
  summaryBytes: 4 * 1024,
  factBytes: 1024,
  queryBytes: 4 * 1024,
  searchLimit: 50,
  listDefault: 50,
  listMax: 100,
  /** Terms a query keeps (the first, in order): a query is ranked by at most this many words. */
  queryTerms: 32,
});

export const FACT_KEY = /^[a-z][a-z0-9_.-]{0,63}$/;

/** A record is small: ten fields, a source of three, one text of at most 4 KiB. */
const RECORD_LIMITS = Object.freeze({
  maxDepth: 3,
  maxNodes: 32,
  maxStringBytes: 4 * 1024,
  maxTotalBytes: 6 * 1024,
});
const QUERY_LIMITS = Object.freeze({
  maxDepth: 1,
  maxNodes: 8,
  maxStringBytes: 4 * 1024,
  maxTotalBytes: 5 * 1024,
});

const EPISODE_FIELDS = [
  "scope",
  "episodeId",
  "source",
  "sensitivity",
  "summary",
  "undelivered",
] as const;
const FACT_FIELDS = [
  "scope",
  "factId",
  "key",
  "text",
  "source",
  "sensitivity",
  "confidence",
] as const;
const SOURCE_FIELDS = ["sessionId", "turnId", "at"] as const;

/** An id of a memory record: the shared id rule (printable ASCII, no spaces), at most 128 characters. */
export function validateMemoryId(field: string, value: unknown): string {
  const id = validateId(field, value);
  if (id.length > MEMORY_LIMITS.idChars)
    throw new InvalidIdError(field, `must be at most ${MEMORY_LIMITS.idChars} characters`);
  return id;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A stored text: a string of 1..`max` UTF-8 bytes, well-formed (no lone surrogate), no NUL or other control character but tab and newlines. */
function validateText(field: string, value: unknown, max: number): string {
  if (typeof value !== "string")
    throw new ValidationError(field, "string", `${field} must be a string`);
  const bytes = utf8Length(value);
  if (bytes < 1 || bytes > max)
    throw new ValidationError(field, "text_bytes", `${field} must be 1-${max} bytes of UTF-8`);
  if (LONE_SURROGATE.test(value))
    throw new ValidationError(field, "well_formed", `${field} must be well-formed Unicode`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the rule is about control characters
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(value))
    throw new ValidationError(
      field,
      "control_character",
      `${field} must hold no control characters`,
    );
  return value;
}

function validateSensitivity(field: string, value: unknown): Sensitivity {
  return validateOneOf(field, value, SENSITIVITIES);
}

function normalizeSource(value: unknown): MemorySource {
  const s = closedObject("source", value, SOURCE_FIELDS);
  return Object.freeze({
    sessionId: validateId("source.sessionId", s.sessionId),
    turnId: validateId("source.turnId", s.turnId),
    at: validateTime("source.at", s.at),
  });
}

/** The snapshot of a record, then the closed field set (both before any read of a value). */
function readRecord(
  field: string,
  input: unknown,
  fields: readonly string[],
): Record<string, unknown> {
  if (input === null || typeof input !== "object" || Array.isArray(input))
    throw new ValidationError(field, "object", `${field} must be an object`);
  return closedObject(field, snapshot(input, RECORD_LIMITS) as JsonObject, fields);
}

/** An episode validated and frozen, with its scope's key. */
export function normalizeEpisode(input: unknown): {
  readonly episode: Episode;
  readonly key: string;
} {
  const e = readRecord("episode", input, EPISODE_FIELDS);
  const { scope, key } = scopeKey(e.scope);
  if (e.undelivered !== undefined && e.undelivered !== true)
    throw new ValidationError(
      "episode.undelivered",
      "true_or_absent",
      "undelivered is true or absent",
    );
  const episode: Episode = Object.freeze({
    scope,
    episodeId: validateMemoryId("episodeId", e.episodeId),
    source: normalizeSource(e.source),
    sensitivity: validateSensitivity("sensitivity", e.sensitivity),
    summary: validateText("summary", e.summary, MEMORY_LIMITS.summaryBytes),
    ...(e.undelivered === true ? { undelivered: true as const } : {}),
  });
  return Object.freeze({ episode, key });
}

/** A profile fact validated and frozen, with its scope's key. */
export function normalizeProfileFact(input: unknown): {
  readonly fact: ProfileFact;
  readonly key: string;
} {
  const f = readRecord("fact", input, FACT_FIELDS);
  const { scope, key } = scopeKey(f.scope);
  if (typeof f.key !== "string" || !FACT_KEY.test(f.key))
    throw new ValidationError("key", "fact_key", `key must match ${FACT_KEY}`);
  const c = f.confidence;
  if (typeof c !== "number" || !Number.isFinite(c) || c < 0 || c > 1)
    throw new ValidationError(
      "confidence",
      "confidence_0_1",
      "confidence must be a number from 0 to 1",
    );
  const fact: ProfileFact = Object.freeze({
    scope,
    factId: validateMemoryId("factId", f.factId),
    key: f.key,
    text: validateText("text", f.text, MEMORY_LIMITS.factBytes),
    source: normalizeSource(f.source),
    sensitivity: validateSensitivity("sensitivity", f.sensitivity),
    // -0 is 0 (the snapshot already made it so; kept explicit for the stored JSON).
    confidence: c === 0 ? 0 : c,
  });
  return Object.freeze({ fact, key });
}

/** A validated search: the scope's key, the query's terms (`memoryTerms`), the ceiling as a rank, the limit. */
export interface NormalizedMemorySearch {
  readonly scope: Scope;
  readonly key: string;
  readonly terms: readonly string[];
  readonly ceiling: Sensitivity;
  readonly ceilingRank: number;
  readonly limit: number;
}

export function normalizeMemorySearch(scope: unknown, query: unknown): NormalizedMemorySearch {
  const { scope: s, key } = scopeKey(scope);
  if (query === null || typeof query !== "object" || Array.isArray(query))
    throw new ValidationError("query", "object", "query must be an object");
  const q = closedObject("query", snapshot(query, QUERY_LIMITS) as JsonObject, [
    "text",
    "ceiling",
    "limit",
  ]);
  if (typeof q.text !== "string")
    throw new ValidationError("query.text", "string", "query text must be a string");
  const bytes = utf8Length(q.text);
  if (bytes < 1 || bytes > MEMORY_LIMITS.queryBytes)
    throw new ValidationError(
      "query.text",
      "text_bytes",
      `query text must be 1-${MEMORY_LIMITS.queryBytes} bytes of UTF-8`,
    );
  const ceiling = validateSensitivity("query.ceiling", q.ceiling);
  const l = q.limit;
  if (typeof l !== "number" || !Number.isSafeInteger(l) || l < 1 || l > MEMORY_LIMITS.searchLimit) {
    throw new ValidationError(
      "query.limit",
      "search_limit",
      `limit must be an integer from 1 to ${MEMORY_LIMITS.searchLimit}`,
    );
  }
  return Object.freeze({
    scope: s,
    key,
    terms: memoryTerms(q.text),
    ceiling,
    ceilingRank: sensitivityRank(ceiling),
    limit: l,
  });
}

/** A validated listing: newest first by `(source.at, id)`, the cursor the last item's key. */
export interface NormalizedMemoryList {
  readonly scope: Scope;
  readonly key: string;
  readonly sessionId?: string;
  readonly limit: number;
  /** Items strictly older than this `(at, id)`. */
  readonly before?: readonly [number, string];
}

export function normalizeMemoryList(scope: unknown, query: unknown = {}): NormalizedMemoryList {
  const { scope: s, key } = scopeKey(scope);
  const q = closedObject("query", query ?? {}, ["sessionId", "cursor", "limit"]);
  const limit = pageLimit(q.limit, MEMORY_LIMITS.listDefault, MEMORY_LIMITS.listMax);
  const before = decodeCursor(q.cursor, ["number", "string"]) as
    | readonly [number, string]
    | undefined;
  const sessionId = q.sessionId === undefined ? undefined : validateId("sessionId", q.sessionId);
  return Object.freeze({
    scope: s,
    key,
    limit,
    ...(sessionId !== undefined ? { sessionId } : {}),
    ...(before !== undefined ? { before } : {}),
  });
}

/** The listing's sort key of a record: `(source.at, id)`, newest first. */
export function memoryListKey(record: Episode | ProfileFact): readonly [number, string] {
  return [record.source.at, "episodeId" in record ? record.episodeId : record.factId];
}

export function memoryListCursor(record: Episode | ProfileFact): string {
  return encodeCursor(memoryListKey(record));
}

/** Whether `a` sorts before `b` in a listing (newer first: by `source.at`, then id, both descending). */
export function memoryNewer(a: readonly [number, string], b: readonly [number, string]): boolean {
  return a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);
}

export function normalizeMemoryTarget(
  target: unknown,
): MemoryErasureTarget & { readonly key: string } {
  const t = closedObject("target", target, ["scope", "sessionId"]);
  const { scope, key } = scopeKey(t.scope);
  return Object.freeze({
    scope,
    key,
    ...(t.sessionId === undefined ? {} : { sessionId: validateId("sessionId", t.sessionId) }),
  });
}

/** `remove(scope, factId)`'s arguments. */
export function normalizeFactRef(
  scope: unknown,
  factId: unknown,
): { readonly scope: Scope; readonly key: string; readonly factId: string } {
  const { scope: s, key } = scopeKey(scope);
  return Object.freeze({ scope: s, key, factId: validateMemoryId("factId", factId) });
}

/**
 * What a word is, for every memory store: a run of letters and digits of any script, lowercased
 * after NFKC. The full-text indexes (FTS5, `tsvector`) are fed `memoryDocument` and queried with
 * these terms only, so no character of a query ever reaches a query parser as syntax: quotes,
 * `*`, `NEAR`, `:`, `&|!` and the like are separators, never operators.
 */
export function memoryWords(text: string): string[] {
  return (
    text
      .toLowerCase()
      .normalize("NFKC")
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

/** A query's distinct terms in first-seen order, at most `MEMORY_LIMITS.queryTerms`. */
export function memoryTerms(text: string): string[] {
  return [...new Set(memoryWords(text))].slice(0, MEMORY_LIMITS.queryTerms);
}

/** A term matches a word it equals, or (a term of 4 characters or more) a word it begins. */
export const MEMORY_PREFIX_MIN = 4;

/** The text a store indexes for a record: its words joined by spaces (a fact's key words first). */
export function memoryDocument(record: Episode | ProfileFact): string {
  if ("summary" in record) return memoryWords(record.summary).join(" ");
  return memoryWords(`${record.key.replace(/[._-]/g, " ")} ${record.text}`).join(" ");
}

/** The stored JSON of a record (everything but the scope, which its row keys), version 1. */
export function memoryRecordText(record: Episode | ProfileFact): string {
  const { scope: _s, ...rest } = record;
  return JSON.stringify({ v: 1, ...rest });
}

export function episodeFromText(scope: Scope, text: string): Episode {
  return normalizeEpisode({ scope, ...versioned(text) }).episode;
}

export function factFromText(scope: Scope, text: string): ProfileFact {
  return normalizeProfileFact({ scope, ...versioned(text) }).fact;
}

function versioned(text: string): Record<string, unknown> {
  const parsed = JSON.parse(text) as { v?: unknown } & Record<string, unknown>;
  if (parsed.v !== 1)
    throw new ValidationError("record", "record_version", "a memory row has an unknown version");
  const { v: _v, ...rest } = parsed;
  return rest;
}
