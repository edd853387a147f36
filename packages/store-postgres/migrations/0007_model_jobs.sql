-- alma:target main
-- Provider batch jobs (spec: model-jobs, `@alma-harness/batch`): one row per job, one per item.
-- Content-free: ids, states, the items' claims (as JSON) and their settlements. Erasure keeps an
-- item with its session id replaced by the mark (in the column and in the record), as receipts.
-- Versions 0006 and below may be other steps' numbers: `migrate` applies every step not yet
-- recorded, so this step depends on none but 0001.

CREATE TABLE model_jobs (
  scope text COLLATE "C" NOT NULL,
  job_id text COLLATE "C" NOT NULL,
  state text COLLATE "C" NOT NULL CHECK (state IN ('claimed', 'submitting', 'submitted', 'collected', 'cancelled')),
  transport_id text COLLATE "C" NOT NULL,
  batch_id text COLLATE "C",
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  submitting_at bigint,
  PRIMARY KEY (scope, job_id)
);
CREATE INDEX model_jobs_order ON model_jobs (scope, created_at, job_id);
CREATE TABLE model_job_items (
  scope text COLLATE "C" NOT NULL,
  job_id text COLLATE "C" NOT NULL,
  ordinal integer NOT NULL,
  custom_id text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  record text COLLATE "C" NOT NULL,
  settlement_id text COLLATE "C",
  outcome text COLLATE "C" CHECK (outcome IN ('succeeded', 'errored', 'canceled', 'expired')),
  PRIMARY KEY (scope, job_id, custom_id)
);
CREATE INDEX model_job_items_session ON model_job_items (scope, session_id);
