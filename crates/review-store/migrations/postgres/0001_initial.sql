-- review-bot store, version 1 (PostgreSQL).
--
-- Every integer is BIGINT (Rust `i64`). Columns of `comment_replies` are ordered
-- widest first so its rows carry no alignment padding.

-- Repository names, stored once; every other table refers to them by id.
CREATE TABLE repositories (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The name as first seen, e.g. "octo-org/widgets".
    name TEXT NOT NULL,
    -- The ASCII-lowercased name: GitHub repository names are case-insensitive.
    name_key TEXT NOT NULL UNIQUE
);

-- Seed 002: which pull request review comments the bot has replied to.
CREATE TABLE comment_replies (
    comment_id BIGINT NOT NULL,
    replied_at TIMESTAMPTZ NOT NULL,
    pull_request BIGINT NOT NULL,
    repository_id BIGINT NOT NULL REFERENCES repositories (id),
    PRIMARY KEY (repository_id, comment_id)
);

CREATE INDEX comment_replies_by_pull_request ON comment_replies (repository_id, pull_request);

-- One row per pipeline run.
CREATE TABLE runs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The id in the run's `review::` footers, when the run has one.
    review_id TEXT,
    repository_id BIGINT NOT NULL REFERENCES repositories (id),
    pull_request BIGINT NOT NULL,
    head_sha TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('review', 'write', 'ci')),
    -- NULL while the run is in progress (or if it died without finishing).
    outcome TEXT,
    started_at TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ
);

CREATE INDEX runs_by_pull_request ON runs (repository_id, pull_request, started_at);
CREATE INDEX runs_by_review_id ON runs (review_id);

-- One row per agent pass (Claude Code session) of a run.
CREATE TABLE agent_passes (
    run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    -- 1, 2, … in the order the passes were recorded.
    ordinal BIGINT NOT NULL,
    name TEXT NOT NULL,
    transcript_path TEXT,
    session_id TEXT,
    turns BIGINT,
    cost_usd DOUBLE PRECISION,
    PRIMARY KEY (run_id, ordinal)
);

-- Inline comments already posted, so a later cycle skips an unchanged finding.
CREATE TABLE posted_comments (
    repository_id BIGINT NOT NULL REFERENCES repositories (id),
    pull_request BIGINT NOT NULL,
    -- SHA-256 of path, line and normalised body.
    fingerprint BYTEA NOT NULL,
    path TEXT NOT NULL,
    line BIGINT NOT NULL,
    review_id TEXT,
    posted_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (repository_id, pull_request, fingerprint)
);

-- Job leases: at most one live holder per pull request. Rows are never deleted;
-- a released lease is expired, so `generation` only ever grows (a fencing token).
CREATE TABLE job_leases (
    repository_id BIGINT NOT NULL REFERENCES repositories (id),
    pull_request BIGINT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('review', 'write', 'ci')),
    holder TEXT NOT NULL,
    generation BIGINT NOT NULL,
    acquired_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (repository_id, pull_request)
);
