//! Opening a store: connecting, checking the schema version, migrating.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sqlx::Connection as _;
use sqlx::migrate::MigrateError;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use crate::dialect::{Backend, dispatch};
use crate::error::is_corruption;
use crate::location::{self, DatabaseLocation, Target};
use crate::migrations::{self, MIGRATIONS_TABLE, SCHEMA_VERSION};
use crate::{Store, StoreError};

/// How long a SQLite writer waits for another writer before giving up. Writes
/// are short; waiting this long means something is stuck.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(30);
/// SQLite connections per pool: WAL lets readers run beside the one writer.
const SQLITE_MAX_CONNECTIONS: u32 = 8;
/// PostgreSQL connections per pool (per process).
const POSTGRES_MAX_CONNECTIONS: u32 = 10;
/// How long to wait for a pooled connection (and for the first connection at open).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

const SQLITE_HINT: &str = "the file's directory exists and is writable by this user";
const POSTGRES_HINT: &str = "the PostgreSQL server is running and reachable from this host, \
     the user may log in and the database exists";

impl Store {
    /// Opens (and creates or migrates) the database at `url`: `sqlite://PATH` or
    /// `postgres://USER@HOST/DATABASE`.
    ///
    /// A SQLite file and its directory are created on first use; the file is put
    /// in WAL mode with a busy timeout so several processes can share it.
    /// Pending migrations are applied before this returns. A database migrated by
    /// a newer review-bot is refused ([`StoreError::NewerSchema`]) rather than
    /// used with a schema this binary does not know.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let (target, location) = location::parse(url)?;
        let backend = match target {
            Target::Sqlite(path) => open_sqlite(&path, &location).await?,
            Target::Postgres(options) => open_postgres(*options, &location).await?,
        };
        let store = Self {
            backend,
            location: Arc::new(location),
            repository_ids: Arc::default(),
        };
        store.migrate().await?;
        tracing::debug!(database = %store.location, "store open");
        Ok(store)
    }

    /// Opens the default database: a SQLite file in the per-user data directory
    /// (see [`default_database_url`](crate::default_database_url)).
    pub async fn open_default() -> Result<Self, StoreError> {
        Self::open(&location::default_database_url()?).await
    }

    /// Closes every connection, waiting for queries in progress to finish.
    pub async fn close(&self) {
        dispatch!(&self.backend, pool => pool.close().await);
    }

    /// Where the database is, for messages.
    pub fn location(&self) -> &DatabaseLocation {
        &self.location
    }

    /// Applies pending migrations, after refusing a database newer than this binary.
    async fn migrate(&self) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(pool) => {
                // SQLite's migrator takes no lock; an immediate transaction around
                // the whole run makes a second process opening a fresh file wait,
                // then find the migrations applied. (The migrator's own per-migration
                // transactions become savepoints inside it.)
                let mut transaction = pool
                    .begin_with("BEGIN IMMEDIATE")
                    .await
                    .map_err(|error| self.open_error(error))?;
                let table_exists: bool = sqlx::query_scalar(
                    "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = $1)",
                )
                .bind(MIGRATIONS_TABLE)
                .fetch_one(&mut *transaction)
                .await
                .map_err(|error| self.open_error(error))?;
                if table_exists {
                    self.refuse_newer(
                        sqlx::query_scalar(
                            "SELECT MAX(version) FROM _sqlx_migrations WHERE success",
                        )
                        .fetch_one(&mut *transaction)
                        .await
                        .map_err(|error| self.open_error(error))?,
                    )?;
                }
                migrations::migrator(migrations::SQLITE)
                    .run(&mut *transaction)
                    .await
                    .map_err(|error| self.migrate_error(error))?;
                transaction
                    .commit()
                    .await
                    .map_err(|error| self.open_error(error))?;
            }
            Backend::Postgres(pool) => {
                let table_exists: bool =
                    sqlx::query_scalar("SELECT to_regclass(quote_ident($1)) IS NOT NULL")
                        .bind(MIGRATIONS_TABLE)
                        .fetch_one(pool)
                        .await
                        .map_err(|error| self.open_error(error))?;
                if table_exists {
                    self.refuse_newer(
                        sqlx::query_scalar(
                            "SELECT MAX(version) FROM _sqlx_migrations WHERE success",
                        )
                        .fetch_one(pool)
                        .await
                        .map_err(|error| self.open_error(error))?,
                    )?;
                }
                // The PostgreSQL migrator holds an advisory lock while it runs, so
                // replicas starting together migrate once.
                migrations::migrator(migrations::POSTGRES)
                    .run(pool)
                    .await
                    .map_err(|error| self.migrate_error(error))?;
            }
        }
        Ok(())
    }

    /// Refuses a database whose newest applied migration this binary does not know.
    fn refuse_newer(&self, database_version: Option<i64>) -> Result<(), StoreError> {
        match database_version {
            Some(version) if version > SCHEMA_VERSION => Err(StoreError::NewerSchema {
                location: self.location().clone(),
                database_version: version,
                binary_version: SCHEMA_VERSION,
            }),
            _ => Ok(()),
        }
    }

    /// Classifies an error met while opening.
    fn open_error(&self, error: sqlx::Error) -> StoreError {
        if is_corruption(&error) {
            return StoreError::Corrupt {
                location: self.location().clone(),
                detail: error.to_string(),
            };
        }
        StoreError::Query {
            operation: "checking the schema version",
            location: self.location().clone(),
            source: error,
        }
    }

    /// Classifies an error from sqlx's migrator.
    fn migrate_error(&self, error: MigrateError) -> StoreError {
        let location = self.location().clone();
        match error {
            MigrateError::VersionMissing(version) if version > SCHEMA_VERSION => {
                StoreError::NewerSchema {
                    location,
                    database_version: version,
                    binary_version: SCHEMA_VERSION,
                }
            }
            MigrateError::ExecuteMigration(source, version) if !is_corruption(&source) => {
                StoreError::Migration {
                    location,
                    version,
                    source,
                }
            }
            MigrateError::ExecuteMigration(source, _) | MigrateError::Execute(source) => {
                if is_corruption(&source) {
                    StoreError::Corrupt {
                        location,
                        detail: source.to_string(),
                    }
                } else {
                    StoreError::Query {
                        operation: "migrating",
                        location,
                        source,
                    }
                }
            }
            // A migration recorded as applied that differs from ours, is unknown
            // to us, or was left half-done: not a database this binary can trust.
            other => StoreError::Corrupt {
                location,
                detail: format!("schema migrations: {other}"),
            },
        }
    }
}

