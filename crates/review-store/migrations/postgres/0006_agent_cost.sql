-- review-bot store, version 6 (PostgreSQL): what the agent cost, summed and
-- capped (issue 28 item 5).
--
-- Every agent pass now records how long it ran and when it was recorded, so
-- the store can sum a pull request's cost over all its runs and a day's cost
-- (UTC) per repository and overall without asking GitHub. Passes recorded
-- before this version have no `recorded_at`: their run's `started_at` is
-- their day.
ALTER TABLE agent_passes ADD COLUMN duration_ms BIGINT;
ALTER TABLE agent_passes ADD COLUMN recorded_at TIMESTAMPTZ;
CREATE INDEX agent_passes_by_recorded_at ON agent_passes (recorded_at);
CREATE INDEX runs_by_started_at ON runs (started_at);

-- What the bot already told a pull request about its cost caps (the day cap's
-- wait, once per pull request and day), so a job held back at every poll
-- writes to GitHub once, not at every poll.
CREATE TABLE cost_notices (
    repository_id BIGINT NOT NULL REFERENCES repositories (id),
    pull_request BIGINT NOT NULL,
    -- e.g. 'day-cap:2026-11-26'.
    notice TEXT NOT NULL,
    noted_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (repository_id, pull_request, notice)
);
