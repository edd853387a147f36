import type { ConversationView } from "./views.js";
import { askTokenOf, recordDecision } from "./asks.js";
import type { ResolvedConfig } from "./config.js";
import { askViews, type ParkedAskView, parkingOf } from "./parking.js";
import { resumeDue, resumeParked } from "./resume.js";
import type { ConversationRunner } from "./runner.js";
import type { TurnDeps } from "./settle.js";

type ParkingApi = Pick<
  ConversationRunner,
  "resolveAsk" | "decideAsk" | "resume" | "askToken" | "parkedAsks" | "findAsk" | "resumeDue"
>;

/**
 * The runner's parked-turn methods (`asks: "park"`): decisions, resumes, the operator's listing;
 * `unit` runs a resume's writes as the store set groups a turn's.
 */
export function parkingApi(
  deps: TurnDeps,
  unit: (work: () => Promise<ConversationView>) => Promise<ConversationView>,
): ParkingApi {
  const { config } = deps;
  return {
    resolveAsk: async (request) => {
      const { result, turn } = await recordDecision(config, request);
      const view = await unit(() => resumeParked(deps, turn.scope, turn.rootKey));
      return { ...result, view };
    },
    decideAsk: async (request) => {
      const { result, turn } = await recordDecision(config, request);
      return { ...result, ready: turn.asks.every((a) => a.decision !== undefined) };
    },
    resume: (scope, rootKey) => unit(() => resumeParked(deps, scope, rootKey)),
    askToken: async (scope, askId) => {
      const turn = (await parkingOf(config)?.find(askId))?.find(
        (t) => t.scope.org === scope.org && t.scope.uid === scope.uid && t.state === "parked",
      );
      const ask = turn?.asks.find((a) => a.askId === askId && !a.decision);
      return turn && ask
        ? askTokenOf(config, turn.scope, { ...ask, expiresAt: turn.expiresAt })
        : undefined;
    },
    parkedAsks: (input) => parkedAsks(config, input),
    findAsk: (askId) => findAsk(config, askId),
    resumeDue: (scope) => resumeDue(deps, scope),
  };
}

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
