-- alma:target main
-- Late authoritative usage (seed 001, "UsageInbox"): one row per (scope, call, source), evidence for
-- the operator only. No statement that settles, reserves or counts reads this table. Erasure keeps
-- a row with the session id replaced by its mark (in the column and in the record), as receipts.
-- Version 0004 is another step's number: `migrate` applies every step not yet recorded, so this
-- step depends on none but 0001.

CREATE TABLE usage_inbox (
  scope text COLLATE "C" NOT NULL,
  operation_id text COLLATE "C" NOT NULL,
  source text COLLATE "C" NOT NULL CHECK (source IN ('stream_after_timeout', 'stream_after_deadline', 'stream_after_cancel', 'stream_after_fence', 'provider_report')),
  session_id text COLLATE "C" NOT NULL,
  observed_at bigint NOT NULL,
  record text COLLATE "C" NOT NULL,
  PRIMARY KEY (scope, operation_id, source)
);
CREATE INDEX usage_inbox_order ON usage_inbox (scope, observed_at, operation_id, source);
CREATE INDEX usage_inbox_session ON usage_inbox (scope, session_id);
