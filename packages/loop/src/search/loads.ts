import {
  type Msg,
  SEARCH_TOOLS_NAME,
  type ToolDefinition,
  type ToolSpec,
} from "@alma-harness/core";
import type { Grant } from "../grant.js";
import type { TurnState } from "../state.js";
import {
  catalogOf,
  DEFAULT_SEARCH_LIMIT,
  MAX_SEARCH_LIMIT,
  type ToolCatalog,
} from "./tool-search.js";

/**
 * Deferred tools and what is loaded. A tool registered `deferred: true` is not advertised until a
 * `search_tools` result loads it. A load is the `loads` field of that result block, so it lasts
 * while the conversation's view shows the block (history from the last rotation, plus this
 * turn), and it counts only within each turn's own grant. While the grant defers any tool, every
 * main step advertises `search_tools`, right after the non-deferred tools, then the loaded tools
 * in load order: loading appends to the list, so the cached prefix holds.
 */

export const MAX_QUERY_CHARS = 1000;
export const MAX_NAMES = 64;

/** What one grant's search needs; computed once per grant, the catalog only when a search runs. */
interface GrantSearch {
  readonly deferred: readonly ToolDefinition[];
  readonly spec: ToolSpec | undefined;
  catalog: ToolCatalog | undefined;
  /** The deferred definitions, with the engine's spec map they were read from. */
  deferredSpecs?: {
    readonly from: ReadonlyMap<string, ToolSpec>;
    readonly list: readonly ToolSpec[];
  };
}

const byGrant = new WeakMap<readonly ToolDefinition[], GrantSearch>();
/** Catalogs by the grant's names, per engine, so a profile's catalog is built once, not every turn. */
const catalogs = new WeakMap<ReadonlyMap<string, ToolSpec>, Map<string, ToolCatalog>>();
const CATALOGS_PER_ENGINE = 16;

function grantSearch(grant: readonly ToolDefinition[]): GrantSearch {
  let found = byGrant.get(grant);
  if (!found) {
    const deferred = grant.filter((t) => t.deferred);
    found = {
      deferred,
      spec: deferred.length > 0 ? searchToolSpec(deferred) : undefined,
      catalog: undefined,
    };
    byGrant.set(grant, found);
  }
  return found;
}

/** Whether this turn's grant defers any tool (and so offers `search_tools` to its main steps). */
function defersAny(grant: Grant): boolean {
  return grantSearch(grant.tools).spec !== undefined;
}

/** The search's catalog of the turn's whole grant (every granted tool weighs the words; only deferred ones load). */
export function grantCatalog(grant: Grant): ToolCatalog {
  const found = grantSearch(grant.tools);
  if (found.catalog) return found.catalog;
  let perEngine = catalogs.get(grant.specs);
  if (!perEngine) {
    perEngine = new Map();
    catalogs.set(grant.specs, perEngine);
  }
  const key = grant.tools.map((t) => t.name).join("\n");
  let catalog = perEngine.get(key);
  if (!catalog) {
    catalog = catalogOf(grant.tools);
    if (perEngine.size >= CATALOGS_PER_ENGINE)
      perEngine.delete(perEngine.keys().next().value as string);
    perEngine.set(key, catalog);
  }
  found.catalog = catalog;
  return catalog;
}

function searchToolSpec(deferred: readonly ToolDefinition[]): ToolSpec {
  const names = deferred.map((t) => t.name).join(", ");
  return Object.freeze({
    name: SEARCH_TOOLS_NAME,
    description:
      "Loads deferred tools so you can call them. Pass `names` to load exactly those tools (a full name, or the part after the " +
      "last `__` when only one tool has it), or `query` to find tools by what they do; `limit` caps how many a query loads " +
      `(default ${DEFAULT_SEARCH_LIMIT}). The result says what you can call now. Deferred tools: ${names}.`,
    inputSchema: SEARCH_INPUT_SCHEMA,
  });
}

