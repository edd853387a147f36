-- alma:target main
-- Every store but root results. `scope` holds `org/uid` (neither part can contain `/`); times are
-- epoch milliseconds from the caller; JSON columns are text written by the store with a record
-- version `v`, so equality is exact and old shapes can be upgraded on read.

CREATE TABLE admissions (
  scope text COLLATE "C" NOT NULL,
  admission_id text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  root_key text COLLATE "C" NOT NULL,
  kind text COLLATE "C" NOT NULL CHECK (kind IN ('turn', 'events')),
  state text COLLATE "C" NOT NULL CHECK (state IN ('active', 'uncertain', 'finished', 'released')),
  release_reason text CHECK (release_reason IN ('failed', 'expired')),
  created_at bigint NOT NULL,
  deadline_at bigint NOT NULL,
  PRIMARY KEY (scope, admission_id)
);
-- At most one holder per session: the database, not the caller, decides who is admitted.
CREATE UNIQUE INDEX admissions_holder ON admissions (scope, session_id) WHERE state IN ('active', 'uncertain');
CREATE INDEX admissions_expiry ON admissions (deadline_at) WHERE state IN ('active', 'uncertain');

CREATE TABLE sessions (
  scope text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  revision integer NOT NULL,
  view_offset integer NOT NULL,
  updated_at bigint NOT NULL,
  erased boolean NOT NULL DEFAULT false,
  PRIMARY KEY (scope, session_id)
);

CREATE TABLE messages (
  scope text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  position integer NOT NULL,
  event_id text COLLATE "C",
  v smallint NOT NULL,
  body text COLLATE "C" NOT NULL,
  PRIMARY KEY (scope, session_id, position)
);
CREATE UNIQUE INDEX messages_event ON messages (scope, session_id, event_id) WHERE event_id IS NOT NULL;

CREATE TABLE execution (
  scope text COLLATE "C" NOT NULL,
  operation_id text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  turn_id text COLLATE "C" NOT NULL,
  claim text COLLATE "C" NOT NULL,
  created_at bigint NOT NULL,
  deadline_at bigint NOT NULL,
  state text COLLATE "C" NOT NULL CHECK (state IN ('prepared', 'dispatching', 'received', 'settled', 'completed', 'not_dispatched', 'fenced')),
  fence_token integer NOT NULL,
  v smallint NOT NULL,
  evidence text,
  not_dispatched_cause text,
  settlement_id text,
  updated_at bigint NOT NULL,
  PRIMARY KEY (scope, operation_id)
);
CREATE INDEX execution_open ON execution (scope, created_at, operation_id) WHERE state NOT IN ('completed', 'not_dispatched');
CREATE INDEX execution_expiry ON execution (deadline_at) WHERE state IN ('prepared', 'dispatching');

-- Step results. Root results live in their own schema (0002), reached through their own pool.
CREATE TABLE results (
  scope text COLLATE "C" NOT NULL,
  result_id text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  binding text COLLATE "C" NOT NULL,
  sensitivity text COLLATE "C" NOT NULL,
  max_chars integer NOT NULL,
  expires_at bigint NOT NULL,
  created_at bigint NOT NULL,
  state text COLLATE "C" NOT NULL CHECK (state IN ('reserved', 'stored', 'erased', 'expired')),
  v smallint NOT NULL,
  envelope text,
  PRIMARY KEY (scope, result_id)
);
CREATE INDEX results_session ON results (scope, session_id);
CREATE INDEX results_expiry ON results (expires_at) WHERE state IN ('reserved', 'stored');

CREATE TABLE settlements (
  scope text COLLATE "C" NOT NULL,
  settlement_id text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  turn_id text COLLATE "C" NOT NULL,
  at bigint NOT NULL,
  v smallint NOT NULL,
  record text COLLATE "C" NOT NULL,
  PRIMARY KEY (scope, settlement_id)
);
CREATE INDEX settlements_order ON settlements (scope, at, settlement_id);

CREATE TABLE settlement_obligations (
  scope text COLLATE "C" NOT NULL,
  settlement_id text COLLATE "C" NOT NULL,
  consumer text COLLATE "C" NOT NULL,
  acknowledged boolean NOT NULL DEFAULT false,
  PRIMARY KEY (scope, consumer, settlement_id)
);

CREATE TABLE spend_sessions (
  scope text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  usd_micros bigint NOT NULL,
  PRIMARY KEY (scope, session_id)
);

CREATE TABLE spend_tenant_days (
  org text COLLATE "C" NOT NULL,
  day text COLLATE "C" NOT NULL,
  usd_micros bigint NOT NULL,
  PRIMARY KEY (org, day)
);

CREATE TABLE session_labels (
  scope text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  labels text,
  erased boolean NOT NULL DEFAULT false,
  PRIMARY KEY (scope, session_id)
);

CREATE TABLE sealed_label_scopes (
  scope text COLLATE "C" PRIMARY KEY
);

CREATE TABLE audit_events (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  scope text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  turn_id text COLLATE "C" NOT NULL,
  trail text COLLATE "C" NOT NULL,
  v smallint NOT NULL,
  event text COLLATE "C" NOT NULL
);
CREATE INDEX audit_scope ON audit_events (scope, seq);
