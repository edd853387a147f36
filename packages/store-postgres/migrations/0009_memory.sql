-- alma:target main
-- Memory (issue 18): episodes and profile facts, one row each (the record's JSON, version 1), with
-- `doc`, the record's words (core's `memoryDocument`) as a `tsvector` of the `simple` configuration:
-- language-neutral (no stemming, no stop words), so a clinic's Portuguese, Spanish or English is
-- matched the same way and the query side (core's `memoryTerms`, fed to `to_tsquery` as plain
-- terms) agrees with the stored side. `sensitivity` is `sensitivityRank` (0 public .. 3 restricted).
-- Versions 0006-0008 are other steps' numbers: `migrate` applies every step not yet recorded, so
-- this step depends on none but 0001.

CREATE TABLE memory_episodes (
  scope text COLLATE "C" NOT NULL,
  episode_id text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  at bigint NOT NULL,
  sensitivity smallint NOT NULL CHECK (sensitivity BETWEEN 0 AND 3),
  record text COLLATE "C" NOT NULL,
  doc tsvector NOT NULL,
  PRIMARY KEY (scope, episode_id)
);
CREATE INDEX memory_episodes_order ON memory_episodes (scope, at, episode_id);
CREATE INDEX memory_episodes_session ON memory_episodes (scope, session_id);
CREATE INDEX memory_episodes_doc ON memory_episodes USING gin (doc);

CREATE TABLE memory_facts (
  scope text COLLATE "C" NOT NULL,
  fact_id text COLLATE "C" NOT NULL,
  fact_key text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  at bigint NOT NULL,
  sensitivity smallint NOT NULL CHECK (sensitivity BETWEEN 0 AND 3),
  record text COLLATE "C" NOT NULL,
  doc tsvector NOT NULL,
  PRIMARY KEY (scope, fact_id)
);
CREATE INDEX memory_facts_order ON memory_facts (scope, at, fact_id);
CREATE INDEX memory_facts_key ON memory_facts (scope, fact_key, at, fact_id);
CREATE INDEX memory_facts_session ON memory_facts (scope, session_id);
CREATE INDEX memory_facts_doc ON memory_facts USING gin (doc);
