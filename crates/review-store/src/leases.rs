//! Job leases: at most one holder works on a pull request at a time, across
//! tasks, processes and replicas.
//!
//! A lease covers the whole pull request, whatever the job kind: the review,
//! write and CI jobs of one PR must never overlap (the kind is recorded for
//! operators). [`Store::claim`] is one atomic conditional upsert — insert the
//! lease, or take over the row only if it has expired or is already ours — so
//! exactly one of any number of concurrent claimers wins, on PostgreSQL (row
//! lock on the conflicting row, `WHERE` re-checked) and on SQLite (one writer at
//! a time). Expiry is judged by the database's clock, never the caller's, so
//! replicas with skewed clocks agree.
//!
//! Lease rows are never deleted: releasing expires the row. Each successful
//! claim increments the row's `generation`, so a holder that stalled past its
//! expiry and was taken over cannot renew or release the new holder's lease;
//! and renewal requires a live lease, so a heartbeat arriving after a release
//! or after expiry cannot bring the lease back. Every lease handed out carries
//! its [`Lease::remaining`] time by the database's clock.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::Row as _;

use crate::dialect::{Dialect as _, Sql, TimeColumn as _, dispatch, sqlite_now};
use crate::{JobKind, Store, StoreError, check_name, from_database_integer, to_database_integer};

/// The longest lease accepted. Jobs are bounded (DESIGN invariant 7); a longer
/// lease would only delay recovery after a crash.
const MAX_TTL: Duration = Duration::from_hours(7 * 24);

/// A lease held on a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The repository, `owner/name`.
    pub repository: String,
    /// The pull request.
    pub pull_request: u64,
    /// The job the holder is doing.
    pub kind: JobKind,
    /// Who holds it (a replica/worker name, unique per concurrent claimer).
    pub holder: String,
    /// Increments with every successful claim of this pull request: a fencing token.
    pub generation: i64,
    /// When it was claimed (database clock).
    pub acquired_at: DateTime<Utc>,
    /// When it lapses unless renewed (database clock).
    pub expires_at: DateTime<Utc>,
    /// How long it had left when the database answered, measured by the
    /// database's clock: schedule the next renewal from this, never by comparing
    /// `expires_at` with the local clock (replicas' clocks drift).
    pub remaining: Duration,
}

