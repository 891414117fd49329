//! Reply tracking (seed 002): which pull request comments the bot has answered,
//! scoped per repository, so a re-run never replies twice.
//!
//! Comment ids are GitHub's numeric ids (64-bit integers), not strings as in the
//! seed: they are what GitHub's API returns, they index and store compactly,
//! and an id that is not a number cannot name a GitHub comment. The seed's JSON
//! file format keeps them as strings; [`reply_file`](crate::reply_file) converts.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use sqlx::Row as _;

use crate::dialect::{Dialect as _, Sql, TimeColumn as _, dispatch, sqlite_now};
use crate::repositories::repository_key;
use crate::{
    DatabaseLocation, SCHEMA_VERSION, Store, StoreError, from_database_integer, to_database_integer,
};

/// A GitHub pull request review comment id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommentId(pub u64);

impl fmt::Display for CommentId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(formatter)
    }
}

impl FromStr for CommentId {
    type Err = std::num::ParseIntError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        text.parse().map(Self)
    }
}

/// One recorded reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentReply {
    /// The comment that was replied to.
    pub comment_id: CommentId,
    /// The pull request the comment is on.
    pub pull_request: u64,
    /// The repository, `owner/name`.
    pub repository: String,
    /// When the reply was recorded.
    pub replied_at: DateTime<Utc>,
}

/// What [`Store::import_replies`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportSummary {
    /// Replies newly recorded.
    pub imported: u64,
    /// Replies the store already had (nothing changed for them).
    pub already_present: u64,
    /// Records that repeated an earlier record of the same input (same
    /// repository and comment); the earliest `replied_at` is the one kept.
    pub duplicates_in_input: u64,
}

/// The answer to [`Store::health_check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    /// Where the database is.
    pub location: DatabaseLocation,
    /// `"sqlite"` or `"postgres"`.
    pub backend: &'static str,
    /// The newest migration applied.
    pub schema_version: i64,
}

const MARK: Sql = Sql {
    sqlite: concat!(
        "INSERT INTO comment_replies (repository_id, comment_id, pull_request, replied_at) ",
        "VALUES ($1, $2, $3, ",
        sqlite_now!(),
        ") ON CONFLICT (repository_id, comment_id) DO NOTHING"
    ),
    postgres: "INSERT INTO comment_replies (repository_id, comment_id, pull_request, replied_at) \
               VALUES ($1, $2, $3, now()) ON CONFLICT (repository_id, comment_id) DO NOTHING",
};
const REPLIED_IDS: Sql = Sql::same(
    "SELECT comment_id FROM comment_replies WHERE repository_id = $1 AND pull_request = $2",
);
const HAS_REPLIED: Sql = Sql::same(
    "SELECT EXISTS (SELECT 1 FROM comment_replies WHERE repository_id = $1 AND comment_id = $2)",
);
const HISTORY: Sql = Sql::same(
    "SELECT comment_id, pull_request, replied_at FROM comment_replies \
     WHERE repository_id = $1 AND ($2 IS NULL OR replied_at >= $2) \
     ORDER BY replied_at, comment_id",
);
const ALL: Sql = Sql::same(
    "SELECT repositories.name, comment_id, pull_request, replied_at \
     FROM comment_replies JOIN repositories ON repositories.id = comment_replies.repository_id \
     ORDER BY repositories.name_key, replied_at, comment_id",
);
const SCHEMA: Sql = Sql::same("SELECT MAX(version) FROM _sqlx_migrations WHERE success");

/// Rows per multi-row `INSERT` when importing (4 parameters each; far below
/// either database's parameter limit).
const IMPORT_CHUNK: usize = 500;

