import type { McpHub } from "@alma-harness/mcp";
import type { Clock, RoutingIntent } from "@alma-harness/core";
import type { Runtime } from "@alma-harness/runtime";
import type { ClinicDesk } from "../agent/clinics.js";
import type { HostSecrets } from "../config/secrets.js";
import type { ModelSetup } from "../models/select.js";
import type { PermissionDesk } from "../permissions.js";
import type { HostRoutines } from "../routines/nightly.js";
import type { StoreInfo } from "../runtime.js";
import type { LoopBudget } from "../loop-budget.js";
import type { Shutdown } from "../shutdown.js";
import type { TurnLimit } from "../turn-limit.js";
import type { Directory, LiveTurns } from "../turns.js";

export interface HttpSettings {
  /** Largest JSON body, in bytes. */
  readonly bodyLimit: number;
  /** How long a JSON turn request waits for the turn before answering 202, unless `Prefer` says otherwise. */
  readonly waitMs: number;
  /** The most `Prefer: wait=N` may ask, on a turn request or a turn read (default 60 s). */
  readonly maxWaitMs: number;
  /** SSE keepalive interval. */
  readonly pingMs: number;
  /** The built console (index.html and assets/). */
  readonly publicDir: string;
}

/** Everything the HTTP routes use: the runtime and the host's own parts around it. */
export interface HostContext {
  readonly runtime: Runtime;
  readonly turns: LiveTurns;
  readonly asks: PermissionDesk;
  readonly directory: Directory;
  readonly desk: ClinicDesk;
  readonly models: ModelSetup;
  readonly store: StoreInfo;
  readonly secrets: HostSecrets;
  readonly caps: { readonly perTurnUsd: number; readonly perClinicDayUsd: number };
  /** The intent every patient chat runs at (the host's choice, never the client's). */
  readonly intent: RoutingIntent;
  readonly clock: Clock;
  readonly http: HttpSettings;
  /** Whether each incoming message is classified by the triage single call before its turn (`agent/triage.ts`). */
  readonly triage: boolean;
  /** Stops admitting on shutdown, and carries the signal every turn runs under. */
  readonly shutdown: Shutdown;
  /** How many turns each tenant runs at once here; a turn over it is refused 429 before any model call. */
  readonly turnLimit: TurnLimit;
  /** The event loop's fair share: requests and turn starts wait their turn in it. */
  readonly loop: LoopBudget;
  /** The AI SDK UI message stream (`/v1/ui/chat`): the tools whose asks the person in the chat decides. */
  readonly ui: { readonly approvals: ReadonlySet<string> };
  /** The routines on a clock (the nightly clinic summaries) and the staff inbox they deliver to. */
  readonly routines: HostRoutines;
  /** The MCP servers' sessions and tools, when the configuration file names servers. */
  readonly mcp?: McpHub;
}