const CLAIM: Sql = Sql {
    sqlite: concat!(
        "INSERT INTO job_leases ",
        "(repository_id, pull_request, kind, holder, generation, acquired_at, expires_at) ",
        "VALUES ($1, $2, $3, $4, 1, ",
        sqlite_now!(),
        ", ",
        sqlite_now!(),
        " + $5) ",
        "ON CONFLICT (repository_id, pull_request) DO UPDATE SET ",
        "kind = excluded.kind, holder = excluded.holder, ",
        "generation = job_leases.generation + 1, ",
        "acquired_at = excluded.acquired_at, expires_at = excluded.expires_at ",
        "WHERE job_leases.expires_at <= excluded.acquired_at ",
        "OR job_leases.holder = excluded.holder ",
        "RETURNING generation, acquired_at, expires_at, ",
        sqlite_now!(),
    ),
    postgres: "INSERT INTO job_leases \
               (repository_id, pull_request, kind, holder, generation, acquired_at, expires_at) \
               VALUES ($1, $2, $3, $4, 1, now(), now() + $5::bigint * interval '1 microsecond') \
               ON CONFLICT (repository_id, pull_request) DO UPDATE SET \
               kind = excluded.kind, holder = excluded.holder, \
               generation = job_leases.generation + 1, \
               acquired_at = excluded.acquired_at, expires_at = excluded.expires_at \
               WHERE job_leases.expires_at <= excluded.acquired_at \
               OR job_leases.holder = excluded.holder \
               RETURNING generation, acquired_at, expires_at, now()",
};
// Renewing and releasing require the lease to be live: a lease released or
// lapsed (even if nobody has claimed it since) stays dead, so a late heartbeat
// cannot resurrect it under a holder that already stopped working.
const RENEW: Sql = Sql {
    sqlite: concat!(
        "UPDATE job_leases SET expires_at = ",
        sqlite_now!(),
        " + $5 WHERE repository_id = $1 AND pull_request = $2 AND holder = $3 ",
        "AND generation = $4 AND expires_at > ",
        sqlite_now!(),
        " RETURNING expires_at, ",
        sqlite_now!()
    ),
    postgres: "UPDATE job_leases SET expires_at = now() + $5::bigint * interval '1 microsecond' \
               WHERE repository_id = $1 AND pull_request = $2 AND holder = $3 \
               AND generation = $4 AND expires_at > now() RETURNING expires_at, now()",
};
const RELEASE: Sql = Sql {
    sqlite: concat!(
        "UPDATE job_leases SET expires_at = ",
        sqlite_now!(),
        " WHERE repository_id = $1 AND pull_request = $2 AND holder = $3 AND generation = $4 ",
        "AND expires_at > ",
        sqlite_now!()
    ),
    postgres: "UPDATE job_leases SET expires_at = now() \
               WHERE repository_id = $1 AND pull_request = $2 AND holder = $3 \
               AND generation = $4 AND expires_at > now()",
};
const ACTIVE: Sql = Sql {
    sqlite: concat!(
        "SELECT repositories.name, pull_request, kind, holder, generation, acquired_at, ",
        "expires_at, ",
        sqlite_now!(),
        " FROM job_leases ",
        "JOIN repositories ON repositories.id = job_leases.repository_id ",
        "WHERE expires_at > ",
        sqlite_now!(),
        " ORDER BY acquired_at, repositories.name_key, pull_request"
    ),
    postgres: "SELECT repositories.name, pull_request, kind, holder, generation, acquired_at, \
               expires_at, now() FROM job_leases \
               JOIN repositories ON repositories.id = job_leases.repository_id \
               WHERE expires_at > now() \
               ORDER BY acquired_at, repositories.name_key, pull_request",
};

impl Store {
    /// Claims `pull_request` for `holder` for `ttl`.
    ///
    /// Succeeds (returns the lease) if nobody holds the pull request, if the
    /// last lease has expired (take-over), or if `holder` already holds it (the
    /// lease is then re-issued with a new generation and expiry). Returns
    /// `None` while another holder's lease is live.
    #[tracing::instrument(level = "debug", skip(self), fields(database = %self.location))]
    pub async fn claim(
        &self,
        repository: &str,
        pull_request: u64,
        kind: JobKind,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<Lease>, StoreError> {
        let pull_request_number = to_database_integer(pull_request, "pull request number")?;
        let ttl = ttl_micros(ttl)?;
        check_name("lease holder", holder)?;
        let repository_id = self.repository_id(repository).await?;
        let operation = "claiming a job lease";
        let claimed = dispatch!(&self.backend, pool => {
            let row = sqlx::query(pool.pick(&CLAIM))
                .bind(repository_id)
                .bind(pull_request_number)
                .bind(kind.as_str())
                .bind(holder)
                .bind(ttl)
                .fetch_optional(pool)
                .await
                .map_err(self.query_error(operation))?;
            row.map(|row| -> Result<_, sqlx::Error> {
                Ok((
                    row.try_get::<i64, _>(0)?,
                    row.time_at(1)?,
                    row.time_at(2)?,
                    row.time_at(3)?,
                ))
            })
            .transpose()
            .map_err(self.query_error(operation))?
        });
        Ok(
            claimed.map(|(generation, acquired_at, expires_at, now)| Lease {
                repository: repository.to_owned(),
                pull_request,
                kind,
                holder: holder.to_owned(),
                generation,
                acquired_at,
                expires_at,
                remaining: remaining(expires_at, now),
            }),
        )
    }

    /// Extends `lease` to `ttl` from now (database clock). Returns the renewed
    /// lease, or `None` if it is no longer live — released, lapsed, taken over
    /// or re-claimed since: stop working on the job. A lapsed lease is never
    /// renewed, even when nobody has claimed it yet: the holder missed its
    /// deadline and must claim again.
    pub async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        let pull_request = to_database_integer(lease.pull_request, "pull request number")?;
        let ttl = ttl_micros(ttl)?;
        let Some(repository_id) = self.existing_repository_id(&lease.repository).await? else {
            return Ok(None);
        };
        let operation = "renewing a job lease";
        let expires_at = dispatch!(&self.backend, pool => {
            let row = sqlx::query(pool.pick(&RENEW))
                .bind(repository_id)
                .bind(pull_request)
                .bind(&lease.holder)
                .bind(lease.generation)
                .bind(ttl)
                .fetch_optional(pool)
                .await
                .map_err(self.query_error(operation))?;
            row.map(|row| Ok::<_, sqlx::Error>((row.time_at(0)?, row.time_at(1)?)))
                .transpose()
                .map_err(self.query_error(operation))?
        });
        Ok(expires_at.map(|(expires_at, now)| Lease {
            expires_at,
            remaining: remaining(expires_at, now),
            ..lease.clone()
        }))
    }