impl Store {
    /// Records that the bot replied to `comment_id` on `pull_request` of
    /// `repository`, now (by the database's clock).
    ///
    /// Idempotent: recording a comment again changes nothing and keeps the first
    /// time. Returns whether this call recorded it (`false`: it already was).
    #[tracing::instrument(level = "debug", skip(self), fields(database = %self.location))]
    pub async fn mark_comment_replied(
        &self,
        comment_id: CommentId,
        pull_request: u64,
        repository: &str,
    ) -> Result<bool, StoreError> {
        let comment = to_database_integer(comment_id.0, "comment id")?;
        let pull_request = to_database_integer(pull_request, "pull request number")?;
        let repository_id = self.repository_id(repository).await?;
        let inserted = dispatch!(&self.backend, pool => {
            sqlx::query(pool.pick(&MARK))
                .bind(repository_id)
                .bind(comment)
                .bind(pull_request)
                .execute(pool)
                .await
                .map_err(self.query_error("recording a reply"))?
                .rows_affected()
        });
        Ok(inserted == 1)
    }

    /// The comments of `pull_request` in `repository` the bot has replied to.
    pub async fn replied_comment_ids(
        &self,
        pull_request: u64,
        repository: &str,
    ) -> Result<HashSet<CommentId>, StoreError> {
        let pull_request = to_database_integer(pull_request, "pull request number")?;
        let Some(repository_id) = self.existing_repository_id(repository).await? else {
            return Ok(HashSet::new());
        };
        let ids: Vec<i64> = dispatch!(&self.backend, pool => {
            sqlx::query_scalar(pool.pick(&REPLIED_IDS))
                .bind(repository_id)
                .bind(pull_request)
                .fetch_all(pool)
                .await
                .map_err(self.query_error("listing replied comments"))?
        });
        ids.into_iter()
            .map(|id| from_database_integer(id).map(CommentId))
            .collect::<Result<_, _>>()
            .map_err(self.query_error("listing replied comments"))
    }

    /// Whether the bot has replied to `comment_id` in `repository`.
    ///
    /// Unlike the seed's `has_replied_to_comment`, this takes the repository:
    /// comment ids are only unique per repository in the seed's own schema.
    pub async fn has_replied(
        &self,
        comment_id: CommentId,
        repository: &str,
    ) -> Result<bool, StoreError> {
        let comment = to_database_integer(comment_id.0, "comment id")?;
        let Some(repository_id) = self.existing_repository_id(repository).await? else {
            return Ok(false);
        };
        Ok(dispatch!(&self.backend, pool => {
            sqlx::query_scalar(pool.pick(&HAS_REPLIED))
                .bind(repository_id)
                .bind(comment)
                .fetch_one(pool)
                .await
                .map_err(self.query_error("checking for a reply"))?
        }))
    }

