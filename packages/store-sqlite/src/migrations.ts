/**
 * Versioned schema steps, applied in order on open, each in its own transaction and recorded in
 * `schema_version`. A step is never edited once released: add the next one instead. `scope` columns
 * hold `org/uid` (neither part can contain `/`); JSON columns carry a record version `v`.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** The main database: everything but root results. */
export const MAIN_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "stores",
    sql: `
CREATE TABLE admissions (
  scope TEXT NOT NULL,
  admission_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  root_key TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('turn', 'events')),
  state TEXT NOT NULL CHECK (state IN ('active', 'uncertain', 'finished', 'released')),
  release_reason TEXT CHECK (release_reason IN ('failed', 'expired')),
  created_at INTEGER NOT NULL,
  deadline_at INTEGER NOT NULL,
  PRIMARY KEY (scope, admission_id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX admissions_holder ON admissions (scope, session_id) WHERE state IN ('active', 'uncertain');
CREATE INDEX admissions_expiry ON admissions (deadline_at) WHERE state IN ('active', 'uncertain');

CREATE TABLE sessions (
  scope TEXT NOT NULL,
  session_id TEXT NOT NULL,
  revision INTEGER NOT NULL,
  view_offset INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  erased INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (scope, session_id)
) WITHOUT ROWID;

CREATE TABLE messages (
  scope TEXT NOT NULL,
  session_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  event_id TEXT,
  v INTEGER NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (scope, session_id, position)
) WITHOUT ROWID;
CREATE UNIQUE INDEX messages_event ON messages (scope, session_id, event_id) WHERE event_id IS NOT NULL;

CREATE TABLE execution (
  scope TEXT NOT NULL,
  operation_id TEXT NOT NULL,
  claim TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  deadline_at INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('prepared', 'dispatching', 'received', 'settled', 'completed', 'not_dispatched', 'fenced')),
  fence_token INTEGER NOT NULL,
  v INTEGER NOT NULL,
  evidence TEXT,
  not_dispatched_cause TEXT,
  settlement_id TEXT,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (scope, operation_id)
) WITHOUT ROWID;
CREATE INDEX execution_open ON execution (scope, created_at, operation_id) WHERE state NOT IN ('completed', 'not_dispatched');
CREATE INDEX execution_expiry ON execution (deadline_at) WHERE state IN ('prepared', 'dispatching');

CREATE TABLE results (
  scope TEXT NOT NULL,
  result_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  binding TEXT NOT NULL,
  sensitivity TEXT NOT NULL,
  max_chars INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('reserved', 'stored', 'erased', 'expired')),
  v INTEGER NOT NULL,
  envelope TEXT,
  PRIMARY KEY (scope, result_id)
) WITHOUT ROWID;
CREATE INDEX results_session ON results (scope, session_id);
CREATE INDEX results_expiry ON results (expires_at) WHERE state IN ('reserved', 'stored');

CREATE TABLE settlements (
  scope TEXT NOT NULL,
  settlement_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  at INTEGER NOT NULL,
  v INTEGER NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (scope, settlement_id)
) WITHOUT ROWID;
CREATE INDEX settlements_order ON settlements (scope, at, settlement_id);

CREATE TABLE settlement_obligations (
  scope TEXT NOT NULL,
  settlement_id TEXT NOT NULL,
  consumer TEXT NOT NULL,
  acknowledged INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (scope, consumer, settlement_id)
) WITHOUT ROWID;

CREATE TABLE spend_sessions (
  scope TEXT NOT NULL,
  session_id TEXT NOT NULL,
  usd_micros INTEGER NOT NULL,
  PRIMARY KEY (scope, session_id)
) WITHOUT ROWID;

CREATE TABLE spend_tenant_days (
  org TEXT NOT NULL,
  day TEXT NOT NULL,
  usd_micros INTEGER NOT NULL,
  PRIMARY KEY (org, day)
) WITHOUT ROWID;

CREATE TABLE session_labels (
  scope TEXT NOT NULL,
  session_id TEXT NOT NULL,
  labels TEXT,
  erased INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (scope, session_id)
) WITHOUT ROWID;

CREATE TABLE sealed_label_scopes (
  scope TEXT PRIMARY KEY
) WITHOUT ROWID;

CREATE TABLE audit_events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  scope TEXT NOT NULL,
  session_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  trail TEXT NOT NULL,
  v INTEGER NOT NULL,
  event TEXT NOT NULL
);
CREATE INDEX audit_scope ON audit_events (scope, seq);
`,
  },
  {
    version: 2,
    name: "spend reservations",
    sql: `
CREATE TABLE spend_reservations (
  scope TEXT NOT NULL,
  operation_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  org TEXT NOT NULL,
  day TEXT NOT NULL,
  usd_micros INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (scope, operation_id)
) WITHOUT ROWID;
CREATE INDEX spend_reservations_session ON spend_reservations (scope, session_id, expires_at);
CREATE INDEX spend_reservations_day ON spend_reservations (org, day, expires_at);
`,
  },
  {
    version: 3,
    name: "scope fences",
    // An operator's fence (spec: scope-fence): `target` is `org/uid` or `org/*` for the whole org.
    // It holds no session id and no content; an erasure leaves it (a fence is often set for one).
    sql: `
CREATE TABLE scope_fences (
  target TEXT NOT NULL PRIMARY KEY,
  org TEXT NOT NULL,
  reason TEXT NOT NULL CHECK (reason IN ('suspended', 'erasure', 'operator')),
  fenced_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX scope_fences_org ON scope_fences (org);
`,
  },
  {
    // `migrate` applies every step not yet recorded, in order: this step depends on no other.
    version: 4,
    name: "usage inbox",
    sql: `
CREATE TABLE usage_inbox (
  scope TEXT NOT NULL,
  operation_id TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('stream_after_timeout', 'stream_after_deadline', 'stream_after_cancel', 'stream_after_fence', 'provider_report')),
  session_id TEXT NOT NULL,
  observed_at INTEGER NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (scope, operation_id, source)
) WITHOUT ROWID;
CREATE INDEX usage_inbox_order ON usage_inbox (scope, observed_at, operation_id, source);
CREATE INDEX usage_inbox_session ON usage_inbox (scope, session_id);
`,
  },
  {
    version: 6,
    name: "model jobs",
    sql: `
CREATE TABLE model_jobs (
  scope TEXT NOT NULL,
  job_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('claimed', 'submitting', 'submitted', 'collected', 'cancelled')),
  transport_id TEXT NOT NULL,
  batch_id TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  submitting_at INTEGER,
  PRIMARY KEY (scope, job_id)
) WITHOUT ROWID;
CREATE INDEX model_jobs_order ON model_jobs (scope, created_at, job_id);
CREATE TABLE model_job_items (
  scope TEXT NOT NULL,
  job_id TEXT NOT NULL,
  ordinal INTEGER NOT NULL,
  custom_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  record TEXT NOT NULL,
  settlement_id TEXT,
  outcome TEXT CHECK (outcome IN ('succeeded', 'errored', 'canceled', 'expired')),
  PRIMARY KEY (scope, job_id, custom_id)
) WITHOUT ROWID;
CREATE INDEX model_job_items_session ON model_job_items (scope, session_id);
`,
  },
  {
    // Routines and their runs (@alma-harness/schedule). Versions 5 and 6 are other steps' numbers;
    // \`migrate\` applies every step not yet recorded, so this one depends on none but 1.
    version: 7,
    name: "routines",
    sql: `
CREATE TABLE routines (
  scope TEXT NOT NULL,
  id TEXT NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (scope, id)
) WITHOUT ROWID;
CREATE TABLE routine_runs (
  scope TEXT NOT NULL,
  routine_id TEXT NOT NULL,
  slot INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('running', 'submitted', 'completed', 'failed', 'missed', 'reconciliation_required')),
  session_id TEXT NOT NULL,
  claimed_at INTEGER,
  record TEXT NOT NULL,
  PRIMARY KEY (scope, routine_id, slot)
) WITHOUT ROWID;
CREATE INDEX routine_runs_order ON routine_runs (scope, slot DESC, routine_id);
CREATE INDEX routine_runs_running ON routine_runs (state, claimed_at);
CREATE INDEX routine_runs_session ON routine_runs (scope, session_id);
`,
  },
  {
    // Memory (issue 18): episodes and profile facts, each with a contentless FTS5 index (no copy of
    // the text in the index; `secure-delete` so a deleted record's terms leave the pages). The
    // index holds core's `memoryDocument` of the record; `sensitivity` is `sensitivityRank`.
    version: 8,
    name: "memory",
    sql: `
CREATE TABLE memory_episodes (
  rid INTEGER PRIMARY KEY,
  scope TEXT NOT NULL,
  episode_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  at INTEGER NOT NULL,
  sensitivity INTEGER NOT NULL CHECK (sensitivity BETWEEN 0 AND 3),
  record TEXT NOT NULL,
  UNIQUE (scope, episode_id)
);
CREATE INDEX memory_episodes_order ON memory_episodes (scope, at, episode_id);
CREATE INDEX memory_episodes_session ON memory_episodes (scope, session_id);
CREATE VIRTUAL TABLE memory_episodes_fts USING fts5(doc, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 0');
INSERT INTO memory_episodes_fts (memory_episodes_fts, rank) VALUES ('secure-delete', 1);
CREATE TABLE memory_facts (
  rid INTEGER PRIMARY KEY,
  scope TEXT NOT NULL,
  fact_id TEXT NOT NULL,
  fact_key TEXT NOT NULL,
  session_id TEXT NOT NULL,
  at INTEGER NOT NULL,
  sensitivity INTEGER NOT NULL CHECK (sensitivity BETWEEN 0 AND 3),
  record TEXT NOT NULL,
  UNIQUE (scope, fact_id)
);
CREATE INDEX memory_facts_order ON memory_facts (scope, at, fact_id);
CREATE INDEX memory_facts_key ON memory_facts (scope, fact_key, at, fact_id);
CREATE INDEX memory_facts_session ON memory_facts (scope, session_id);
CREATE VIRTUAL TABLE memory_facts_fts USING fts5(doc, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 0');
INSERT INTO memory_facts_fts (memory_facts_fts, rank) VALUES ('secure-delete', 1);
`,
  },
  {
    // Turns parked on permission asks (issue 25), one row per scope and root: the asks (content-free)
    // and the continuation (the session batch: content) as JSON text of format `v`. `parked_asks`
    // locates an ask id (`find` across scopes, `decide` within one) and goes with its turn.
    version: 9,
    name: "parked turns",
    sql: `
CREATE TABLE parked_turns (
  scope TEXT NOT NULL,
  root_key TEXT NOT NULL,
  session_id TEXT NOT NULL,
  admission_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('parked', 'resuming')),
  v INTEGER NOT NULL,
  asks TEXT NOT NULL,
  continuation TEXT NOT NULL,
  parked_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  runs INTEGER NOT NULL,
  PRIMARY KEY (scope, root_key)
) WITHOUT ROWID;
CREATE INDEX parked_turns_session ON parked_turns (scope, session_id);
CREATE INDEX parked_turns_order ON parked_turns (scope, parked_at, root_key);
CREATE INDEX parked_turns_expiry ON parked_turns (expires_at, root_key, scope);
CREATE TABLE parked_asks (
  ask_id TEXT NOT NULL,
  scope TEXT NOT NULL,
  root_key TEXT NOT NULL,
  PRIMARY KEY (scope, root_key, ask_id),
  FOREIGN KEY (scope, root_key) REFERENCES parked_turns (scope, root_key) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX parked_asks_id ON parked_asks (ask_id, scope);
`,
  },
  {
    // The messages a parked (or checkpointed) turn recorded, stored once each (issue 25): the
    // continuation refers to them by digest, so a step boundary writes only what is new. Content;
    // they go with their turn.
    version: 10,
    name: "parked turn outputs",
    sql: `
CREATE TABLE parked_outputs (
  scope TEXT NOT NULL,
  root_key TEXT NOT NULL,
  digest TEXT NOT NULL,
  v INTEGER NOT NULL,
  message TEXT NOT NULL,
  PRIMARY KEY (scope, root_key, digest),
  FOREIGN KEY (scope, root_key) REFERENCES parked_turns (scope, root_key) ON DELETE CASCADE
) WITHOUT ROWID;
`,
  },
];

/**
 * The root-results database, attached under the schema name `root`: a physically separate file, so
 * a step-result query can never reach a final view (and the two can be backed up or erased apart).
 */
export const ROOT_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "root results",
    sql: `
CREATE TABLE root.results (
  scope TEXT NOT NULL,
  result_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  binding TEXT NOT NULL,
  sensitivity TEXT NOT NULL,
  max_chars INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('reserved', 'stored', 'erased', 'expired')),
  v INTEGER NOT NULL,
  envelope TEXT,
  PRIMARY KEY (scope, result_id)
) WITHOUT ROWID;
CREATE INDEX root.results_session ON results (scope, session_id);
CREATE INDEX root.results_expiry ON results (expires_at) WHERE state IN ('reserved', 'stored');
`,
  },
];
