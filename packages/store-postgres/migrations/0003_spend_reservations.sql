-- alma:target main
-- Money held by calls in flight (spec: caps under concurrency). A row is written in the claim's own
-- transaction and deleted in the transaction that ends the hold: the settlement of the call's
-- receipt, `cancelPrepared`, or the sweep turning the record `not_dispatched`. A `fenced` call
-- (it may have been sent) keeps its row, which stops counting once `expires_at` is not after the
-- reading claim's `created_at`. The two indexes serve the two sums a reserving claim reads: its
-- session's and its org's day, both restricted to rows still held.

CREATE TABLE spend_reservations (
  scope text COLLATE "C" NOT NULL,
  operation_id text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  org text COLLATE "C" NOT NULL,
  day text COLLATE "C" NOT NULL,
  usd_micros bigint NOT NULL CHECK (usd_micros >= 0),
  expires_at bigint NOT NULL,
  PRIMARY KEY (scope, operation_id)
);
CREATE INDEX spend_reservations_session ON spend_reservations (scope, session_id, expires_at) INCLUDE (usd_micros);
CREATE INDEX spend_reservations_day ON spend_reservations (org, day, expires_at) INCLUDE (usd_micros);
