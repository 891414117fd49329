//! Job plans: what a job has decided to write to GitHub and not yet finished
//! writing (issue 25, item 6).
//!
//! A review saves its plan (review, replies, label) before its first write,
//! under its review id; the write flow saves what must follow a push (the
//! replies, each with its `thread::` id) before it pushes, under the commit
//! it is about to push. A job killed part-way leaves the row, and whichever
//! step takes the pull request next — a restart with an empty work
//! directory, another replica on the same store — reads it and finishes the
//! job without a second agent run, push or reply, then removes it. The plan
//! is a JSON document its job owns (with its own version); the store keeps it
//! whole.

use crate::dialect::{Dialect as _, Sql, dispatch, sqlite_now};
use crate::{JobKind, Store, StoreError, check_name, to_database_integer};

/// The largest plan kept, in bytes (a plan is one review and some replies;
/// this bounds a runaway one).
const MAX_PLAN_BYTES: usize = 16 * 1024 * 1024;

/// Which plan: the pull request, the job, and the plan's own id (a review id,
/// a pushed commit).
#[derive(Debug, Clone, Copy)]
pub struct JobPlanKey<'a> {
    /// The repository, `owner/name`.
    pub repository: &'a str,
    /// The pull request.
    pub pull_request: u64,
    /// The job that made the plan.
    pub job: JobKind,
    /// The review id (a review) or the pushed commit (a fix).
    pub plan_id: &'a str,
}

const SELECT: Sql = Sql::same(
    "SELECT plan FROM job_plans \
     WHERE repository_id = $1 AND pull_request = $2 AND job = $3 AND plan_id = $4",
);
const UPSERT: Sql = Sql {
    sqlite: concat!(
        "INSERT INTO job_plans (repository_id, pull_request, job, plan_id, plan, created_at) ",
        "VALUES ($1, $2, $3, $4, $5, ",
        sqlite_now!(),
        ") ON CONFLICT (repository_id, job, plan_id) DO UPDATE SET ",
        "pull_request = excluded.pull_request, plan = excluded.plan"
    ),
    postgres: "INSERT INTO job_plans (repository_id, pull_request, job, plan_id, plan, created_at) \
               VALUES ($1, $2, $3, $4, $5, now()) \
               ON CONFLICT (repository_id, job, plan_id) DO UPDATE SET \
               pull_request = excluded.pull_request, plan = excluded.plan",
};
const DELETE: Sql = Sql::same(
    "DELETE FROM job_plans \
     WHERE repository_id = $1 AND pull_request = $2 AND job = $3 AND plan_id = $4",
);
const DELETE_OTHERS: Sql = Sql::same(
    "DELETE FROM job_plans \
     WHERE repository_id = $1 AND pull_request = $2 AND job = $3 AND plan_id <> $4",
);

impl Store {
    /// Saves `plan` (a JSON document) for `key`, replacing one saved before
    /// under the same key.
    pub async fn save_job_plan(&self, key: &JobPlanKey<'_>, plan: &str) -> Result<(), StoreError> {
        check_name("plan id", key.plan_id)?;
        if plan.len() > MAX_PLAN_BYTES || plan.contains('\0') {
            return Err(StoreError::invalid(
                "job plan",
                format!(
                    "{} bytes: a plan must be at most {MAX_PLAN_BYTES} bytes with no NUL character",
                    plan.len()
                ),
            ));
        }
        let pull_request = to_database_integer(key.pull_request, "pull request number")?;
        let repository_id = self.repository_id(key.repository).await?;
        let operation = "saving a job plan";
        dispatch!(&self.backend, pool => {
            sqlx::query(pool.pick(&UPSERT))
                .bind(repository_id)
                .bind(pull_request)
                .bind(key.job.as_str())
                .bind(key.plan_id)
                .bind(plan)
                .execute(pool)
                .await
                .map_err(self.query_error(operation))?;
        });
        Ok(())
    }

    /// The plan saved under `key`, if any.
    pub async fn job_plan(&self, key: &JobPlanKey<'_>) -> Result<Option<String>, StoreError> {
        check_name("plan id", key.plan_id)?;
        let pull_request = to_database_integer(key.pull_request, "pull request number")?;
        let Some(repository_id) = self.existing_repository_id(key.repository).await? else {
            return Ok(None);
        };
        let operation = "reading a job plan";
        dispatch!(&self.backend, pool => {
            sqlx::query_scalar::<_, String>(pool.pick(&SELECT))
                .bind(repository_id)
                .bind(pull_request)
                .bind(key.job.as_str())
                .bind(key.plan_id)
                .fetch_optional(pool)
                .await
                .map_err(self.query_error(operation))
        })
    }

    /// Removes the plan under `key` (done, or its push refused). Removing a
    /// plan that is not there is not an error.
    pub async fn remove_job_plan(&self, key: &JobPlanKey<'_>) -> Result<(), StoreError> {
        self.delete_job_plans(key, &DELETE, "removing a finished job plan")
            .await
            .map(|_| ())
    }

    /// Removes the pull request's plans of the same job under any id but
    /// `key.plan_id` (pushes that never happened, reviews of heads that have
    /// moved on). Returns how many were removed.
    pub async fn remove_other_job_plans(&self, key: &JobPlanKey<'_>) -> Result<u64, StoreError> {
        self.delete_job_plans(key, &DELETE_OTHERS, "removing stale job plans")
            .await
    }

    async fn delete_job_plans(
        &self,
        key: &JobPlanKey<'_>,
        statement: &Sql,
        operation: &'static str,
    ) -> Result<u64, StoreError> {
        check_name("plan id", key.plan_id)?;
        let pull_request = to_database_integer(key.pull_request, "pull request number")?;
        let Some(repository_id) = self.existing_repository_id(key.repository).await? else {
            return Ok(0);
        };
        dispatch!(&self.backend, pool => {
            Ok(sqlx::query(pool.pick(statement))
                .bind(repository_id)
                .bind(pull_request)
                .bind(key.job.as_str())
                .bind(key.plan_id)
                .execute(pool)
                .await
                .map_err(self.query_error(operation))?
                .rows_affected())
        })
    }
}
