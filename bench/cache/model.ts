// A model of a provider's prompt cache, as the Anthropic prompt-caching page describes it
// (shared/reference/provider-wire.md §1.8): the prompt is a sequence of blocks (tools → system →
// messages); a breakpoint caches the prefix up to and including its block, for 5 minutes or 1 hour;
// a request reads the longest live prefix found at a breakpoint or up to 20 blocks before one; the
// breakpoints past it are written (billed by TTL), those whose prefix is under the minimum are
// not; a hit refreshes the entry's TTL at no cost. Bench-only: never production code.
import { createHash } from "node:crypto";

export type Ttl = "5m" | "1h";

/** Where a block sits in the prompt, to say where a prefix broke. */
export type Region = "tools" | "system" | "messages";

export interface PromptBlock {
  readonly region: Region;
  /** The block's canonical text (what the provider would hash), without its cache marker. */
  readonly text: string;
  readonly tokens: number;
  readonly marker?: Ttl;
}

export interface CacheUsage {
  readonly input: number;
  readonly read: number;
  readonly write5m: number;
  readonly write1h: number;
  readonly total: number;
  /** The region of the first block that differs from the session's previous request, before its last breakpoint. */
  readonly brokeAt?: Region;
}

const TTL_MS: Record<Ttl, number> = { "5m": 300_000, "1h": 3_600_000 };
const LOOKBACK = 20;

/** Tokens of a text, the usual estimate of four characters per token. */
export const tokensOf = (text: string): number => Math.max(1, Math.ceil(text.length / 4));

export class PromptCacheModel {
  readonly #entries = new Map<string, { expiresAt: number; ttl: Ttl }>();
  /** The previous request's cumulative hashes and last breakpoint, per cache key. */
  readonly #previous = new Map<string, { hashes: readonly string[]; lastMarker: number }>();

  constructor(readonly minimumTokens: number) {}

  /** Accounts one request at `now`; `key` separates sessions only for the break diagnosis (the cache itself is shared, as the provider's is per organization). */
  account(key: string, blocks: readonly PromptBlock[], now: number): CacheUsage {
    const hashes: string[] = [];
    const cumulative: number[] = [];
    let hash = createHash("sha256");
    let sum = 0;
    for (const block of blocks) {
      hash = hash.copy().update(`\u0000${block.region}\u0000${block.text}`);
      hashes.push(hash.copy().digest("base64"));
      sum += block.tokens;
      cumulative.push(sum);
    }
    const markers = blocks.flatMap((b, i) => (b.marker ? [i] : []));
    const live = (i: number) => {
      const entry = this.#entries.get(hashes[i] as string);
      return entry !== undefined && entry.expiresAt >= now;
    };
    let hit = -1;
    for (const m of markers) {
      for (let j = m; j >= Math.max(0, m - LOOKBACK); j--) {
        if (live(j)) {
          hit = Math.max(hit, j);
          break;
        }
      }
    }
    const read = hit >= 0 ? (cumulative[hit] as number) : 0;
    let covered = read;
    let write5m = 0;
    let write1h = 0;
    for (const m of markers) {
      const ttl = blocks[m]?.marker as Ttl;
      const key = hashes[m] as string;
      if (m <= hit) {
        // Inside the read prefix: the entry is refreshed (or kept) at no cost.
        this.#entries.set(key, { expiresAt: now + TTL_MS[ttl], ttl });
        continue;
      }
      const upTo = cumulative[m] as number;
      if (upTo < this.minimumTokens) continue;
      const tokens = upTo - covered;
      if (ttl === "1h") write1h += tokens;
      else write5m += tokens;
      covered = upTo;
      this.#entries.set(key, { expiresAt: now + TTL_MS[ttl], ttl });
    }
    if (hit >= 0) {
      const entry = this.#entries.get(hashes[hit] as string);
      if (entry) entry.expiresAt = now + TTL_MS[entry.ttl];
    }
    const brokeAt = this.#diagnose(key, hashes, blocks);
    this.#previous.set(key, { hashes, lastMarker: markers.at(-1) ?? -1 });
    return {
      input: sum - read - write5m - write1h,
      read,
      write5m,
      write1h,
      total: sum,
      ...(brokeAt ? { brokeAt } : {}),
    };
  }

  #diagnose(
    key: string,
    hashes: readonly string[],
    blocks: readonly PromptBlock[],
  ): Region | undefined {
    const prev = this.#previous.get(key);
    if (!prev || prev.lastMarker < 0) return undefined;
    for (let i = 0; i <= prev.lastMarker; i++) {
      if (prev.hashes[i] !== hashes[i]) return blocks[i]?.region ?? "messages";
    }
    return undefined;
  }
}

/** The model checks itself before a bench trusts it: each rule at a small, known prompt. */
export function selfCheck(): void {
  const fail = (what: string) => {
    throw new Error(`cache model self-check: ${what}`);
  };
  const block = (text: string, region: Region, marker?: Ttl): PromptBlock => ({
    region,
    text,
    tokens: 1000,
    ...(marker ? { marker } : {}),
  });
  const m = new PromptCacheModel(1500);
  const a = [block("tools", "tools"), block("sys", "system", "1h"), block("u1", "messages", "5m")];
  const first = m.account("s", a, 0);
  if (first.write1h !== 2000 || first.write5m !== 1000 || first.read !== 0 || first.input !== 0)
    fail("first request writes each breakpoint by its TTL");
  const second = m.account(
    "s",
    [...a.slice(0, 2), block("u1", "messages"), block("u2", "messages", "5m")],
    60_000,
  );
  if (second.read !== 3000 || second.write5m !== 1000 || second.brokeAt !== undefined)
    fail("a grown prompt reads through the looked-back entry and writes its tail");
  const cold = m.account("s", [block("other-tools", "tools"), ...a.slice(1)], 120_000);
  if (cold.read !== 0 || cold.brokeAt !== "tools")
    fail("a changed tools block breaks the prefix at the tools");
  const small = new PromptCacheModel(5000).account("t", a, 0);
  if (small.write5m + small.write1h !== 0 || small.input !== 3000)
    fail("under the minimum nothing is written");
  const expired = new PromptCacheModel(0);
  expired.account("e", [block("x", "system", "5m")], 0);
  if (expired.account("e", [block("x", "system", "5m")], 300_001).read !== 0)
    fail("a 5-minute entry expires after five minutes");
  if (expired.account("e", [block("x", "system", "5m")], 600_000).read !== 1000)
    fail("an entry read within its TTL hits");
}