export const SEARCH_INPUT_SCHEMA = Object.freeze({
  type: "object",
  properties: Object.freeze({
    query: Object.freeze({
      type: "string",
      minLength: 1,
      maxLength: MAX_QUERY_CHARS,
      description: "Words for what you need to do; a tool's name in it loads that tool.",
    }),
    names: Object.freeze({
      type: "array",
      maxItems: MAX_NAMES,
      items: Object.freeze({ type: "string", minLength: 1, maxLength: 200 }),
      description: "Tools to load exactly, by full name or unique short name.",
    }),
    limit: Object.freeze({
      type: "integer",
      minimum: 1,
      maximum: MAX_SEARCH_LIMIT,
      description: "At most this many tools load for the query.",
    }),
  }),
  additionalProperties: false,
});

/** Where the loaded-set scan of a turn's view stands: the view only grows within a turn. */
interface ViewScan {
  scanned: number;
  readonly names: Set<string>;
}

const scans = new WeakMap<TurnState, ViewScan>();

/** A rotation replaced the turn's view: the next read scans it afresh. */
export function forgetViewScan(state: TurnState): void {
  scans.delete(state);
}

function collect(message: Msg, into: Set<string>): void {
  if (message.role !== "user") return;
  for (const block of message.blocks) {
    if (
      block.type === "tool_result" &&
      block.name === SEARCH_TOOLS_NAME &&
      Array.isArray(block.loads)
    ) {
      for (const name of block.loads) if (typeof name === "string") into.add(name);
    }
  }
}

/** Every tool name a `search_tools` result in the view loaded (grant not applied). */
function loadedInView(state: TurnState): ReadonlySet<string> {
  let scan = scans.get(state);
  if (!scan) {
    scan = { scanned: 0, names: new Set() };
    for (const message of state.log.history) collect(message, scan.names);
    scans.set(state, scan);
  }
  for (; scan.scanned < state.log.added.length; scan.scanned++)
    collect(state.log.added[scan.scanned] as Msg, scan.names);
  return scan.names;
}

/** Whether a granted tool is callable without a search: not deferred, or loaded in the view. */
export function callableNow(grant: Grant, state: TurnState): (name: string) => boolean {
  const loaded = loadedInView(state);
  return (name) => {
    const tool = grant.byName.get(name);
    return tool !== undefined && (!tool.deferred || loaded.has(name));
  };
}

/** `search_tools` as this grant advertises it (its description names every deferred tool), or undefined when nothing is deferred. */
export function searchSpecOf(grant: readonly ToolDefinition[]): ToolSpec | undefined {
  return grantSearch(grant).spec;
}

/** Whether a call is the engine's own search, offered to this turn's main steps. */
export function isSearchCall(grant: Grant, call: { readonly name: string }): boolean {
  return call.name === SEARCH_TOOLS_NAME && defersAny(grant);
}

/**
 * A main request's function tools: `base` (the grant's non-deferred tools, then `search_tools`
 * while the grant defers any), then the loaded deferred tools in load order — the order their
 * loads appear in the view, so a new load is appended after everything already advertised and a
 * tool keeps its place while its load lasts (spec: stable-tool-advertisement). A rotation keeps
 * what the new view still loads, in the same relative order. `base` is returned as is when nothing
 * is loaded.
 */
export function withLoaded(
  grant: Grant,
  state: TurnState,
  base: readonly ToolSpec[],
): readonly ToolSpec[] {
  const found = grantSearch(grant.tools);
  if (found.deferred.length === 0) return base;
  const loaded = loadedInView(state);
  if (loaded.size === 0) return base;
  const out = [...base];
  // A Set iterates in insertion order: the order of first appearance in the view.
  for (const name of loaded) {
    if (grant.byName.get(name)?.deferred !== true) continue;
    const spec = grant.specs.get(name);
    if (spec) out.push(spec);
  }
  return out.length === base.length ? base : out;
}

/** The grant's deferred tools' definitions, in registration order (for an adapter that loads natively). */
export function deferredSpecsOf(grant: Grant): readonly ToolSpec[] {
  const found = grantSearch(grant.tools);
  if (found.deferredSpecs?.from === grant.specs) return found.deferredSpecs.list;
  const specs: ToolSpec[] = [];
  for (const tool of found.deferred) {
    const spec = grant.specs.get(tool.name);
    if (spec) specs.push(spec);
  }
  const list = Object.freeze(specs);
  found.deferredSpecs = { from: grant.specs, list };
  return list;
}
