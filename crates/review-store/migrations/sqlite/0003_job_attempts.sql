-- review-bot store, version 3 (SQLite): job attempts.
--
-- A job that fails is retried after a backoff, and after `agent.max_attempts`
-- failures on the same head commit its pull request is handed to a human. The
-- count is kept here, not in memory, so a restart or another replica carries
-- on from it. A new head commit starts afresh: it has a row of its own.

-- One row per job (pull request and kind) and head commit that has failed since
-- it last completed. A rowid table: `last_error` (up to 4 KiB) makes rows too
-- wide for WITHOUT ROWID to pay.
CREATE TABLE job_attempts (
    repository_id INTEGER NOT NULL REFERENCES repositories (id),
    pull_request INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('review', 'write', 'ci')),
    head_sha TEXT NOT NULL,
    -- Failures in a row on this head commit.
    failures INTEGER NOT NULL,
    -- The latest failure's message, trimmed to 4 KiB.
    last_error TEXT,
    -- When the next attempt is due; NULL when there is no backoff.
    retry_at INTEGER,
    -- When the pull request was handed to a human for these failures.
    handed_over_at INTEGER,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (repository_id, pull_request, kind, head_sha)
);

-- Covers `job_attempts_backing_off` (the metrics gauge).
CREATE INDEX job_attempts_backing_off ON job_attempts (retry_at) WHERE handed_over_at IS NULL;
