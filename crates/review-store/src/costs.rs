//! What the agent cost, summed from the recorded agent passes (issue 28
//! item 5): a pull request's total over all its runs (review, fix and
//! verification passes alike), and a day's (UTC) per repository and overall,
//! for the review body's cost line and the cost caps. The store answers
//! these, so checking a cap costs no GitHub request.
//!
//! Also the cost notices: what the bot already told a pull request about a
//! cap (the day cap's wait, once per pull request and day), so a job held
//! back at every poll writes to GitHub once.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::Row as _;

use crate::dialect::{Dialect as _, Sql, dispatch, sqlite_now};
use crate::{Store, StoreError, check_name, to_database_integer};

/// What the agent passes of a pull request (or a day) add up to.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CostTotal {
    /// US dollars (passes that reported no cost count as nothing).
    pub cost_usd: f64,
    /// Turns.
    pub turns: u64,
    /// Agent time (passes recorded before durations were kept count as nothing).
    pub duration: Duration,
    /// How many agent passes were recorded.
    pub passes: u64,
}

/// A day's (UTC) agent cost, overall and per repository.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DayCost {
    /// The day.
    pub day: Option<NaiveDate>,
    /// Every repository's passes together, US dollars.
    pub total_usd: f64,
    /// Per repository (`owner/name` as first recorded), US dollars; only
    /// repositories with a pass that day.
    pub by_repository: BTreeMap<String, f64>,
}

impl DayCost {
    /// `repository`'s share (case-insensitive like GitHub's names), 0 when it
    /// spent nothing that day.
    pub fn repository_usd(&self, repository: &str) -> f64 {
        self.by_repository
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case(repository))
            .map(|(_, cost)| *cost)
            .sum()
    }
}

const PULL_REQUEST_COST: Sql = Sql::same(
    "SELECT CAST(COALESCE(SUM(agent_passes.cost_usd), 0) AS DOUBLE PRECISION), \
     CAST(COALESCE(SUM(agent_passes.turns), 0) AS BIGINT), \
     CAST(COALESCE(SUM(agent_passes.duration_ms), 0) AS BIGINT), \
     CAST(COUNT(*) AS BIGINT) \
     FROM agent_passes JOIN runs ON runs.id = agent_passes.run_id \
     WHERE runs.repository_id = $1 AND runs.pull_request = $2",
);

// A pass's day is when it was recorded; one recorded before version 6 has no
// such time and takes its run's start. Written as two ranges joined by OR so
// each side can use its index.
const DAY_COST: Sql = Sql::same(
    "SELECT repositories.name, \
     CAST(COALESCE(SUM(agent_passes.cost_usd), 0) AS DOUBLE PRECISION) \
     FROM agent_passes JOIN runs ON runs.id = agent_passes.run_id \
     JOIN repositories ON repositories.id = runs.repository_id \
     WHERE (agent_passes.recorded_at >= $1 AND agent_passes.recorded_at < $2) \
     OR (agent_passes.recorded_at IS NULL AND runs.started_at >= $1 AND runs.started_at < $2) \
     GROUP BY repositories.name ORDER BY repositories.name",
);

const NOTICE_GIVEN: Sql = Sql::same(
    "SELECT 1 FROM cost_notices WHERE repository_id = $1 AND pull_request = $2 AND notice = $3",
);

const RECORD_NOTICE: Sql = Sql {
    sqlite: concat!(
        "INSERT INTO cost_notices (repository_id, pull_request, notice, noted_at) VALUES ($1, $2, $3, ",
        sqlite_now!(),
        ") ON CONFLICT (repository_id, pull_request, notice) DO NOTHING"
    ),
    postgres: "INSERT INTO cost_notices (repository_id, pull_request, notice, noted_at) \
               VALUES ($1, $2, $3, now()) \
               ON CONFLICT (repository_id, pull_request, notice) DO NOTHING",
};

/// The start (inclusive) and end (exclusive) of `day`, UTC.
fn day_bounds(day: NaiveDate) -> (DateTime<Utc>, DateTime<Utc>) {
    let start = day.and_time(chrono::NaiveTime::MIN).and_utc();
    (start, start + chrono::TimeDelta::days(1))
}

