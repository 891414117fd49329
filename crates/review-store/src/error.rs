//! The store's errors: each says what went wrong and what the operator can do about it.

use crate::location::DatabaseLocation;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The `--database` value is not a URL we understand.
    #[error(
        "`{url}` is not a database URL review-bot understands ({reason}); use `sqlite://PATH` \
         (for example `sqlite:///var/lib/review-bot/review-bot.sqlite3`) or \
         `postgres://USER@HOST/DATABASE`"
    )]
    InvalidUrl {
        /// The URL as given, password removed.
        url: String,
        /// Why it was rejected.
        reason: String,
    },

    /// No `--database` was given and the platform has no per-user data directory.
    #[error(
        "could not find a per-user data directory for the default database \
         (is $HOME or $XDG_DATA_HOME set?); pass --database sqlite://PATH or set \
         REVIEW_BOT_DATABASE_URL"
    )]
    NoDataDirectory,

    /// The directory that should hold the SQLite file could not be created.
    #[error(
        "could not create the directory {path} for the database: {source}; create it yourself \
         or point --database at a writable location"
    )]
    CreateDirectory {
        /// The directory.
        path: std::path::PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },

    /// The database could not be reached or opened.
    #[error(
        "could not open the database at {location}: {source}; check that {hint} and that \
         --database (or REVIEW_BOT_DATABASE_URL) is right"
    )]
    Unreachable {
        /// Where we tried.
        location: DatabaseLocation,
        /// What to check, depending on the kind of database.
        hint: &'static str,
        /// The driver's error.
        source: sqlx::Error,
    },

    /// The file or database exists but is not a (healthy) review-bot database.
    #[error(
        "the database at {location} is damaged or is not a review-bot database ({detail}); \
         restore it from a backup (`review-bot replies export` writes one) or point --database \
         at another file"
    )]
    Corrupt {
        /// Where.
        location: DatabaseLocation,
        /// What the driver or the migration check said.
        detail: String,
    },

    /// The database was migrated by a newer review-bot than this one.
    #[error(
        "the database at {location} was migrated by a newer review-bot (schema version \
         {database_version}; this binary knows up to {binary_version}); upgrade review-bot or \
         point --database at another file"
    )]
    NewerSchema {
        /// Where.
        location: DatabaseLocation,
        /// The highest migration version recorded in the database.
        database_version: i64,
        /// The highest migration version this binary ships.
        binary_version: i64,
    },

    /// Applying a migration failed.
    #[error(
        "could not migrate the database at {location} to schema version {version}: {source}; \
         the database is unchanged by the failed step. Check the database user's permissions, \
         then run review-bot again"
    )]
    Migration {
        /// Where.
        location: DatabaseLocation,
        /// The migration that failed.
        version: i64,
        /// The driver's error.
        source: sqlx::Error,
    },

    /// A query failed for a reason other than corruption.
    #[error("{operation} failed on the database at {location}: {source}")]
    Query {
        /// What we were doing, e.g. "recording a reply".
        operation: &'static str,
        /// Where.
        location: DatabaseLocation,
        /// The driver's error.
        source: sqlx::Error,
    },

    /// A caller passed a value the store cannot hold.
    #[error("invalid {what}: {reason}")]
    InvalidInput {
        /// Which argument.
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },

    /// A run id that does not exist in this database.
    #[error("run {run_id} does not exist in the database at {location}")]
    UnknownRun {
        /// The id asked for.
        run_id: i64,
        /// Where.
        location: DatabaseLocation,
    },
}

impl StoreError {
    /// An `InvalidInput` error.
    pub(crate) fn invalid(what: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidInput {
            what,
            reason: reason.into(),
        }
    }
}

/// SQLite's primary result codes that mean the file is damaged or not a database.
const SQLITE_CORRUPT: u32 = 11;
const SQLITE_NOTADB: u32 = 26;

/// Whether a driver error says the database file is damaged or is not a database.
pub(crate) fn is_corruption(error: &sqlx::Error) -> bool {
    let sqlx::Error::Database(database_error) = error else {
        return false;
    };
    // Only SQLite reports these codes as integers; PostgreSQL's are SQLSTATEs such
    // as `XX001` (data corrupted), which we also treat as corruption.
    let Some(code) = database_error.code() else {
        return false;
    };
    if let Ok(extended) = code.parse::<u32>() {
        let primary = extended & 0xff;
        return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
    }
    matches!(code.as_ref(), "XX001" | "XX002")
}
