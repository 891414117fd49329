//! Run history: one row per pipeline run (review, write or CI), with one child
//! row per agent pass (its transcript, session, turns and cost).
//!
//! A run is started before any work, passes are added as they finish, and the
//! run is finished with an outcome. A run left without `finished_at` died
//! mid-way (crash, deploy); the dashboard shows it as such.
//!
//! Every write is idempotent and safe under concurrency: a run is named by a
//! key its caller chooses ([`NewRun::key`]), so starting it again returns the
//! same run; a pass is named within its run ([`AgentPass::name`]), so
//! recording it again updates it in place, and its position is assigned while
//! the run's row is locked (PostgreSQL) or the write lock is held (SQLite), so
//! two sessions recording passes at once never collide.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use sqlx::Row as _;

use crate::dialect::{Dialect as _, Sql, TimeColumn, dispatch, sqlite_now};
use crate::{Store, StoreError, check_name, from_database_integer, to_database_integer};

/// The kind of job a run (or lease) is for; one per bot label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// `bot-review-needed`: the review pipeline.
    Review,
    /// `bot-changes-needed`: the write (fix) pipeline.
    Write,
    /// `bot-ci-pending`: the CI handler.
    Ci,
}

impl JobKind {
    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Review => "review",
            Self::Write => "write",
            Self::Ci => "ci",
        }
    }
}

impl fmt::Display for JobKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl FromStr for JobKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "review" => Ok(Self::Review),
            "write" => Ok(Self::Write),
            "ci" => Ok(Self::Ci),
            other => Err(format!("unknown job kind {other:?}")),
        }
    }
}

/// A run's id in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(pub i64);

impl fmt::Display for RunId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(formatter)
    }
}

/// What is known when a run starts.
#[derive(Debug, Clone, Copy)]
pub struct NewRun<'a> {
    /// The caller's name for this run, unique in the database (1 to 256
    /// characters): starting a run with a key already used returns that run,
    /// so a retried step never adds a second one. One per job attempt, e.g.
    /// `owner/repo#42:review:{lease generation}`, or the review id.
    pub key: &'a str,
    /// The id in the run's `review::` footers, when it has one.
    pub review_id: Option<&'a str>,
    /// The repository, `owner/name`.
    pub repository: &'a str,
    /// The pull request.
    pub pull_request: u64,
    /// The head commit the run works on.
    pub head_sha: &'a str,
    /// Which pipeline.
    pub kind: JobKind,
}

/// One agent pass (one Claude Code session) of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentPass {
    /// Which pass: `architecture`, `detailed`, `code-fix`, `merge-conflict`, ….
    /// Unique within its run: recording a pass of the same name again replaces
    /// what was recorded (a retry), keeping its place in the order.
    pub name: String,
    /// Where its transcript was saved, if it was.
    pub transcript_path: Option<String>,
    /// The agent's session id, if the agent got far enough to report one.
    pub session_id: Option<String>,
    /// Turns the agent took, if reported.
    pub turns: Option<u32>,
    /// What the pass cost in US dollars, if reported.
    pub cost_usd: Option<f64>,
    /// How long it ran (the agent's own figure, else measured), if known.
    pub duration: Option<std::time::Duration>,
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Its id.
    pub id: RunId,
    /// The id in its `review::` footers, when it has one.
    pub review_id: Option<String>,
    /// The repository, `owner/name`.
    pub repository: String,
    /// The pull request.
    pub pull_request: u64,
    /// The head commit it worked on.
    pub head_sha: String,
    /// Which pipeline.
    pub kind: JobKind,
    /// How it ended (the pipeline's word, e.g. `changes-requested`); `None` while
    /// running or if it died without finishing.
    pub outcome: Option<String>,
    /// When it started (database clock).
    pub started_at: DateTime<Utc>,
    /// When it finished (database clock).
    pub finished_at: Option<DateTime<Utc>>,
    /// Its agent passes, in the order recorded.
    pub passes: Vec<AgentPass>,
}

