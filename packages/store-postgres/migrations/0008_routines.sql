-- alma:target main
-- Routines and their runs (@alma-harness/schedule). A routine's record holds its goal (the scope's
-- content: `eraseScope` removes it); a run is content-free but for its session id, which erasure
-- replaces by the session's mark. A slot's run is one row, so a claim is an insert that at most
-- one transaction wins, or a `submitted` to `running` update under the row's lock.
-- Versions 0006 and 0007 are other steps' numbers: `migrate` applies every step not yet recorded,
-- so this step depends on none but 0001.

CREATE TABLE routines (
  scope text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  record text NOT NULL,
  PRIMARY KEY (scope, id)
);

CREATE TABLE routine_runs (
  scope text COLLATE "C" NOT NULL,
  routine_id text COLLATE "C" NOT NULL,
  slot bigint NOT NULL,
  state text NOT NULL CHECK (state IN ('running', 'submitted', 'completed', 'failed', 'missed', 'reconciliation_required')),
  session_id text COLLATE "C" NOT NULL,
  claimed_at bigint,
  record text NOT NULL,
  PRIMARY KEY (scope, routine_id, slot)
);
CREATE INDEX routine_runs_order ON routine_runs (scope, slot DESC, routine_id);
CREATE INDEX routine_runs_running ON routine_runs (state, claimed_at);
CREATE INDEX routine_runs_session ON routine_runs (scope, session_id);