    /// Gives `lease` up so another holder can claim the pull request at once.
    /// Returns `false` if it was no longer held (lapsed, released, taken over
    /// or re-claimed).
    pub async fn release(&self, lease: &Lease) -> Result<bool, StoreError> {
        let pull_request = to_database_integer(lease.pull_request, "pull request number")?;
        let Some(repository_id) = self.existing_repository_id(&lease.repository).await? else {
            return Ok(false);
        };
        let released = dispatch!(&self.backend, pool => {
            sqlx::query(pool.pick(&RELEASE))
                .bind(repository_id)
                .bind(pull_request)
                .bind(&lease.holder)
                .bind(lease.generation)
                .execute(pool)
                .await
                .map_err(self.query_error("releasing a job lease"))?
                .rows_affected()
        });
        Ok(released == 1)
    }

    /// The leases live now, oldest first (for the dashboard and operators).
    pub async fn active_leases(&self) -> Result<Vec<Lease>, StoreError> {
        let operation = "listing job leases";
        dispatch!(&self.backend, pool => {
            sqlx::query(pool.pick(&ACTIVE))
                .fetch_all(pool)
                .await
                .map_err(self.query_error(operation))?
                .iter()
                .map(|row| {
                    let kind: String = row.try_get(2)?;
                    let expires_at = row.time_at(6)?;
                    Ok(Lease {
                        repository: row.try_get(0)?,
                        pull_request: from_database_integer(row.try_get(1)?)?,
                        kind: kind
                            .parse()
                            .map_err(|error: String| sqlx::Error::Decode(error.into()))?,
                        holder: row.try_get(3)?,
                        generation: row.try_get(4)?,
                        acquired_at: row.time_at(5)?,
                        expires_at,
                        remaining: remaining(expires_at, row.time_at(7)?),
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(self.query_error(operation))
        })
    }
}

/// What is left of a lease expiring at `expires_at` when the database's clock
/// read `now` (zero once lapsed).
fn remaining(expires_at: DateTime<Utc>, now: DateTime<Utc>) -> Duration {
    (expires_at - now).to_std().unwrap_or(Duration::ZERO)
}

fn ttl_micros(ttl: Duration) -> Result<i64, StoreError> {
    if ttl > MAX_TTL {
        return Err(StoreError::invalid(
            "lease duration",
            format!(
                "{ttl:?} is longer than the maximum of {} days",
                MAX_TTL.as_secs() / 86_400
            ),
        ));
    }
    Ok(i64::try_from(ttl.as_micros()).expect("at most a week of microseconds fits in i64"))
}
