-- alma:target main
-- An operator's scope fence (spec: scope-fence): `target` is `org/uid`, or `org/*` for the whole
-- org (`*` is no valid uid). Every write fenced on an admission (session append, journal claim,
-- final-result put) reads it after taking its admission `FOR SHARE`, and `fenceScope` locks the
-- scope's holding admissions `FOR UPDATE` after inserting it: a write either commits before the
-- fence returns or sees it. It holds no session id and no content; an erasure leaves it.

CREATE TABLE scope_fences (
  target text COLLATE "C" PRIMARY KEY,
  org text COLLATE "C" NOT NULL,
  reason text NOT NULL CHECK (reason IN ('suspended', 'erasure', 'operator')),
  fenced_at bigint NOT NULL
);
CREATE INDEX scope_fences_org ON scope_fences (org);
