-- alma:target main
-- The messages a parked (or checkpointed) turn recorded, stored once each (issue 25): the
-- continuation refers to them by digest, so a step boundary writes only what is new. Content, as
-- JSON text of record version `v`; the rows go with their turn. Depends on 0010.

CREATE TABLE parked_outputs (
  scope text COLLATE "C" NOT NULL,
  root_key text COLLATE "C" NOT NULL,
  digest text COLLATE "C" NOT NULL,
  v smallint NOT NULL,
  message text NOT NULL,
  PRIMARY KEY (scope, root_key, digest),
  FOREIGN KEY (scope, root_key) REFERENCES parked_turns (scope, root_key) ON DELETE CASCADE
);