// A second start with the same key touches nothing but returns the run it
// names, with what it was started for, so the caller can tell a retry from a
// key reused for another run.
const START: Sql = Sql {
    sqlite: concat!(
        "INSERT INTO runs ",
        "(run_key, review_id, repository_id, pull_request, head_sha, kind, started_at) ",
        "VALUES ($1, $2, $3, $4, $5, $6, ",
        sqlite_now!(),
        ") ON CONFLICT (run_key) DO UPDATE SET run_key = excluded.run_key ",
        "RETURNING id, review_id, repository_id, pull_request, head_sha, kind"
    ),
    postgres: "INSERT INTO runs \
               (run_key, review_id, repository_id, pull_request, head_sha, kind, started_at) \
               VALUES ($1, $2, $3, $4, $5, $6, now()) \
               ON CONFLICT (run_key) DO UPDATE SET run_key = excluded.run_key \
               RETURNING id, review_id, repository_id, pull_request, head_sha, kind",
};
// Taken first in the transaction that adds a pass: the run must exist, and no
// other session may number a pass of this run until the transaction ends.
// SQLite's `BEGIN IMMEDIATE` already holds the database's write lock.
const LOCK_RUN: Sql = Sql {
    sqlite: "SELECT id FROM runs WHERE id = $1",
    postgres: "SELECT id FROM runs WHERE id = $1 FOR UPDATE",
};
// The pass's `recorded_at` is the database's clock, so a day's cost (UTC) is
// the same whichever replica recorded it.
const ADD_PASS: Sql = Sql {
    sqlite: concat!(
        "INSERT INTO agent_passes \
         (run_id, ordinal, name, transcript_path, session_id, turns, cost_usd, duration_ms, \
         recorded_at) \
         SELECT $1, COALESCE(MAX(ordinal), 0) + 1, $2, $3, $4, $5, $6, $7, ",
        sqlite_now!(),
        " FROM agent_passes WHERE run_id = $1 \
         ON CONFLICT (run_id, name) DO UPDATE SET transcript_path = excluded.transcript_path, \
         session_id = excluded.session_id, turns = excluded.turns, cost_usd = excluded.cost_usd, \
         duration_ms = excluded.duration_ms, recorded_at = excluded.recorded_at"
    ),
    postgres: "INSERT INTO agent_passes \
               (run_id, ordinal, name, transcript_path, session_id, turns, cost_usd, duration_ms, \
               recorded_at) \
               SELECT $1, COALESCE(MAX(ordinal), 0) + 1, $2, $3, $4, $5, $6, $7, now() \
               FROM agent_passes WHERE run_id = $1 \
               ON CONFLICT (run_id, name) DO UPDATE SET transcript_path = excluded.transcript_path, \
               session_id = excluded.session_id, turns = excluded.turns, \
               cost_usd = excluded.cost_usd, duration_ms = excluded.duration_ms, \
               recorded_at = excluded.recorded_at",
};
const FINISH: Sql = Sql {
    sqlite: concat!(
        "UPDATE runs SET outcome = $2, finished_at = ",
        sqlite_now!(),
        " WHERE id = $1"
    ),
    postgres: "UPDATE runs SET outcome = $2, finished_at = now() WHERE id = $1",
};
/// The start of every query that [`run_from_row`] reads: a run's columns, with
/// its repository's name.
macro_rules! select_runs {
    () => {
        "SELECT runs.id, runs.review_id, repositories.name, runs.pull_request, \
         runs.head_sha, runs.kind, runs.outcome, runs.started_at, runs.finished_at \
         FROM runs JOIN repositories ON repositories.id = runs.repository_id "
    };
}
const RUN_BY_ID: Sql = Sql::same(concat!(select_runs!(), "WHERE runs.id = $1"));
const RUNS_FOR_PULL_REQUEST: Sql = Sql::same(concat!(
    select_runs!(),
    "WHERE runs.repository_id = $1 AND runs.pull_request = $2 ORDER BY runs.started_at, runs.id"
));
const RECENT_RUNS: Sql = Sql::same(concat!(
    select_runs!(),
    "ORDER BY runs.started_at DESC, runs.id DESC LIMIT $1"
));
const PASSES: Sql = Sql::same(
    "SELECT name, transcript_path, session_id, turns, cost_usd, duration_ms FROM agent_passes \
     WHERE run_id = $1 ORDER BY ordinal",
);

