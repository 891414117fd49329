-- review-bot store, version 2 (PostgreSQL): idempotent run history.
--
-- A run is named by a key its caller chooses, so starting it again (a retried
-- pipeline step) finds the same run instead of adding another. Runs recorded
-- before this version have no key.
ALTER TABLE runs ADD COLUMN run_key TEXT;
CREATE UNIQUE INDEX runs_by_key ON runs (run_key);

-- A pass is named within its run: recording it again updates it in place. Passes
-- that already share a name in one run keep their data under a numbered name.
UPDATE agent_passes SET name = name || ' #' || ordinal
WHERE EXISTS (
    SELECT 1 FROM agent_passes AS earlier
    WHERE earlier.run_id = agent_passes.run_id
      AND earlier.name = agent_passes.name
      AND earlier.ordinal < agent_passes.ordinal
);
CREATE UNIQUE INDEX agent_passes_by_name ON agent_passes (run_id, name);
