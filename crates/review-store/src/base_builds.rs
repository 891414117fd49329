//! Base-branch builds: what the build and test commands did on a pull
//! request's base commit, kept so a busy repository runs them once per base
//! commit (issue 24).
//!
//! When a pull request's build fails, the gate runs the same commands on its
//! base commit before blaming the pull request. The result depends only on
//! the repository, the base commit and the commands (with their
//! environment), so it is keyed by those ([`BaseBuildKey`]) and never
//! updated: the first writer wins, a concurrent second one changes nothing.

use crate::dialect::{Dialect as _, Sql, dispatch, sqlite_now};
use crate::{Store, StoreError, check_name, from_database_integer, to_database_integer};

/// The most of a base build's output kept, in bytes.
const MAX_TAIL_BYTES: usize = 16 * 1024;

/// Which repository, base commit and commands.
#[derive(Debug, Clone, Copy)]
pub struct BaseBuildKey<'a> {
    /// The repository, `owner/name`.
    pub repository: &'a str,
    /// The base commit.
    pub base_sha: &'a str,
    /// A hash of the commands, in order, and their environment.
    pub commands_hash: &'a str,
}

/// What the commands did on a base commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseBuild {
    /// The first command that failed (0-based), `None` when all passed.
    pub failed_index: Option<u64>,
    /// That command, as run.
    pub failed_command: Option<String>,
    /// How it ended, in words ("exited with status 1").
    pub failed_end: Option<String>,
    /// The end of its output (at most 16 KiB kept).
    pub output_tail: Option<String>,
    /// How many bytes it printed in all.
    pub output_bytes: u64,
}

const SELECT: Sql = Sql::same(
    "SELECT failed_index, failed_command, failed_end, output_tail, output_bytes \
     FROM base_builds WHERE repository_id = $1 AND base_sha = $2 AND commands_hash = $3",
);
const INSERT: Sql = Sql {
    sqlite: concat!(
        "INSERT INTO base_builds (repository_id, base_sha, commands_hash, failed_index, ",
        "failed_command, failed_end, output_tail, output_bytes, created_at) ",
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ",
        sqlite_now!(),
        ") ON CONFLICT (repository_id, base_sha, commands_hash) DO NOTHING"
    ),
    postgres: "INSERT INTO base_builds (repository_id, base_sha, commands_hash, failed_index, \
               failed_command, failed_end, output_tail, output_bytes, created_at) \
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now()) \
               ON CONFLICT (repository_id, base_sha, commands_hash) DO NOTHING",
};

impl Store {
    /// The recorded base build for `key`, if any.
    pub async fn base_build(
        &self,
        key: &BaseBuildKey<'_>,
    ) -> Result<Option<BaseBuild>, StoreError> {
        check_key(key)?;
        let Some(repository_id) = self.existing_repository_id(key.repository).await? else {
            return Ok(None);
        };
        let operation = "reading a base-branch build";
        dispatch!(&self.backend, pool => {
            let row = sqlx::query(pool.pick(&SELECT))
                .bind(repository_id)
                .bind(key.base_sha)
                .bind(key.commands_hash)
                .fetch_optional(pool)
                .await
                .map_err(self.query_error(operation))?;
            row.map(|row| {
                use sqlx::Row as _;
                let failed_index: Option<i64> = row.try_get(0)?;
                Ok::<_, sqlx::Error>(BaseBuild {
                    failed_index: failed_index.map(from_database_integer).transpose()?,
                    failed_command: row.try_get(1)?,
                    failed_end: row.try_get(2)?,
                    output_tail: row.try_get(3)?,
                    output_bytes: from_database_integer(row.try_get(4)?)?,
                })
            })
            .transpose()
            .map_err(self.query_error(operation))
        })
    }

    /// Records `build` for `key` unless one is recorded already (the first
    /// one stays). NUL characters become U+FFFD; the output is cut to its
    /// last 16 KiB.
    pub async fn record_base_build(
        &self,
        key: &BaseBuildKey<'_>,
        build: &BaseBuild,
    ) -> Result<(), StoreError> {
        check_key(key)?;
        let repository_id = self.repository_id(key.repository).await?;
        let failed_index = build
            .failed_index
            .map(|index| to_database_integer(index, "failed command index"))
            .transpose()?;
        let output_bytes = to_database_integer(build.output_bytes, "output size")?;
        let text =
            |text: &Option<String>| text.as_deref().map(|text| text.replace('\0', "\u{FFFD}"));
        let output_tail = text(&build.output_tail).map(|tail| {
            let start = tail.ceil_char_boundary(tail.len().saturating_sub(MAX_TAIL_BYTES));
            tail[start..].to_owned()
        });
        let operation = "recording a base-branch build";
        dispatch!(&self.backend, pool => {
            sqlx::query(pool.pick(&INSERT))
                .bind(repository_id)
                .bind(key.base_sha)
                .bind(key.commands_hash)
                .bind(failed_index)
                .bind(text(&build.failed_command))
                .bind(text(&build.failed_end))
                .bind(output_tail)
                .bind(output_bytes)
                .execute(pool)
                .await
                .map_err(self.query_error(operation))?;
        });
        Ok(())
    }
}

fn check_key(key: &BaseBuildKey<'_>) -> Result<(), StoreError> {
    check_name("base commit", key.base_sha)?;
    check_name("commands hash", key.commands_hash)
}
