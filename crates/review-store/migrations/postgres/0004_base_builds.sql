-- review-bot store, version 4 (PostgreSQL): base-branch builds.
--
-- When a pull request's build fails, the same commands are run on its base
-- commit before the pull request is blamed. The result is kept here per
-- repository, base commit and commands (a hash of the commands and their
-- environment), so a busy repository pays for each base commit once, across
-- restarts and replicas. A row is never updated: a base commit's build does
-- not change.
CREATE TABLE base_builds (
    repository_id BIGINT NOT NULL REFERENCES repositories (id),
    base_sha TEXT NOT NULL,
    -- SHA-256 (hex) of the commands, in order, and their environment.
    commands_hash TEXT NOT NULL,
    -- The first command that failed on the base (0-based), NULL when all passed.
    failed_index BIGINT,
    -- That command, how it ended, and the end of its output (at most 16 KiB).
    failed_command TEXT,
    failed_end TEXT,
    output_tail TEXT,
    output_bytes BIGINT NOT NULL DEFAULT 0,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (repository_id, base_sha, commands_hash)
);