impl Store {
    /// Records the start of a run, now, and returns its id.
    ///
    /// Idempotent: if a run with `run.key` exists, returns its id and changes
    /// nothing. A key already used for a different run (another repository,
    /// pull request, commit, kind or review id) is an
    /// [`StoreError::InvalidInput`].
    pub async fn start_run(&self, run: &NewRun<'_>) -> Result<RunId, StoreError> {
        let pull_request = to_database_integer(run.pull_request, "pull request number")?;
        check_name("run key", run.key)?;
        let repository_id = self.repository_id(run.repository).await?;
        let operation = "recording the start of a run";
        let (id, started): (i64, Started) = dispatch!(&self.backend, pool => {
            let row = sqlx::query(pool.pick(&START))
                .bind(run.key)
                .bind(run.review_id)
                .bind(repository_id)
                .bind(pull_request)
                .bind(run.head_sha)
                .bind(run.kind.as_str())
                .fetch_one(pool)
                .await
                .map_err(self.query_error(operation))?;
            (|| -> Result<_, sqlx::Error> {
                Ok((
                    row.try_get(0)?,
                    Started {
                        review_id: row.try_get(1)?,
                        repository_id: row.try_get(2)?,
                        pull_request: row.try_get(3)?,
                        head_sha: row.try_get(4)?,
                        kind: row.try_get(5)?,
                    },
                ))
            })()
            .map_err(self.query_error(operation))?
        });
        let asked = Started {
            review_id: run.review_id.map(str::to_owned),
            repository_id,
            pull_request,
            head_sha: run.head_sha.to_owned(),
            kind: run.kind.as_str().to_owned(),
        };
        if started != asked {
            return Err(StoreError::invalid(
                "run key",
                format!(
                    "{:?} already names run {id}, started for another pull request, \
                     commit, kind or review id; give each run a key of its own",
                    run.key
                ),
            ));
        }
        Ok(RunId(id))
    }

