//! Persistence for review-bot.
//!
//! SQLite by default (one file, no server), PostgreSQL when several replicas
//! share work. Holds reply tracking, run history, posted-comment fingerprints
//! and job leases, so that no state lives only in memory.
//!
//! Open a [`Store`] with [`Store::open`] (`sqlite://PATH` or `postgres://…`);
//! migrations are applied at open. Every method is scoped by repository
//! (`owner/name`, case-insensitive like GitHub's), and every timestamp comes
//! from the database's clock.
//!
//! - replies ([`Store::mark_comment_replied`], [`Store::replied_comment_ids`], …)
//!   and the seed's JSON file format ([`reply_file`]) for import and export;
//! - runs and their agent passes ([`Store::start_run`], …);
//! - fingerprints of posted inline comments ([`Fingerprint`],
//!   [`Store::record_posted_comments`], [`Store::posted_fingerprints`]);
//! - job leases ([`Store::claim`], [`Store::renew`], [`Store::release`]);
//! - job attempts, for backing off from a failing job and handing it to a human
//!   ([`Store::record_job_failure`], [`Store::job_attempts`], …);
//! - base-branch builds, so the build gate runs a base commit's commands once
//!   ([`Store::base_build`], [`Store::record_base_build`]);
//! - job plans, what a review or a pushed fix has left to write, so a job
//!   killed part-way is finished anywhere without a second agent run, push or
//!   reply ([`Store::save_job_plan`], [`Store::job_plan`], [`Store::remove_job_plan`]);
//! - agent cost sums, a pull request's and a day's, for the cost line and caps
//!   ([`Store::pull_request_cost`], [`Store::day_cost`], [`Store::cost_notice_given`]).

mod attempts;
mod base_builds;
mod costs;
mod dialect;
mod error;
mod fingerprints;
mod job_plans;
mod leases;
mod location;
mod migrations;
mod open;
mod replies;
pub mod reply_file;
mod repositories;
mod runs;
#[cfg(feature = "testing")]
pub mod testing;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub use attempts::{JobAttempts, JobKey};
pub use base_builds::{BaseBuild, BaseBuildKey};
pub use costs::{CostTotal, DayCost};
pub use error::StoreError;
pub use fingerprints::{Fingerprint, InlineComment};
pub use job_plans::JobPlanKey;
pub use leases::Lease;
pub use location::{DatabaseLocation, default_database_url, sqlite_url};
pub use migrations::SCHEMA_VERSION;
pub use replies::{CommentId, CommentReply, Health, ImportSummary};
pub use runs::{AgentPass, JobKind, NewRun, Run, RunId};

/// A handle on the database. Cheap to clone: clones share one connection pool.
#[derive(Debug, Clone)]
pub struct Store {
    /// The connection pool.
    backend: dialect::Backend,
    /// Where the database is, for messages (never holds a password).
    location: Arc<DatabaseLocation>,
    /// Repository ids by name key; ids never change once assigned.
    repository_ids: Arc<Mutex<HashMap<String, i64>>>,
}

impl Store {
    /// Wraps a driver error from `operation`, telling corruption apart.
    pub(crate) fn query_error(
        &self,
        operation: &'static str,
    ) -> impl Fn(sqlx::Error) -> StoreError + '_ {
        move |error| {
            if error::is_corruption(&error) {
                StoreError::Corrupt {
                    location: self.location().clone(),
                    detail: error.to_string(),
                }
            } else {
                StoreError::Query {
                    operation,
                    location: self.location().clone(),
                    source: error,
                }
            }
        }
    }
}

/// A number from GitHub (comment id, pull request number, line) as the
/// database's signed 64-bit integer.
pub(crate) fn to_database_integer(value: u64, what: &'static str) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::invalid(what, format!("{value} is too large")))
}

/// A stored 64-bit integer back as the unsigned number it was.
pub(crate) fn from_database_integer(value: i64) -> Result<u64, sqlx::Error> {
    u64::try_from(value)
        .map_err(|_| sqlx::Error::Decode(format!("unexpected negative number {value}").into()))
}

/// Checks a caller-chosen name (a lease holder, a run key): 1 to 256 bytes, no
/// control characters.
pub(crate) fn check_name(what: &'static str, name: &str) -> Result<(), StoreError> {
    if name.is_empty() || name.len() > 256 || name.chars().any(char::is_control) {
        return Err(StoreError::invalid(
            what,
            format!("{name:?} must be 1 to 256 characters with no control characters"),
        ));
    }
    Ok(())
}
