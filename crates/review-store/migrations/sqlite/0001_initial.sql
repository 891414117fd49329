-- review-bot store, version 1 (SQLite).
--
-- Timestamps are INTEGER microseconds since the Unix epoch, UTC. Pull request
-- numbers and GitHub comment ids are INTEGER (64-bit).

-- Repository names, stored once; every other table refers to them by id.
CREATE TABLE repositories (
    id INTEGER PRIMARY KEY,
    -- The name as first seen, e.g. "octo-org/widgets".
    name TEXT NOT NULL,
    -- The ASCII-lowercased name: GitHub repository names are case-insensitive.
    name_key TEXT NOT NULL UNIQUE
);

-- Seed 002: which pull request review comments the bot has replied to.
CREATE TABLE comment_replies (
    repository_id INTEGER NOT NULL REFERENCES repositories (id),
    comment_id INTEGER NOT NULL,
    pull_request INTEGER NOT NULL,
    replied_at INTEGER NOT NULL,
    PRIMARY KEY (repository_id, comment_id)
) WITHOUT ROWID;

-- Covers `replied_comment_ids` (the primary key columns ride along).
CREATE INDEX comment_replies_by_pull_request ON comment_replies (repository_id, pull_request);

-- One row per pipeline run.
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    -- The id in the run's `review::` footers, when the run has one.
    review_id TEXT,
    repository_id INTEGER NOT NULL REFERENCES repositories (id),
    pull_request INTEGER NOT NULL,
    head_sha TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('review', 'write', 'ci')),
    -- NULL while the run is in progress (or if it died without finishing).
    outcome TEXT,
    started_at INTEGER NOT NULL,
    finished_at INTEGER
);

CREATE INDEX runs_by_pull_request ON runs (repository_id, pull_request, started_at);
CREATE INDEX runs_by_review_id ON runs (review_id);

-- One row per agent pass (Claude Code session) of a run.
CREATE TABLE agent_passes (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    -- 1, 2, … in the order the passes were recorded.
    ordinal INTEGER NOT NULL,
    name TEXT NOT NULL,
    transcript_path TEXT,
    session_id TEXT,
    turns INTEGER,
    cost_usd REAL,
    PRIMARY KEY (run_id, ordinal)
) WITHOUT ROWID;

-- Inline comments already posted, so a later cycle skips an unchanged finding.
CREATE TABLE posted_comments (
    repository_id INTEGER NOT NULL REFERENCES repositories (id),
    pull_request INTEGER NOT NULL,
    -- SHA-256 of path, line and normalised body.
    fingerprint BLOB NOT NULL,
    path TEXT NOT NULL,
    line INTEGER NOT NULL,
    review_id TEXT,
    posted_at INTEGER NOT NULL,
    PRIMARY KEY (repository_id, pull_request, fingerprint)
) WITHOUT ROWID;

-- Job leases: at most one live holder per pull request. Rows are never deleted;
-- a released lease is expired, so `generation` only ever grows (a fencing token).
CREATE TABLE job_leases (
    repository_id INTEGER NOT NULL REFERENCES repositories (id),
    pull_request INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('review', 'write', 'ci')),
    holder TEXT NOT NULL,
    generation INTEGER NOT NULL,
    acquired_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (repository_id, pull_request)
);
