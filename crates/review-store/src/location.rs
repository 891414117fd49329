//! Database URLs: parsing `sqlite://PATH` and `postgres://…`, the default file
//! location, and a password-free form for messages and logs.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr as _;

use sqlx::postgres::PgConnectOptions;

use crate::StoreError;

/// The default database file, relative to the per-user data directory
/// (`$XDG_DATA_HOME`, usually `~/.local/share`).
const DEFAULT_RELATIVE_PATH: &str = "review-bot/review-bot.sqlite3";

/// Where a database lives, in a form safe to show: never with a password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseLocation {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL database, as a URL without password or query parameters.
    Postgres(String),
}

impl fmt::Display for DatabaseLocation {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sqlite(path) => write!(formatter, "{}", path.display()),
            Self::Postgres(url) => formatter.write_str(url),
        }
    }
}

/// A parsed `--database` value.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// A SQLite file, created with its directory on first use.
    Sqlite(PathBuf),
    /// A PostgreSQL server and database.
    Postgres(Box<PgConnectOptions>),
}

/// The URL of the default database: a SQLite file in the per-user data directory.
pub fn default_database_url() -> Result<String, StoreError> {
    let data_directory = dirs::data_dir().ok_or(StoreError::NoDataDirectory)?;
    Ok(sqlite_url(&data_directory.join(DEFAULT_RELATIVE_PATH)))
}

/// The `sqlite://` URL of a file.
pub fn sqlite_url(path: &Path) -> String {
    format!("sqlite://{}", path.display())
}

/// Parses a database URL into what to connect to and how to name it in messages.
pub(crate) fn parse(url: &str) -> Result<(Target, DatabaseLocation), StoreError> {
    let invalid = |reason: &str| StoreError::InvalidUrl {
        url: redact(url),
        reason: reason.to_owned(),
    };
    if let Some(rest) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    {
        if rest.is_empty() {
            return Err(invalid("the path is empty"));
        }
        if rest.starts_with(":memory:") || rest.contains("mode=memory") {
            return Err(invalid(
                "an in-memory database would lose every reply and lease at exit",
            ));
        }
        if rest.contains('?') {
            return Err(invalid(
                "query parameters are not supported; journal mode and timeouts are set by \
                 review-bot",
            ));
        }
        let path = PathBuf::from(rest);
        return Ok((Target::Sqlite(path.clone()), DatabaseLocation::Sqlite(path)));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let options =
            PgConnectOptions::from_str(url).map_err(|error| invalid(&error.to_string()))?;
        return Ok((
            Target::Postgres(Box::new(options)),
            DatabaseLocation::Postgres(redact(url)),
        ));
    }
    Err(invalid("the scheme must be sqlite:// or postgres://"))
}

/// The URL without password or query string, for messages.
fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.has_host() => {
            // Both only fail for URLs that cannot have credentials; nothing to hide then.
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.to_string()
        }
        // Not a URL with an authority (e.g. `sqlite:relative/path`): it has no password.
        Ok(_) if !url.contains('@') => url.to_owned(),
        _ => "<unparseable database URL>".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls_name_a_path() {
        let (_, location) = parse("sqlite:///var/lib/review-bot/db.sqlite3").unwrap();
        assert_eq!(
            location,
            DatabaseLocation::Sqlite(PathBuf::from("/var/lib/review-bot/db.sqlite3"))
        );
        let (_, location) = parse("sqlite://relative/db.sqlite3").unwrap();
        assert_eq!(
            location,
            DatabaseLocation::Sqlite(PathBuf::from("relative/db.sqlite3"))
        );
        let (_, location) = parse("sqlite:db.sqlite3").unwrap();
        assert_eq!(
            location,
            DatabaseLocation::Sqlite(PathBuf::from("db.sqlite3"))
        );
    }

    #[test]
    fn postgres_locations_never_show_the_password() {
        let (_, location) =
            parse("postgres://bot:hunter2@db.example:5432/review?password=hunter2").unwrap();
        let shown = location.to_string();
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(shown, "postgres://bot@db.example:5432/review");
    }

    #[test]
    fn unsupported_urls_say_what_is_supported() {
        for url in [
            "mysql://localhost/x",
            "sqlite::memory:",
            "sqlite://",
            "sqlite://x.db?mode=rwc",
            "/plain/path.sqlite3",
        ] {
            let error = parse(url).unwrap_err().to_string();
            assert!(error.contains("sqlite://PATH"), "{url}: {error}");
        }
    }

    #[test]
    fn invalid_url_errors_do_not_leak_passwords() {
        let error = parse("postgres://bot:hunter2@db.example:notaport/review")
            .unwrap_err()
            .to_string();
        assert!(!error.contains("hunter2"), "{error}");
    }
}
