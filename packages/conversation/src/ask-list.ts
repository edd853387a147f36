import type { ResolvedConfig } from "./config.js";
import { askViews, type ParkedAskView, parkingOf } from "./parking.js";

/** The undecided asks of an org's (or a scope's) parked turns, each turn read whole for its calls. */
export async function parkedAsks(
  config: ResolvedConfig,
  input: { readonly org: string; readonly uid?: string; readonly limit?: number },
): Promise<readonly ParkedAskView[]> {
  const parked = parkingOf(config);
  if (!parked) return [];
  const out: ParkedAskView[] = [];
  for (const summary of await parked.list(input)) {
    const turn = await parked.get(summary.scope, summary.rootKey);
    if (turn) out.push(...askViews(turn));
  }
  return out;
}

/** One undecided ask by id, across scopes. */
export async function findAsk(
  config: ResolvedConfig,
  askId: string,
): Promise<ParkedAskView | undefined> {
  const parked = parkingOf(config);
  if (!parked) return undefined;
  for (const summary of await parked.find(askId)) {
    const turn = await parked.get(summary.scope, summary.rootKey);
    const view = turn && askViews(turn).find((a) => a.askId === askId);
    if (view) return view;
  }
  return undefined;
}
