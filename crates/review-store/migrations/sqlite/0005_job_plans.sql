-- review-bot store, version 5 (SQLite): job plans, what a job has decided
-- to write and not yet finished writing.
--
-- A review saves its plan (the review, replies and label) before its first
-- write, under its review id; the write flow saves, before it pushes a fix,
-- what must follow the push (the replies, each with its thread:: id) under
-- the commit it is about to push. A job killed part-way is finished by
-- whichever step takes the pull request next -- after a restart with an empty
-- work directory, or on another replica -- from this row, without a second
-- agent run, push or reply. The row is removed when the plan is done (or the
-- push did not happen).
CREATE TABLE job_plans (
    repository_id INTEGER NOT NULL REFERENCES repositories (id),
    pull_request INTEGER NOT NULL,
    -- 'review' or 'write' (review_store::JobKind).
    job TEXT NOT NULL,
    -- The review id (review) or the pushed commit (write).
    plan_id TEXT NOT NULL,
    -- The plan, a JSON document the job owns (with its own version).
    plan TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (repository_id, job, plan_id)
);
CREATE INDEX job_plans_by_pull_request ON job_plans (repository_id, pull_request, job);
