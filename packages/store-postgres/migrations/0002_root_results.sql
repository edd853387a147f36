-- alma:target root
-- Conversation roots' final results: a physically separate schema, reached only through the root
-- pool, whose search_path names this schema alone. Same shape as the step `results` table.

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
