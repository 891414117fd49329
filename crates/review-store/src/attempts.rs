//! Job attempts: how often a job has failed on one head commit, so the daemon
//! backs off from a job that keeps failing and, after `agent.max_attempts`
//! failures, hands the pull request to a human.
//!
//! A record is keyed by repository, pull request, job kind and head commit
//! ([`JobKey`]): a new push starts afresh. [`Store::record_job_failure`] counts a
//! failure with one atomic upsert, so concurrent callers (tasks, processes,
//! replicas) never lose an increment, and schedules the next attempt in the same
//! transaction, while the record's row is locked (PostgreSQL) or the write lock
//! is held (SQLite): the backoff always matches the count it was computed from.
//! Retry times are set and compared by the database's clock, never the caller's,
//! so replicas with skewed clocks agree on when a job is due; callers learn how
//! long to wait from [`JobAttempts::retry_in`]. A record lives until the job
//! completes or a human asks for a retry ([`Store::clear_job_attempts`]).

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::dialect::{Dialect as _, Sql, TimeColumn, dispatch, sqlite_now};
use crate::{JobKind, Store, StoreError, check_name, from_database_integer, to_database_integer};

/// The longest backoff stored; longer ones are clamped to it. A job not due for
/// a year is as good as abandoned (a human is the better answer), and the
/// bound keeps every retry time far inside what both databases can hold.
const MAX_BACKOFF: Duration = Duration::from_hours(365 * 24);

/// The most of an error message kept, in bytes. Enough for the failure's
/// summary and the start of its output; the run's transcript has the rest.
const MAX_ERROR_BYTES: usize = 4 * 1024;

/// Which job on which head.
#[derive(Debug, Clone, Copy)]
pub struct JobKey<'a> {
    /// The repository, `owner/name`.
    pub repository: &'a str,
    /// The pull request.
    pub pull_request: u64,
    /// Which pipeline.
    pub kind: JobKind,
    /// The head commit the job ran on (1 to 256 characters).
    pub head_sha: &'a str,
}

/// A job's failures on one head.
#[derive(Debug, Clone, PartialEq)]
pub struct JobAttempts {
    /// The repository, `owner/name`, as the key spelled it.
    pub repository: String,
    /// The pull request.
    pub pull_request: u64,
    /// Which pipeline.
    pub kind: JobKind,
    /// The head commit the failures happened on.
    pub head_sha: String,
    /// Failures recorded since the record was created (or last cleared).
    pub failures: u32,
    /// The latest failure's message, trimmed to at most 4 KiB.
    pub last_error: Option<String>,
    /// How long until the next attempt is due, by the database's clock (zero when
    /// due now or no backoff): schedule the retry from this, never by the local
    /// clock.
    pub retry_in: Duration,
    /// When the pull request was handed to a human for these failures.
    pub handed_over_at: Option<DateTime<Utc>>,
    /// When a failure or the hand-over was last recorded (database clock).
    pub updated_at: DateTime<Utc>,
}

/// The condition naming one record; its parameters are `$1` to `$4`.
macro_rules! where_key {
    () => {
        " WHERE repository_id = $1 AND pull_request = $2 AND kind = $3 AND head_sha = $4"
    };
}

/// The columns [`attempts_from_row`] reads, after the database's clock in SQL.
macro_rules! returned_columns {
    ($now:expr) => {
        concat!(
            "failures, last_error, retry_at, handed_over_at, updated_at, ",
            $now
        )
    };
}