    /// The replies recorded for `repository`, oldest first, optionally only those
    /// at or after `since`.
    pub async fn reply_history(
        &self,
        repository: &str,
        since: Option<DateTime<Utc>>,
    ) -> Result<Vec<CommentReply>, StoreError> {
        let Some(repository_id) = self.existing_repository_id(repository).await? else {
            return Ok(Vec::new());
        };
        let operation = "reading the reply history";
        dispatch!(&self.backend, pool => {
            let rows = sqlx::query(pool.pick(&HISTORY))
                .bind(repository_id)
                .bind(since.map(|since| pool.time(since)))
                .fetch_all(pool)
                .await
                .map_err(self.query_error(operation))?;
            rows.iter()
                .map(|row| {
                    Ok(CommentReply {
                        comment_id: CommentId(from_database_integer(row.try_get(0)?)?),
                        pull_request: from_database_integer(row.try_get(1)?)?,
                        repository: repository.to_owned(),
                        replied_at: row.time_at(2)?,
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(self.query_error(operation))
        })
    }

    /// Every reply in the store, by repository, then oldest first: the backup
    /// that `review-bot replies export` writes.
    pub async fn all_replies(&self) -> Result<Vec<CommentReply>, StoreError> {
        let operation = "reading every reply";
        dispatch!(&self.backend, pool => {
            let rows = sqlx::query(pool.pick(&ALL))
                .fetch_all(pool)
                .await
                .map_err(self.query_error(operation))?;
            rows.iter()
                .map(|row| {
                    Ok(CommentReply {
                        repository: row.try_get(0)?,
                        comment_id: CommentId(from_database_integer(row.try_get(1)?)?),
                        pull_request: from_database_integer(row.try_get(2)?)?,
                        replied_at: row.time_at(3)?,
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(self.query_error(operation))
        })
    }

    /// Records many replies at once, keeping their `replied_at`, in one
    /// transaction: either all are recorded or none.
    ///
    /// Idempotent like [`mark_comment_replied`](Self::mark_comment_replied): a
    /// reply already in the store is counted, not changed, so importing the same
    /// input twice imports nothing the second time.
    pub async fn import_replies(
        &self,
        replies: &[CommentReply],
    ) -> Result<ImportSummary, StoreError> {
        // Validate everything and fold duplicates before writing anything.
        let mut earliest: HashMap<(String, i64), usize> = HashMap::new();
        let mut duplicates_in_input = 0;
        for (index, reply) in replies.iter().enumerate() {
            let key = (
                repository_key(&reply.repository)?,
                to_database_integer(reply.comment_id.0, "comment id")?,
            );
            to_database_integer(reply.pull_request, "pull request number")?;
            match earliest.get_mut(&key) {
                Some(kept) => {
                    duplicates_in_input += 1;
                    if reply.replied_at < replies[*kept].replied_at {
                        *kept = index;
                    }
                }
                None => {
                    earliest.insert(key, index);
                }
            }
        }
        let mut unique: Vec<usize> = earliest.into_values().collect();
        unique.sort_unstable();

        let mut rows = Vec::with_capacity(unique.len());
        for index in unique {
            let reply = &replies[index];
            rows.push((
                self.repository_id(&reply.repository).await?,
                to_database_integer(reply.comment_id.0, "comment id")?,
                to_database_integer(reply.pull_request, "pull request number")?,
                reply.replied_at,
            ));
        }

        let operation = "importing replies";
        let imported = dispatch!(&self.backend, pool => {
            let mut transaction = pool
                .begin_with(pool.begin_statement())
                .await
                .map_err(self.query_error(operation))?;
            let mut imported = 0;
            for chunk in rows.chunks(IMPORT_CHUNK) {
                let mut insert = sqlx::QueryBuilder::new(
                    "INSERT INTO comment_replies \
                     (repository_id, comment_id, pull_request, replied_at) ",
                );
                insert.push_values(chunk, |mut values, row| {
                    values
                        .push_bind(row.0)
                        .push_bind(row.1)
                        .push_bind(row.2)
                        .push_bind(pool.time(row.3));
                });
                insert.push(" ON CONFLICT (repository_id, comment_id) DO NOTHING");
                imported += insert
                    .build()
                    .execute(&mut *transaction)
                    .await
                    .map_err(self.query_error(operation))?
                    .rows_affected();
            }
            transaction
                .commit()
                .await
                .map_err(self.query_error(operation))?;
            imported
        });
        let unique_count = rows.len() as u64;
        Ok(ImportSummary {
            imported,
            already_present: unique_count - imported,
            duplicates_in_input,
        })
    }

    /// Checks that the database answers and reports its schema version.
    pub async fn health_check(&self) -> Result<Health, StoreError> {
        let (backend, version): (&'static str, Option<i64>) = dispatch!(&self.backend, pool => {
            let version = sqlx::query_scalar(pool.pick(&SCHEMA))
                .fetch_one(pool)
                .await
                .map_err(self.query_error("checking the database's health"))?;
            (pool.name(), version)
        });
        let schema_version = version.unwrap_or(0);
        if schema_version != SCHEMA_VERSION {
            return Err(StoreError::Corrupt {
                location: self.location().clone(),
                detail: format!(
                    "schema version is {schema_version}, expected {SCHEMA_VERSION}: was it \
                     migrated or rolled back by another review-bot while this one ran?"
                ),
            });
        }
        Ok(Health {
            location: self.location().clone(),
            backend,
            schema_version,
        })
    }
}
