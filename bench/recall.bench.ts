// The recall benchmark (issue 18). Run: npm run bench:recall.
// Multi-session conversations the project writes (bench/recall/corpus.ts) run through the real
// runtime (`memory()`), the conversation runner and the loop: every telling turn's memory
// extraction is a governed call (the scripted model reports the corpus's facts for that message)
// written to the in-memory memory stores; every question turn recalls through `storeRecall`. From
// the bytes of each question's main request it reports recall@k of the needed facts (their current
// version), stale versions, cross-patient and above-sensitivity leaks (which must be 0), and the
// recalled tokens per turn from the recall trail. No timing is asserted; a leak exits 1.
import {
  MODEL_SPECIFICATION_VERSION,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
  type Scope,
  sensitivityRank,
} from "@alma-harness/core";
import { storeRecall } from "@alma-harness/memory";
import { inMemoryMemoryStores } from "@alma-harness/memory/testing";
import { RECALL_LABEL } from "@alma-harness/loop";
import { memory } from "@alma-harness/runtime";
import { benchConfig } from "./config.js";
import {
  type CorpusFact,
  factsByTag,
  PATIENTS,
  type Question,
  questions,
  tellingTurns,
} from "./recall/corpus.js";

const NOTHING = JSON.stringify({ episode: null, facts: [] });

/**
 * Answers "Noted." to a main step; to an extraction, what the corpus says the turn's message
 * tells (`extraction`, set before each turn: turns run one at a time), after checking that the
 * transcript it reads is that message.
 */
class CorpusModel implements ModelClient {
  readonly specificationVersion = MODEL_SPECIFICATION_VERSION;
  readonly id = "corpus";
  readonly provider = "bench";
  readonly mainRequests: ModelRequest[] = [];
  next: { readonly message: string; readonly answer: string } | undefined;
  validate(): void {}
  async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    let text = "Noted.";
    if (request.output?.name === "memory_extraction") {
      const block = request.messages[0]?.blocks[0];
      const person = (block?.type === "text" ? block.text : "")
        .split("\n")
        .find((l) => l.startsWith("Person: "));
      if (this.next && person !== `Person: ${this.next.message}`)
        throw new Error("the extraction read another message than the turn's");
      text = this.next?.answer ?? NOTHING;
    } else this.mainRequests.push(request);
    const usage = {
      inputTokens: Math.ceil(JSON.stringify(request.messages).length / 4),
      outputTokens: Math.ceil(text.length / 4),
    };
    yield { type: "text_delta", text };
    yield { type: "usage", evidence: { status: "known", usage } };
    yield { type: "response_completed", stopReason: "end_turn", text, toolCalls: [], usage };
  }
}

interface Row {
  readonly k: number;
  readonly kind: string;
  turns: number;
  needed: number;
  found: number;
  stale: number;
  crossPatient: number;
  aboveSensitivity: number;
  tokens: number[];
}

const LINE = /^- ([a-z][a-z0-9_.-]*) \(\d{4}-\d{2}-\d{2}\): .* #p(\d{2})v(\d+)$/;
const EPISODE = /^- \d{4}-\d{2}-\d{2}: .* #p(\d{2})s(\d+)/;

function recallBlock(request: ModelRequest | undefined): string {
  for (const b of request?.messages.at(-1)?.blocks ?? [])
    if (b.type === "text" && b.origin === "harness" && b.text.startsWith(RECALL_LABEL))
      return b.text;
  return "";
}

async function run(k: number, facts: Map<string, CorpusFact>, rows: Map<string, Row>) {
  const model = new CorpusModel();
  const mem = inMemoryMemoryStores();
  const base = benchConfig(model, [], 4);
  const rt = memory({
    ...base,
    policy: {
      resolve: () => ({ clientId: model.id, model: "m", maxOutputTokens: 512, cache: false }),
    },
    recall: { source: storeRecall(mem), facts: k, episodes: 2 },
    extraction: { tier: "fast", stores: mem },
  });
  let key = 0;
  const ask = (
    scope: Scope,
    session: string,
    input: string,
    sensitivity: Question["sensitivity"],
  ) =>
    rt.runner.runTurn({
      scope,
      sessionId: session,
      idempotencyKey: `k${key++}`,
      input,
      intent: { tier: "balanced", sensitivity },
    });
  for (const t of tellingTurns()) {
    model.next = {
      message: t.message,
      answer: JSON.stringify({
        episode: t.episode,
        facts: t.facts.map((f) => ({ key: f.key, text: f.text, confidence: 0.9 })),
      }),
    };
    const view = await ask(
      t.patient.scope,
      `p${t.patient.n}-s${t.session}`,
      t.message,
      t.sensitivity,
    );
    if (view.status !== "completed") throw new Error(`a telling turn ended ${view.status}`);
  }
  const current = new Map<string, number>();
  for (const f of facts.values())
    current.set(
      `${f.patient}:${f.key}`,
      Math.max(current.get(`${f.patient}:${f.key}`) ?? 0, f.version),
    );
  model.next = undefined;
  for (const q of questions()) {
    const before = model.mainRequests.length;
    const view = await ask(q.patient.scope, `p${q.patient.n}-s3`, q.text, q.sensitivity);
    if (view.status !== "completed") throw new Error(`a question ended ${view.status}`);
    const text = recallBlock(model.mainRequests[before]);
    const row = rows.get(`${k} ${q.kind}`) ?? {
      k,
      kind: q.kind,
      turns: 0,
      needed: 0,
      found: 0,
      stale: 0,
      crossPatient: 0,
      aboveSensitivity: 0,
      tokens: [],
    };
    rows.set(`${k} ${q.kind}`, row);
    row.turns++;
    measure(row, q, text, facts, current);
  }
  // Recalled tokens per turn, from the recall trail (every turn: telling and question).
  const tokens: Row = {
    k,
    kind: "tokens",
    turns: 0,
    needed: 0,
    found: 0,
    stale: 0,
    crossPatient: 0,
    aboveSensitivity: 0,
    tokens: [],
  };
  rows.set(`${k} tokens`, tokens);
  for (const p of PATIENTS) {
    let cursor: string | undefined;
    do {
      const page = await rt.runner.trails(p.scope, {
        trail: "recall",
        limit: 500,
        ...(cursor ? { cursor } : {}),
      });
      for (const r of page.items)
        if (r.trail === "recall") tokens.tokens.push(r.estimatedTokens ?? 0);
      cursor = page.nextCursor;
    } while (cursor);
  }
  await rt.close();
}

