//! Test helpers (feature `testing`): a throwaway PostgreSQL database per test.
//!
//! Tests find the PostgreSQL server through `REVIEW_BOT_TEST_POSTGRES_URL`
//! (`scripts/with-postgres` starts one and sets it). Each test creates its own
//! database on that server, so tests run in parallel without seeing each other.
//! When the variable is missing, [`postgres_server_url`] returns `None` so a
//! developer can run the SQLite half alone — unless the run requires every test
//! dependency (`REVIEW_BOT_REQUIRE_ALL_TEST_DEPS=1`, set by `scripts/test`, or
//! `CI=true`), in which case it panics: the suite never passes by skipping.

use sqlx::Connection as _;

/// The variable naming the test PostgreSQL server.
pub const POSTGRES_URL_VARIABLE: &str = "REVIEW_BOT_TEST_POSTGRES_URL";

/// Whether this run must have every external test dependency.
pub fn all_dependencies_required() -> bool {
    std::env::var("REVIEW_BOT_REQUIRE_ALL_TEST_DEPS").is_ok_and(|value| value == "1")
        || std::env::var("CI").is_ok_and(|value| value == "true")
}

/// The test PostgreSQL server's URL, or `None` when there is none and none is
/// required (the caller should then say it is not testing PostgreSQL).
///
/// # Panics
///
/// When no server is configured but [`all_dependencies_required`].
pub fn postgres_server_url() -> Option<String> {
    match std::env::var(POSTGRES_URL_VARIABLE) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if all_dependencies_required() => panic!(
            "{POSTGRES_URL_VARIABLE} is not set, and this run requires PostgreSQL \
             (REVIEW_BOT_REQUIRE_ALL_TEST_DEPS=1 or CI=true). Run the tests through \
             `scripts/with-postgres` (e.g. `scripts/with-postgres cargo test -p review-store`) \
             or `scripts/test`; install the server with `scripts/install-test-deps`."
        ),
        _ => {
            eprintln!(
                "note: {POSTGRES_URL_VARIABLE} is not set; not testing PostgreSQL here \
                 (run under scripts/with-postgres to include it)"
            );
            None
        }
    }
}

/// A database created for one test on the test server.
#[derive(Debug)]
pub struct TestDatabase {
    /// The URL to open the store with.
    pub url: String,
    /// The server's maintenance URL, used to drop the database.
    server_url: String,
    /// The database's name.
    name: String,
}

impl TestDatabase {
    /// Creates an empty database with a unique name on the server at `server_url`.
    ///
    /// # Panics
    ///
    /// When the server cannot be reached or refuses.
    pub async fn create(server_url: &str) -> Self {
        let name = format!("test_{}", uuid::Uuid::new_v4().simple());
        let mut connection = sqlx::PgConnection::connect(server_url)
            .await
            .unwrap_or_else(|error| {
                panic!("could not connect to the test PostgreSQL at {server_url}: {error}")
            });
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut connection)
            .await
            .unwrap_or_else(|error| panic!("could not create test database {name}: {error}"));
        connection.close().await.ok();
        let mut url = url::Url::parse(server_url).expect("the test server URL is a URL");
        url.set_path(&format!("/{name}"));
        Self {
            url: url.to_string(),
            server_url: server_url.to_owned(),
            name,
        }
    }

    /// Drops the database (closing any connections still open to it).
    ///
    /// # Panics
    ///
    /// When the server cannot be reached or refuses.
    pub async fn drop_database(self) {
        let mut connection = sqlx::PgConnection::connect(&self.server_url)
            .await
            .unwrap_or_else(|error| panic!("could not reconnect to the test PostgreSQL: {error}"));
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        )))
        .execute(&mut connection)
        .await
        .unwrap_or_else(|error| panic!("could not drop test database {}: {error}", self.name));
        connection.close().await.ok();
    }
}
