//! Running one test body against SQLite and against PostgreSQL.
//!
//! `both!(name)` turns `async fn name(database: TestDatabase)` into a module
//! `name` with two tests, `sqlite` and `postgres`. Each gets a fresh database:
//! a file in a temporary directory, or its own database on the test PostgreSQL
//! server (dropped afterwards), so tests run in parallel without interference.

use std::future::Future;
use std::str::FromStr as _;

use review_store::Store;
use review_store::testing;
use sqlx::Connection as _;
use sqlx::SqlSafeStr as _;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::sqlite::SqliteConnectOptions;

/// A fresh, empty database for one test.
pub struct TestDatabase {
    /// The URL to open it with.
    pub url: String,
    /// Which database this is.
    pub kind: Kind,
    /// Keeps a SQLite file's directory alive for the test.
    _directory: Option<tempfile::TempDir>,
}

/// Which database a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
}

impl TestDatabase {
    /// Opens the store (migrating it on first open).
    pub async fn open(&self) -> Store {
        Store::open(&self.url)
            .await
            .unwrap_or_else(|error| panic!("opening {}: {error}", self.url))
    }

    /// Runs `sql` directly on the database, outside the store (to tamper with it).
    pub async fn execute(&self, sql: &'static str) {
        match self.kind {
            Kind::Sqlite => {
                let mut connection = sqlx::SqliteConnection::connect(&self.url).await.unwrap();
                sqlx::raw_sql(sql).execute(&mut connection).await.unwrap();
                connection.close().await.unwrap();
            }
            Kind::Postgres => {
                let mut connection = sqlx::PgConnection::connect(&self.url).await.unwrap();
                sqlx::raw_sql(sql).execute(&mut connection).await.unwrap();
                connection.close().await.unwrap();
            }
        }
    }
}

/// The released migrations of one database, oldest first, as older review-bots
/// shipped them: (version, description, SQL).
const SQLITE_MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "initial",
        include_str!("../../migrations/sqlite/0001_initial.sql"),
    ),
    (
        2,
        "idempotent_runs",
        include_str!("../../migrations/sqlite/0002_idempotent_runs.sql"),
    ),
    (
        3,
        "job_attempts",
        include_str!("../../migrations/sqlite/0003_job_attempts.sql"),
    ),
    (
        4,
        "base_builds",
        include_str!("../../migrations/sqlite/0004_base_builds.sql"),
    ),
];
const POSTGRES_MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "initial",
        include_str!("../../migrations/postgres/0001_initial.sql"),
    ),
    (
        2,
        "idempotent_runs",
        include_str!("../../migrations/postgres/0002_idempotent_runs.sql"),
    ),
    (
        3,
        "job_attempts",
        include_str!("../../migrations/postgres/0003_job_attempts.sql"),
    ),
    (
        4,
        "base_builds",
        include_str!("../../migrations/postgres/0004_base_builds.sql"),
    ),
];

impl TestDatabase {
    /// Brings the fresh database to schema `version` and no further, as the
    /// review-bot that shipped that version left it (to test upgrades).
    pub async fn migrate_to(&self, version: i64) {
        let list = match self.kind {
            Kind::Sqlite => SQLITE_MIGRATIONS,
            Kind::Postgres => POSTGRES_MIGRATIONS,
        };
        let migrator = Migrator::with_migrations(
            list.iter()
                .map(|&(version, description, sql)| {
                    Migration::new(
                        version,
                        description.into(),
                        MigrationType::Simple,
                        sql.into_sql_str(),
                        false,
                    )
                })
                .collect(),
        );
        match self.kind {
            Kind::Sqlite => {
                let options = SqliteConnectOptions::from_str(&self.url)
                    .unwrap()
                    .create_if_missing(true);
                let mut connection = sqlx::SqliteConnection::connect_with(&options)
                    .await
                    .unwrap();
                migrator.run_to(version, &mut connection).await.unwrap();
                connection.close().await.unwrap();
            }
            Kind::Postgres => {
                let mut connection = sqlx::PgConnection::connect(&self.url).await.unwrap();
                migrator.run_to(version, &mut connection).await.unwrap();
                connection.close().await.unwrap();
            }
        }
    }
}

/// A fresh SQLite database file in its own temporary directory.
pub fn sqlite_database() -> TestDatabase {
    let directory = tempfile::tempdir().unwrap();
    let url = review_store::sqlite_url(&directory.path().join("store.sqlite3"));
    TestDatabase {
        url,
        kind: Kind::Sqlite,
        _directory: Some(directory),
    }
}

/// Runs `test` on a fresh SQLite database.
pub async fn on_sqlite<F, Fut>(test: F)
where
    F: FnOnce(TestDatabase) -> Fut,
    Fut: Future<Output = ()>,
{
    test(sqlite_database()).await;
}

/// Runs `test` on a fresh database of the test PostgreSQL server, then drops it.
/// Without a server, says so and returns — unless every dependency is required,
/// in which case [`testing::postgres_server_url`] fails the test.
pub async fn on_postgres<F, Fut>(test: F)
where
    F: FnOnce(TestDatabase) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(server) = testing::postgres_server_url() else {
        return;
    };
    let database = testing::TestDatabase::create(&server).await;
    test(TestDatabase {
        url: database.url.clone(),
        kind: Kind::Postgres,
        _directory: None,
    })
    .await;
    database.drop_database().await;
}

/// Defines `mod $name { sqlite, postgres }` running `async fn $name(TestDatabase)`
/// against each database.
macro_rules! both {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    $crate::support::on_sqlite(super::$name).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    $crate::support::on_postgres(super::$name).await;
                }
            }
        )+
    };
}
pub(crate) use both;