    /// Records an agent pass of a run: after those already recorded, or in
    /// place of the pass of the same name (a retry records nothing new).
    /// Safe to call from several sessions at once.
    pub async fn record_agent_pass(&self, run: RunId, pass: &AgentPass) -> Result<(), StoreError> {
        let operation = "recording an agent pass";
        let found = dispatch!(&self.backend, pool => {
            let mut transaction = pool
                .begin_with(pool.begin_statement())
                .await
                .map_err(self.query_error(operation))?;
            let found: Option<i64> = sqlx::query_scalar(pool.pick(&LOCK_RUN))
                .bind(run.0)
                .fetch_optional(&mut *transaction)
                .await
                .map_err(self.query_error(operation))?;
            if found.is_some() {
                sqlx::query(pool.pick(&ADD_PASS))
                    .bind(run.0)
                    .bind(&pass.name)
                    .bind(pass.transcript_path.as_deref())
                    .bind(pass.session_id.as_deref())
                    .bind(pass.turns.map(i64::from))
                    .bind(pass.cost_usd)
                    .bind(
                        pass.duration
                            .map(|duration| i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)),
                    )
                    .execute(&mut *transaction)
                    .await
                    .map_err(self.query_error(operation))?;
            }
            transaction.commit().await.map_err(self.query_error(operation))?;
            found.is_some()
        });
        if found {
            Ok(())
        } else {
            Err(self.unknown_run(run))
        }
    }

    /// Records how a run ended, now. Finishing a run again replaces its outcome.
    pub async fn finish_run(&self, run: RunId, outcome: &str) -> Result<(), StoreError> {
        let updated = dispatch!(&self.backend, pool => {
            sqlx::query(pool.pick(&FINISH))
                .bind(run.0)
                .bind(outcome)
                .execute(pool)
                .await
                .map_err(self.query_error("recording the end of a run"))?
                .rows_affected()
        });
        if updated == 0 {
            return Err(self.unknown_run(run));
        }
        Ok(())
    }

    /// One run with its passes, if it exists.
    pub async fn run(&self, run: RunId) -> Result<Option<Run>, StoreError> {
        let operation = "reading a run";
        let found = dispatch!(&self.backend, pool => {
            sqlx::query(pool.pick(&RUN_BY_ID))
                .bind(run.0)
                .fetch_optional(pool)
                .await
                .map_err(self.query_error(operation))?
                .map(|row| run_from_row(&row))
                .transpose()
                .map_err(self.query_error(operation))?
        });
        match found {
            Some(found) => Ok(Some(self.with_passes(found).await?)),
            None => Ok(None),
        }
    }

    /// The runs on one pull request, oldest first, with their passes.
    pub async fn runs_for_pull_request(
        &self,
        repository: &str,
        pull_request: u64,
    ) -> Result<Vec<Run>, StoreError> {
        let pull_request = to_database_integer(pull_request, "pull request number")?;
        let Some(repository_id) = self.existing_repository_id(repository).await? else {
            return Ok(Vec::new());
        };
        let operation = "listing a pull request's runs";
        let runs = dispatch!(&self.backend, pool => {
            sqlx::query(pool.pick(&RUNS_FOR_PULL_REQUEST))
                .bind(repository_id)
                .bind(pull_request)
                .fetch_all(pool)
                .await
                .map_err(self.query_error(operation))?
                .iter()
                .map(run_from_row)
                .collect::<Result<Vec<_>, _>>()
                .map_err(self.query_error(operation))?
        });
        self.all_with_passes(runs).await
    }

    /// The `limit` most recently started runs, newest first, with their passes.
    pub async fn recent_runs(&self, limit: u32) -> Result<Vec<Run>, StoreError> {
        let operation = "listing recent runs";
        let runs = dispatch!(&self.backend, pool => {
            sqlx::query(pool.pick(&RECENT_RUNS))
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await
                .map_err(self.query_error(operation))?
                .iter()
                .map(run_from_row)
                .collect::<Result<Vec<_>, _>>()
                .map_err(self.query_error(operation))?
        });
        self.all_with_passes(runs).await
    }

    async fn all_with_passes(&self, runs: Vec<Run>) -> Result<Vec<Run>, StoreError> {
        let mut complete = Vec::with_capacity(runs.len());
        for run in runs {
            complete.push(self.with_passes(run).await?);
        }
        Ok(complete)
    }

    async fn with_passes(&self, mut run: Run) -> Result<Run, StoreError> {
        let operation = "reading a run's agent passes";
        run.passes = dispatch!(&self.backend, pool => {
            sqlx::query(pool.pick(&PASSES))
                .bind(run.id.0)
                .fetch_all(pool)
                .await
                .map_err(self.query_error(operation))?
                .iter()
                .map(|row| {
                    Ok(AgentPass {
                        name: row.try_get(0)?,
                        transcript_path: row.try_get(1)?,
                        session_id: row.try_get(2)?,
                        turns: row
                            .try_get::<Option<i64>, _>(3)?
                            .map(|turns| u32::try_from(turns).unwrap_or(u32::MAX)),
                        cost_usd: row.try_get(4)?,
                        duration: row
                            .try_get::<Option<i64>, _>(5)?
                            .map(|millis| {
                                std::time::Duration::from_millis(u64::try_from(millis).unwrap_or(0))
                            }),
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(self.query_error(operation))?
        });
        Ok(run)
    }

    fn unknown_run(&self, run: RunId) -> StoreError {
        StoreError::UnknownRun {
            run_id: run.0,
            location: self.location().clone(),
        }
    }
}

/// What a run was started for, as stored, to tell a retried start from a key
/// reused for another run.
#[derive(Debug, PartialEq, Eq)]
struct Started {
    review_id: Option<String>,
    repository_id: i64,
    pull_request: i64,
    head_sha: String,
    kind: String,
}

/// A run from a row of [`select_runs!`] (passes left empty).
fn run_from_row<R>(row: &R) -> Result<Run, sqlx::Error>
where
    R: sqlx::Row + TimeColumn,
    usize: sqlx::ColumnIndex<R>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let kind: String = row.try_get(5)?;
    Ok(Run {
        id: RunId(row.try_get(0)?),
        review_id: row.try_get(1)?,
        repository: row.try_get(2)?,
        pull_request: from_database_integer(row.try_get(3)?)?,
        head_sha: row.try_get(4)?,
        kind: kind
            .parse()
            .map_err(|error: String| sqlx::Error::Decode(error.into()))?,
        outcome: row.try_get(6)?,
        started_at: row.time_at(7)?,
        finished_at: row.optional_time_at(8)?,
        passes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_kinds_round_trip_through_their_names() {
        for kind in [JobKind::Review, JobKind::Write, JobKind::Ci] {
            assert_eq!(kind.as_str().parse::<JobKind>(), Ok(kind));
        }
        assert!("deploy".parse::<JobKind>().is_err());
    }
}