// Counting a failure and scheduling the next attempt are two statements in one
// transaction: the backoff is the caller's function of the new count, so the
// count must be known before the retry time can be written. The upsert leaves
// the row locked (PostgreSQL) or the write lock held (SQLite) until commit, so a
// concurrent failure waits and then counts on from this one. PostgreSQL's
// `now()` is the transaction's start, which may be before that wait; these two
// use `statement_timestamp()`, the time each statement began.
const COUNT_FAILURE: Sql = Sql {
    sqlite: concat!(
        "INSERT INTO job_attempts ",
        "(repository_id, pull_request, kind, head_sha, failures, last_error, updated_at) ",
        "VALUES ($1, $2, $3, $4, 1, $5, ",
        sqlite_now!(),
        ") ON CONFLICT (repository_id, pull_request, kind, head_sha) DO UPDATE SET ",
        "failures = job_attempts.failures + 1, last_error = excluded.last_error, ",
        "updated_at = excluded.updated_at RETURNING failures"
    ),
    postgres: "INSERT INTO job_attempts \
               (repository_id, pull_request, kind, head_sha, failures, last_error, updated_at) \
               VALUES ($1, $2, $3, $4, 1, $5, statement_timestamp()) \
               ON CONFLICT (repository_id, pull_request, kind, head_sha) DO UPDATE SET \
               failures = job_attempts.failures + 1, last_error = excluded.last_error, \
               updated_at = excluded.updated_at RETURNING failures",
};
const SCHEDULE_RETRY: Sql = Sql {
    sqlite: concat!(
        "UPDATE job_attempts SET retry_at = ",
        sqlite_now!(),
        " + $5, updated_at = ",
        sqlite_now!(),
        where_key!(),
        " RETURNING ",
        returned_columns!(sqlite_now!())
    ),
    postgres: concat!(
        "UPDATE job_attempts SET ",
        "retry_at = statement_timestamp() + $5::bigint * interval '1 microsecond', ",
        "updated_at = statement_timestamp()",
        where_key!(),
        " RETURNING ",
        returned_columns!("statement_timestamp()")
    ),
};
const SELECT: Sql = Sql {
    sqlite: concat!(
        "SELECT ",
        returned_columns!(sqlite_now!()),
        " FROM job_attempts",
        where_key!()
    ),
    postgres: concat!(
        "SELECT ",
        returned_columns!("now()"),
        " FROM job_attempts",
        where_key!()
    ),
};
// Handing over again (a retried step) keeps the first hand-over's time.
const HAND_OVER: Sql = Sql {
    sqlite: concat!(
        "UPDATE job_attempts SET handed_over_at = COALESCE(handed_over_at, ",
        sqlite_now!(),
        "), updated_at = CASE WHEN handed_over_at IS NULL THEN ",
        sqlite_now!(),
        " ELSE updated_at END",
        where_key!()
    ),
    postgres: concat!(
        "UPDATE job_attempts SET handed_over_at = COALESCE(handed_over_at, now()), ",
        "updated_at = CASE WHEN handed_over_at IS NULL THEN now() ELSE updated_at END",
        where_key!()
    ),
};
const CLEAR: Sql = Sql::same(concat!("DELETE FROM job_attempts", where_key!()));
const BACKING_OFF: Sql = Sql {
    sqlite: concat!(
        "SELECT COUNT(*) FROM job_attempts WHERE handed_over_at IS NULL AND retry_at > ",
        sqlite_now!()
    ),
    postgres: "SELECT COUNT(*) FROM job_attempts \
               WHERE handed_over_at IS NULL AND retry_at > now()",
};

impl Store {
    /// The record for `key`, if any.
    pub async fn job_attempts(&self, key: &JobKey<'_>) -> Result<Option<JobAttempts>, StoreError> {
        let pull_request = checked_pull_request(key)?;
        let Some(repository_id) = self.existing_repository_id(key.repository).await? else {
            return Ok(None);
        };
        let operation = "reading a job's failures";
        dispatch!(&self.backend, pool => {
            sqlx::query(pool.pick(&SELECT))
                .bind(repository_id)
                .bind(pull_request)
                .bind(key.kind.as_str())
                .bind(key.head_sha)
                .fetch_optional(pool)
                .await
                .map_err(self.query_error(operation))?
                .map(|row| attempts_from_row(key, &row))
                .transpose()
                .map_err(self.query_error(operation))
        })
    }