function measure(
  row: Row,
  q: Question,
  text: string,
  facts: Map<string, CorpusFact>,
  current: Map<string, number>,
) {
  const seen = new Set<string>();
  for (const line of text.split("\n")) {
    const m = LINE.exec(line);
    const e = EPISODE.exec(line);
    if (e && Number(e[1]) !== q.patient.n) row.crossPatient++;
    if (!m) continue;
    const fact = facts.get(`p${m[2]}v${m[3]}:${m[1]}`);
    if (!fact) throw new Error(`a recalled line names no corpus fact: ${line.slice(0, 40)}`);
    if (fact.patient !== q.patient.n) row.crossPatient++;
    else if (sensitivityRank(fact.sensitivity) > sensitivityRank(q.sensitivity))
      row.aboveSensitivity++;
    else if (fact.version !== current.get(`${fact.patient}:${fact.key}`)) row.stale++;
    else seen.add(fact.key);
  }
  for (const key of q.needs) {
    const version = current.get(`${q.patient.n}:${key}`);
    const stored = [...facts.values()].find(
      (f) => f.patient === q.patient.n && f.key === key && f.version === version,
    );
    // A needed fact above the question's sensitivity is not needed: recall must not give it.
    if (!stored || sensitivityRank(stored.sensitivity) > sensitivityRank(q.sensitivity)) continue;
    row.needed++;
    if (seen.has(key)) row.found++;
  }
}

const pct = (a: number, b: number) => (b === 0 ? "n/a" : `${((100 * a) / b).toFixed(1)}%`);
const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0
    ? 0
    : (s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number);
};

async function main() {
  const turns = tellingTurns();
  const facts = factsByTag(turns);
  const rows = new Map<string, Row>();
  for (const k of [1, 3, 8]) await run(k, facts, rows);
  const qs = questions();
  console.log(
    `${PATIENTS.length} patients in 3 clinics, ${turns.length} telling turns (2 sessions each), ${qs.length} question turns per k (of which ${qs.filter((q) => q.kind === "cross_patient").length} cross-patient probes); in-memory stores, lexical ranking`,
  );
  console.log(
    "| k (facts) | questions | turns | needed | recall@k | stale | cross-patient leaks | above-sensitivity leaks |",
  );
  console.log("|---:|---|---:|---:|---:|---:|---:|---:|");
  let leaks = 0;
  for (const row of rows.values()) {
    if (row.kind === "tokens") continue;
    leaks += row.crossPatient + row.aboveSensitivity;
    console.log(
      `| ${row.k} | ${row.kind} | ${row.turns} | ${row.needed} | ${pct(row.found, row.needed)} | ${row.stale} | ${row.crossPatient} | ${row.aboveSensitivity} |`,
    );
  }
  console.log("");
  console.log("| k (facts) | recall records | recalled tokens per turn: mean | p95 | max |");
  console.log("|---:|---:|---:|---:|---:|");
  for (const row of rows.values()) {
    if (row.kind !== "tokens") continue;
    const mean = row.tokens.reduce((a, b) => a + b, 0) / row.tokens.length;
    console.log(
      `| ${row.k} | ${row.tokens.length} | ${mean.toFixed(1)} | ${percentile(row.tokens, 95)} | ${Math.max(...row.tokens)} |`,
    );
  }
  if (leaks > 0) {
    console.error(`LEAKS: ${leaks}`);
    process.exit(1);
  }
}

void (main() as Promise<void>).catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