async fn open_sqlite(path: &Path, location: &DatabaseLocation) -> Result<Backend, StoreError> {
    if let Some(directory) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        std::fs::create_dir_all(directory).map_err(|source| StoreError::CreateDirectory {
            path: directory.to_owned(),
            source,
        })?;
    }
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // Every commit reaches the disk before we report it: a reply recorded here
        // is one we must never post again, even after a power cut.
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(SQLITE_BUSY_TIMEOUT)
        .foreign_keys(true);
    // Turning a fresh file to WAL (`PRAGMA journal_mode = WAL`, run by the first
    // connection) needs the file to itself, and SQLite answers "database is
    // locked" at once there, without its busy handler: processes opening a new
    // file together (replicas, CLI commands) retry until the busy timeout, the
    // same bound every other write waits for. Once the file is in WAL mode, no
    // later open takes that lock.
    let deadline = tokio::time::Instant::now() + SQLITE_BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(5);
    loop {
        match SqlitePoolOptions::new()
            .max_connections(SQLITE_MAX_CONNECTIONS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options.clone())
            .await
        {
            Ok(pool) => return Ok(Backend::Sqlite(pool)),
            Err(error) if is_busy(&error) && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            Err(error) => return Err(connect_error(location, SQLITE_HINT, error)),
        }
    }
}

/// Whether SQLite refused because another connection held the lock it needed
/// (`SQLITE_BUSY` and its extended codes).
fn is_busy(error: &sqlx::Error) -> bool {
    error.as_database_error().is_some_and(|database_error| {
        database_error
            .code()
            .and_then(|code| code.parse::<i32>().ok())
            .is_some_and(|code| code & 0xff == 5)
    })
}

async fn open_postgres(
    options: PgConnectOptions,
    location: &DatabaseLocation,
) -> Result<Backend, StoreError> {
    // A pool retries a refused connection until its acquire timeout; one direct
    // attempt first tells an operator with a wrong URL at once.
    PgConnection::connect_with(&options)
        .await
        .map_err(|error| connect_error(location, POSTGRES_HINT, error))?
        .close()
        .await
        .ok();
    let pool = PgPoolOptions::new()
        .max_connections(POSTGRES_MAX_CONNECTIONS)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_with(options)
        .await
        .map_err(|error| connect_error(location, POSTGRES_HINT, error))?;
    Ok(Backend::Postgres(pool))
}

fn connect_error(
    location: &DatabaseLocation,
    hint: &'static str,
    error: sqlx::Error,
) -> StoreError {
    if is_corruption(&error) {
        return StoreError::Corrupt {
            location: location.clone(),
            detail: error.to_string(),
        };
    }
    StoreError::Unreachable {
        location: location.clone(),
        hint,
        source: error,
    }
}