    /// Records one more failure of the job `key`, and returns the record after
    /// the update.
    ///
    /// Counts the failure atomically (the record is created on the first one),
    /// so concurrent callers never lose an increment. Keeps `error` as the last
    /// error, trimmed to at most 4 KiB on a character boundary (NUL characters,
    /// which PostgreSQL's text cannot hold, become U+FFFD). Schedules the next
    /// attempt at the database's now plus `backoff(failures)`, `failures` being
    /// the new count; a backoff longer than 365 days is clamped to 365 days, and
    /// sub-microsecond parts are dropped. A hand-over already recorded is kept.
    #[tracing::instrument(level = "debug", skip(self, error, backoff), fields(database = %self.location))]
    pub async fn record_job_failure(
        &self,
        key: &JobKey<'_>,
        error: &str,
        backoff: impl Fn(u32) -> Duration + Send,
    ) -> Result<JobAttempts, StoreError> {
        let pull_request = checked_pull_request(key)?;
        let last_error = storable_error(error);
        let repository_id = self.repository_id(key.repository).await?;
        let operation = "recording a job failure";
        dispatch!(&self.backend, pool => {
            let mut transaction = pool
                .begin_with(pool.begin_statement())
                .await
                .map_err(self.query_error(operation))?;
            let failures: i64 = sqlx::query_scalar(pool.pick(&COUNT_FAILURE))
                .bind(repository_id)
                .bind(pull_request)
                .bind(key.kind.as_str())
                .bind(key.head_sha)
                .bind(&last_error)
                .fetch_one(&mut *transaction)
                .await
                .map_err(self.query_error(operation))?;
            let delay = backoff_micros(backoff(failure_count(failures)));
            let row = sqlx::query(pool.pick(&SCHEDULE_RETRY))
                .bind(repository_id)
                .bind(pull_request)
                .bind(key.kind.as_str())
                .bind(key.head_sha)
                .bind(delay)
                .fetch_one(&mut *transaction)
                .await
                .map_err(self.query_error(operation))?;
            let attempts = attempts_from_row(key, &row).map_err(self.query_error(operation))?;
            transaction.commit().await.map_err(self.query_error(operation))?;
            Ok(attempts)
        })
    }

    /// Marks the failures of `key` as handed to a human, now (database clock).
    /// Returns `false` when there is no record. Marking again keeps the first
    /// time.
    pub async fn record_handed_over(&self, key: &JobKey<'_>) -> Result<bool, StoreError> {
        self.update_one(key, &HAND_OVER, "recording a hand-over to a human")
            .await
    }

    /// Forgets the record of `key` (the job completed, or a human asked for a
    /// retry). Returns whether there was one.
    pub async fn clear_job_attempts(&self, key: &JobKey<'_>) -> Result<bool, StoreError> {
        self.update_one(key, &CLEAR, "clearing a job's failures")
            .await
    }

    /// How many records are waiting for their retry time (due later, by the
    /// database's clock, and not handed over) — for a metrics gauge.
    pub async fn job_attempts_backing_off(&self) -> Result<u64, StoreError> {
        let operation = "counting jobs backing off";
        let count: i64 = dispatch!(&self.backend, pool => {
            sqlx::query_scalar(pool.pick(&BACKING_OFF))
                .fetch_one(pool)
                .await
                .map_err(self.query_error(operation))?
        });
        from_database_integer(count).map_err(self.query_error(operation))
    }

    /// Runs `sql`, a statement on the one record of `key` (bound as `$1` to
    /// `$4`), and returns whether it touched the record.
    async fn update_one(
        &self,
        key: &JobKey<'_>,
        sql: &Sql,
        operation: &'static str,
    ) -> Result<bool, StoreError> {
        let pull_request = checked_pull_request(key)?;
        let Some(repository_id) = self.existing_repository_id(key.repository).await? else {
            return Ok(false);
        };
        let touched = dispatch!(&self.backend, pool => {
            sqlx::query(pool.pick(sql))
                .bind(repository_id)
                .bind(pull_request)
                .bind(key.kind.as_str())
                .bind(key.head_sha)
                .execute(pool)
                .await
                .map_err(self.query_error(operation))?
                .rows_affected()
        });
        Ok(touched == 1)
    }
}

