import type { ToolDefinition, ToolSpec } from "@alma-harness/core";

/**
 * What one turn may run, fixed when it starts: its granted tools (a profile, else every
 * registered tool) with the engine's compiled specs. A delegate's grant is narrowed from its
 * caller's; nothing the model writes widens one.
 */
export interface Grant {
  /** The granted tools, in registration order (frozen: the per-grant caches key on it). */
  readonly tools: readonly ToolDefinition[];
  readonly byName: ReadonlyMap<string, ToolDefinition>;
  /** The engine's compiled tool specs, by name, compiled once at registration. */
  readonly specs: ReadonlyMap<string, ToolSpec>;
  /** Every registered tool by name: a trail names only these (or the engine's own search). */
  readonly registered: ReadonlyMap<string, ToolDefinition>;
}

/** A turn's grant from the registry and a profile's names (absent: every registered tool). */
export function grantOf(
  registry: {
    readonly tools: ReadonlyMap<string, ToolDefinition>;
    readonly toolOrder: readonly ToolDefinition[];
    readonly specs: ReadonlyMap<string, ToolSpec>;
  },
  names: readonly string[] | undefined,
): Grant {
  if (names === undefined) {
    return {
      tools: registry.toolOrder,
      byName: registry.tools,
      specs: registry.specs,
      registered: registry.tools,
    };
  }
  const allowed = new Set(names);
  const tools = Object.freeze(registry.toolOrder.filter((t) => allowed.has(t.name)));
  return {
    tools,
    byName: new Map(tools.map((t) => [t.name, t])),
    specs: registry.specs,
    registered: registry.tools,
  };
}
