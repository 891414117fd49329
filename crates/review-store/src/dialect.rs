//! The two SQL dialects the store speaks, and the few places they differ.
//!
//! Queries are written once where SQLite and PostgreSQL agree (both accept
//! `$1`-style parameters, `ON CONFLICT`, `RETURNING`) and twice where they do not
//! (the clock, timestamp types). [`dispatch!`] runs the same Rust body against
//! whichever pool the store holds; inside it, [`Dialect`] and [`TimeColumn`]
//! supply the per-database pieces.

use chrono::{DateTime, Utc};
use sqlx::Row as _;
use sqlx::postgres::{PgPool, PgRow};
use sqlx::sqlite::{SqlitePool, SqliteRow};

/// The connection pool of one of the supported databases.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// A SQLite file.
    Sqlite(SqlitePool),
    /// A PostgreSQL database.
    Postgres(PgPool),
}

/// Runs `$body` with `$pool` bound to the store's pool, whichever database it is.
///
/// The body is type-checked once per database, so it may call the generic helpers
/// of [`Dialect`] and [`TimeColumn`] and get the right types for each.
macro_rules! dispatch {
    ($backend:expr, $pool:ident => $body:expr) => {
        match $backend {
            $crate::dialect::Backend::Sqlite($pool) => $body,
            $crate::dialect::Backend::Postgres($pool) => $body,
        }
    };
}
pub(crate) use dispatch;

/// A statement in both dialects.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sql {
    /// The SQLite text.
    pub sqlite: &'static str,
    /// The PostgreSQL text.
    pub postgres: &'static str,
}

impl Sql {
    /// A statement both databases accept as written.
    pub const fn same(text: &'static str) -> Self {
        Self {
            sqlite: text,
            postgres: text,
        }
    }
}

/// What differs between the databases, looked up through the pool's type.
pub(crate) trait Dialect {
    /// How a timestamp is bound: `INTEGER` microseconds in SQLite, `timestamptz`
    /// in PostgreSQL.
    type Time;

    /// `"sqlite"` or `"postgres"`.
    fn name(&self) -> &'static str;

    /// This database's text of `sql`.
    fn pick(&self, sql: &Sql) -> &'static str;

    /// `time` in the form this database binds.
    fn time(&self, time: DateTime<Utc>) -> Self::Time;

    /// The statement that starts a read-write transaction. SQLite's takes the
    /// write lock up front (`BEGIN IMMEDIATE`), so a transaction never fails
    /// half-way because another connection wrote first.
    fn begin_statement(&self) -> &'static str;
}

impl Dialect for SqlitePool {
    type Time = i64;

    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn pick(&self, sql: &Sql) -> &'static str {
        sql.sqlite
    }

    fn time(&self, time: DateTime<Utc>) -> i64 {
        time.timestamp_micros()
    }

    fn begin_statement(&self) -> &'static str {
        "BEGIN IMMEDIATE"
    }
}

impl Dialect for PgPool {
    type Time = DateTime<Utc>;

    fn name(&self) -> &'static str {
        "postgres"
    }

    fn pick(&self, sql: &Sql) -> &'static str {
        sql.postgres
    }

    fn time(&self, time: DateTime<Utc>) -> DateTime<Utc> {
        time
    }

    fn begin_statement(&self) -> &'static str {
        "BEGIN"
    }
}

/// Reading a timestamp column, whichever way the database stores it.
pub(crate) trait TimeColumn {
    /// The timestamp in column `index`.
    fn time_at(&self, index: usize) -> Result<DateTime<Utc>, sqlx::Error>;

    /// The timestamp in column `index`, or `None` for SQL `NULL`.
    fn optional_time_at(&self, index: usize) -> Result<Option<DateTime<Utc>>, sqlx::Error>;
}

impl TimeColumn for SqliteRow {
    fn time_at(&self, index: usize) -> Result<DateTime<Utc>, sqlx::Error> {
        micros_to_time(self.try_get(index)?)
    }

    fn optional_time_at(&self, index: usize) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
        self.try_get::<Option<i64>, _>(index)?
            .map(micros_to_time)
            .transpose()
    }
}

impl TimeColumn for PgRow {
    fn time_at(&self, index: usize) -> Result<DateTime<Utc>, sqlx::Error> {
        self.try_get(index)
    }

    fn optional_time_at(&self, index: usize) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
        self.try_get(index)
    }
}

fn micros_to_time(micros: i64) -> Result<DateTime<Utc>, sqlx::Error> {
    DateTime::from_timestamp_micros(micros)
        .ok_or_else(|| sqlx::Error::Decode(format!("timestamp {micros} µs is out of range").into()))
}

/// The database's own clock as SQL, in microseconds since the Unix epoch, for use
/// inside `concat!`.
///
/// Leases expire by the database's clock, never the caller's. SQLite's clock is the
/// host clock (every process sharing a SQLite file runs on one host), read with
/// millisecond precision; PostgreSQL's is the server's (`now()`), so replicas with
/// skewed clocks still agree on who holds a lease.
macro_rules! sqlite_now {
    () => {
        "CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) * 1000"
    };
}
pub(crate) use sqlite_now;
