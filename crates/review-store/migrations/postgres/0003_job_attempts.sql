-- review-bot store, version 3 (PostgreSQL): job attempts.
--
-- A job that fails is retried after a backoff, and after `agent.max_attempts`
-- failures on the same head commit its pull request is handed to a human. The
-- count is kept here, not in memory, so a restart or another replica carries
-- on from it. A new head commit starts afresh: it has a row of its own.

-- One row per job (pull request and kind) and head commit that has failed since
-- it last completed.
CREATE TABLE job_attempts (
    repository_id BIGINT NOT NULL REFERENCES repositories (id),
    pull_request BIGINT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('review', 'write', 'ci')),
    head_sha TEXT NOT NULL,
    -- Failures in a row on this head commit.
    failures BIGINT NOT NULL,
    -- The latest failure's message, trimmed to 4 KiB.
    last_error TEXT,
    -- When the next attempt is due; NULL when there is no backoff.
    retry_at TIMESTAMPTZ,
    -- When the pull request was handed to a human for these failures.
    handed_over_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (repository_id, pull_request, kind, head_sha)
);

-- Covers `job_attempts_backing_off` (the metrics gauge).
CREATE INDEX job_attempts_backing_off ON job_attempts (retry_at) WHERE handed_over_at IS NULL;
