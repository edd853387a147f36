-- alma:target main
-- Turns parked on permission asks (issue 25), one row per scope and root: the asks (content-free)
-- and the continuation (the session batch: content) as JSON text of record version `v`. A park
-- and a claim move the turn's admission in the same transaction, under the parked row's lock.
-- `parked_asks` locates an ask id (`find` across scopes, `decide` within one); its rows go with
-- their turn. Depends on none but 0001.

CREATE TABLE parked_turns (
  scope text COLLATE "C" NOT NULL,
  root_key text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  admission_id text COLLATE "C" NOT NULL,
  state text NOT NULL CHECK (state IN ('parked', 'resuming')),
  v smallint NOT NULL,
  asks text NOT NULL,
  continuation text NOT NULL,
  parked_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  runs integer NOT NULL,
  PRIMARY KEY (scope, root_key)
);
CREATE INDEX parked_turns_session ON parked_turns (scope, session_id);
CREATE INDEX parked_turns_order ON parked_turns (scope, parked_at, root_key);
CREATE INDEX parked_turns_expiry ON parked_turns (expires_at, root_key, scope);

CREATE TABLE parked_asks (
  ask_id text COLLATE "C" NOT NULL,
  scope text COLLATE "C" NOT NULL,
  root_key text COLLATE "C" NOT NULL,
  PRIMARY KEY (scope, root_key, ask_id),
  FOREIGN KEY (scope, root_key) REFERENCES parked_turns (scope, root_key) ON DELETE CASCADE
);
CREATE INDEX parked_asks_id ON parked_asks (ask_id, scope);