impl Store {
    /// What every agent pass of every run (review, fix, verification) on
    /// `repository#pull_request` cost so far. Nothing recorded: zero.
    pub async fn pull_request_cost(
        &self,
        repository: &str,
        pull_request: u64,
    ) -> Result<CostTotal, StoreError> {
        let pull_request = to_database_integer(pull_request, "pull request number")?;
        let Some(repository_id) = self.existing_repository_id(repository).await? else {
            return Ok(CostTotal::default());
        };
        let operation = "summing a pull request's agent cost";
        let (cost_usd, turns, duration_ms, passes): (f64, i64, i64, i64) = dispatch!(&self.backend, pool => {
            let row = sqlx::query(pool.pick(&PULL_REQUEST_COST))
                .bind(repository_id)
                .bind(pull_request)
                .fetch_one(pool)
                .await
                .map_err(self.query_error(operation))?;
            (|| -> Result<_, sqlx::Error> {
                Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?))
            })()
            .map_err(self.query_error(operation))?
        });
        Ok(CostTotal {
            cost_usd,
            turns: u64::try_from(turns).unwrap_or(0),
            duration: Duration::from_millis(u64::try_from(duration_ms).unwrap_or(0)),
            passes: u64::try_from(passes).unwrap_or(0),
        })
    }

    /// What the agent passes recorded on `day` (UTC, by the database's clock)
    /// cost, overall and per repository.
    pub async fn day_cost(&self, day: NaiveDate) -> Result<DayCost, StoreError> {
        let (start, end) = day_bounds(day);
        let operation = "summing a day's agent cost";
        let rows: Vec<(String, f64)> = dispatch!(&self.backend, pool => {
            sqlx::query(pool.pick(&DAY_COST))
                .bind(pool.time(start))
                .bind(pool.time(end))
                .fetch_all(pool)
                .await
                .map_err(self.query_error(operation))?
                .iter()
                .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(self.query_error(operation))?
        });
        let mut cost = DayCost {
            day: Some(day),
            ..DayCost::default()
        };
        for (repository, usd) in rows {
            cost.total_usd += usd;
            *cost.by_repository.entry(repository).or_default() += usd;
        }
        Ok(cost)
    }

    /// Whether `notice` (1 to 256 characters, e.g. `day-cap:2026-11-26`) was
    /// recorded for the pull request.
    pub async fn cost_notice_given(
        &self,
        repository: &str,
        pull_request: u64,
        notice: &str,
    ) -> Result<bool, StoreError> {
        check_name("cost notice", notice)?;
        let pull_request = to_database_integer(pull_request, "pull request number")?;
        let Some(repository_id) = self.existing_repository_id(repository).await? else {
            return Ok(false);
        };
        let found = dispatch!(&self.backend, pool => {
            sqlx::query(pool.pick(&NOTICE_GIVEN))
                .bind(repository_id)
                .bind(pull_request)
                .bind(notice)
                .fetch_optional(pool)
                .await
                .map_err(self.query_error("reading a cost notice"))?
                .is_some()
        });
        Ok(found)
    }

    /// Records that `notice` was given on the pull request (again: nothing changes).
    pub async fn record_cost_notice(
        &self,
        repository: &str,
        pull_request: u64,
        notice: &str,
    ) -> Result<(), StoreError> {
        check_name("cost notice", notice)?;
        let pull_request = to_database_integer(pull_request, "pull request number")?;
        let repository_id = self.repository_id(repository).await?;
        dispatch!(&self.backend, pool => {
            sqlx::query(pool.pick(&RECORD_NOTICE))
                .bind(repository_id)
                .bind(pull_request)
                .bind(notice)
                .execute(pool)
                .await
                .map_err(self.query_error("recording a cost notice"))?;
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_runs_from_midnight_to_midnight_utc() {
        let (start, end) = day_bounds(NaiveDate::from_ymd_opt(2026, 11, 26).unwrap());
        assert_eq!(start.to_rfc3339(), "2026-11-26T00:00:00+00:00");
        assert_eq!(end.to_rfc3339(), "2026-11-27T00:00:00+00:00");
    }

    #[test]
    fn a_repositorys_share_ignores_case() {
        let mut cost = DayCost::default();
        cost.by_repository.insert("Octo/Widgets".to_owned(), 0.5);
        assert!((cost.repository_usd("octo/widgets") - 0.5).abs() < f64::EPSILON);
        assert!(cost.repository_usd("octo/gadgets").abs() < f64::EPSILON);
    }
}