/// Checks the parts of `key` the repository helpers do not, and returns its pull
/// request as the database's integer.
fn checked_pull_request(key: &JobKey<'_>) -> Result<i64, StoreError> {
    check_name("head commit", key.head_sha)?;
    to_database_integer(key.pull_request, "pull request number")
}

/// A stored failure count as the count callers see (saturating: a job does not
/// fail four billion times).
fn failure_count(failures: i64) -> u32 {
    u32::try_from(failures.max(0)).unwrap_or(u32::MAX)
}

/// `backoff` in microseconds, clamped to [`MAX_BACKOFF`].
fn backoff_micros(backoff: Duration) -> i64 {
    i64::try_from(backoff.min(MAX_BACKOFF).as_micros()).expect("a year of microseconds fits in i64")
}

/// `error` as stored: NUL characters replaced (PostgreSQL's text cannot hold
/// them), then cut to at most [`MAX_ERROR_BYTES`] on a character boundary.
fn storable_error(error: &str) -> String {
    let trimmed = &error[..error.floor_char_boundary(MAX_ERROR_BYTES)];
    if !trimmed.contains('\0') {
        return trimmed.to_owned();
    }
    let mut replaced = trimmed.replace('\0', "\u{FFFD}");
    replaced.truncate(replaced.floor_char_boundary(MAX_ERROR_BYTES));
    replaced
}

/// A record from a row of [`returned_columns!`], for `key`.
fn attempts_from_row<R>(key: &JobKey<'_>, row: &R) -> Result<JobAttempts, sqlx::Error>
where
    R: sqlx::Row + TimeColumn,
    usize: sqlx::ColumnIndex<R>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let failures = from_database_integer(row.try_get(0)?)?;
    let retry_at = row.optional_time_at(2)?;
    let now = row.time_at(5)?;
    Ok(JobAttempts {
        repository: key.repository.to_owned(),
        pull_request: key.pull_request,
        kind: key.kind,
        head_sha: key.head_sha.to_owned(),
        failures: u32::try_from(failures).unwrap_or(u32::MAX),
        last_error: row.try_get(1)?,
        retry_in: retry_at.map_or(Duration::ZERO, |retry_at| {
            (retry_at - now).to_std().unwrap_or(Duration::ZERO)
        }),
        handed_over_at: row.optional_time_at(3)?,
        updated_at: row.time_at(4)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_trimmed_on_a_character_boundary() {
        assert_eq!(storable_error("build failed"), "build failed");
        // 'é' is two bytes: 4 KiB falls in the middle of one.
        let long = format!("x{}", "é".repeat(MAX_ERROR_BYTES));
        let stored = storable_error(&long);
        assert_eq!(stored.len(), MAX_ERROR_BYTES - 1);
        assert!(long.starts_with(&stored));
    }

    #[test]
    fn nul_characters_are_replaced_and_the_result_still_fits() {
        assert_eq!(storable_error("a\0b"), "a\u{FFFD}b");
        let stored = storable_error(&"\0".repeat(MAX_ERROR_BYTES));
        assert!(stored.len() <= MAX_ERROR_BYTES);
        assert!(stored.chars().all(|character| character == '\u{FFFD}'));
        assert_eq!(stored.chars().count(), MAX_ERROR_BYTES / 3);
    }

    #[test]
    fn backoffs_are_clamped_to_a_year() {
        assert_eq!(backoff_micros(Duration::from_micros(1_500)), 1_500);
        assert_eq!(backoff_micros(Duration::from_nanos(2_999)), 2);
        let year = i64::try_from(MAX_BACKOFF.as_micros()).unwrap();
        assert_eq!(backoff_micros(MAX_BACKOFF + Duration::from_secs(1)), year);
        assert_eq!(backoff_micros(Duration::MAX), year);
    }

    #[test]
    fn failure_counts_saturate() {
        assert_eq!(failure_count(3), 3);
        assert_eq!(failure_count(i64::MAX), u32::MAX);
        assert_eq!(failure_count(-1), 0);
    }
}
