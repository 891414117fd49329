//! Opening: file creation, WAL, migrations, and the errors an operator sees.

use std::time::Duration;

use review_store::{JobKey, JobKind, NewRun, SCHEMA_VERSION, Store, StoreError};
use sqlx::Connection as _;

use crate::support::{TestDatabase, both};

both!(
    a_database_migrated_by_a_newer_binary_is_refused,
    a_database_with_a_modified_migration_is_refused,
    opening_again_applies_nothing_and_keeps_data,
    concurrent_opens_of_a_fresh_database_all_succeed,
    a_version_2_database_is_migrated_keeping_its_data,
);

async fn a_database_migrated_by_a_newer_binary_is_refused(database: TestDatabase) {
    database.open().await.close().await;
    database
        .execute(match database.kind {
            crate::support::Kind::Sqlite => {
                "INSERT INTO _sqlx_migrations \
                 (version, description, success, checksum, execution_time) \
                 VALUES (9999, 'from the future', TRUE, X'00', 0)"
            }
            crate::support::Kind::Postgres => {
                "INSERT INTO _sqlx_migrations \
                 (version, description, success, checksum, execution_time) \
                 VALUES (9999, 'from the future', TRUE, '\\x00', 0)"
            }
        })
        .await;
    let error = Store::open(&database.url).await.unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::NewerSchema {
                database_version: 9999,
                binary_version: SCHEMA_VERSION,
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("was migrated by a newer review-bot (schema version 9999"),
        "{message}"
    );
    assert!(
        message.contains("upgrade review-bot or point --database at another file"),
        "{message}"
    );
}

async fn a_database_with_a_modified_migration_is_refused(database: TestDatabase) {
    database.open().await.close().await;
    match database.kind {
        crate::support::Kind::Sqlite => {
            database
                .execute("UPDATE _sqlx_migrations SET checksum = X'00' WHERE version = 1")
                .await;
        }
        crate::support::Kind::Postgres => {
            database
                .execute("UPDATE _sqlx_migrations SET checksum = '\\x00' WHERE version = 1")
                .await;
        }
    }
    let error = Store::open(&database.url).await.unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("previously applied but has been modified"),
        "{message}"
    );
    assert!(message.contains("restore it from a backup"), "{message}");
}

async fn opening_again_applies_nothing_and_keeps_data(database: TestDatabase) {
    let store = database.open().await;
    store
        .mark_comment_replied(review_store::CommentId(1), 1, "o/r")
        .await
        .unwrap();
    store.close().await;
    let again = database.open().await;
    assert_eq!(again.all_replies().await.unwrap().len(), 1);
    assert_eq!(
        again.health_check().await.unwrap().schema_version,
        SCHEMA_VERSION
    );
}

async fn concurrent_opens_of_a_fresh_database_all_succeed(database: TestDatabase) {
    // Replicas (or CLI commands) starting together must migrate exactly once.
    let opens = (0..16).map(|_| Store::open(&database.url));
    for result in futures::future::join_all(opens).await {
        let store = result.unwrap();
        store.health_check().await.unwrap();
        store.close().await;
    }
}

/// What a review-bot of schema version 2 left behind: a reply, a finished run
/// with a pass, and a lapsed lease, on a repository first seen as `Octo/Widgets`.
const VERSION_2_SQLITE_DATA: &str = "\
    INSERT INTO repositories (name, name_key) VALUES ('Octo/Widgets', 'octo/widgets');
    INSERT INTO comment_replies (repository_id, comment_id, pull_request, replied_at)
    SELECT id, 11, 7, 1700000000000000 FROM repositories;
    INSERT INTO runs (run_key, review_id, repository_id, pull_request, head_sha, kind,
        outcome, started_at, finished_at)
    SELECT 'octo/widgets#7:review:1', 'r1', id, 7, 'abc123', 'review', 'lgtm',
        1700000000000000, 1700000060000000 FROM repositories;
    INSERT INTO agent_passes (run_id, ordinal, name, turns, cost_usd)
    SELECT id, 1, 'architecture', 12, 0.5 FROM runs;
    INSERT INTO job_leases (repository_id, pull_request, kind, holder, generation,
        acquired_at, expires_at)
    SELECT id, 7, 'review', 'replica-a', 3, 1700000000000000, 1700000060000000
    FROM repositories;";
const VERSION_2_POSTGRES_DATA: &str = "\
    INSERT INTO repositories (name, name_key) VALUES ('Octo/Widgets', 'octo/widgets');
    INSERT INTO comment_replies (repository_id, comment_id, pull_request, replied_at)
    SELECT id, 11, 7, '2023-11-14T22:13:20Z' FROM repositories;
    INSERT INTO runs (run_key, review_id, repository_id, pull_request, head_sha, kind,
        outcome, started_at, finished_at)
    SELECT 'octo/widgets#7:review:1', 'r1', id, 7, 'abc123', 'review', 'lgtm',
        '2023-11-14T22:13:20Z', '2023-11-14T22:14:20Z' FROM repositories;
    INSERT INTO agent_passes (run_id, ordinal, name, turns, cost_usd)
    SELECT id, 1, 'architecture', 12, 0.5 FROM runs;
    INSERT INTO job_leases (repository_id, pull_request, kind, holder, generation,
        acquired_at, expires_at)
    SELECT id, 7, 'review', 'replica-a', 3, '2023-11-14T22:13:20Z', '2023-11-14T22:14:20Z'
    FROM repositories;";

/// Upgrading keeps every row a version-2 database held, and the new tables
/// work on its repositories at once.
async fn a_version_2_database_is_migrated_keeping_its_data(database: TestDatabase) {
    database.migrate_to(2).await;
    database
        .execute(match database.kind {
            crate::support::Kind::Sqlite => VERSION_2_SQLITE_DATA,
            crate::support::Kind::Postgres => VERSION_2_POSTGRES_DATA,
        })
        .await;

    let store = database.open().await;
    assert_eq!(
        store.health_check().await.unwrap().schema_version,
        SCHEMA_VERSION
    );
    let replies = store.all_replies().await.unwrap();
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0].comment_id, review_store::CommentId(11));
    assert_eq!(replies[0].repository, "Octo/Widgets");
    assert_eq!(
        replies[0].replied_at,
        "2023-11-14T22:13:20Z"
            .parse::<chrono::DateTime<chrono::Utc>>()
            .unwrap()
    );

    let runs = store
        .runs_for_pull_request("octo/widgets", 7)
        .await
        .unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].outcome.as_deref(), Some("lgtm"));
    assert_eq!(runs[0].passes.len(), 1);
    assert_eq!(runs[0].passes[0].turns, Some(12));
    assert_eq!(runs[0].passes[0].duration, None);
    // Its cost counts toward the pull request and toward the day its run
    // started (it has no time of its own).
    let total = store.pull_request_cost("octo/widgets", 7).await.unwrap();
    assert!((total.cost_usd - 0.5).abs() < 1e-9, "{total:?}");
    assert_eq!((total.turns, total.passes), (12, 1));
    let day = store
        .day_cost(chrono::NaiveDate::from_ymd_opt(2023, 11, 14).unwrap())
        .await
        .unwrap();
    assert!(
        (day.repository_usd("octo/widgets") - 0.5).abs() < 1e-9,
        "{day:?}"
    );
    // The run's key still names it.
    let again = store
        .start_run(&NewRun {
            key: "octo/widgets#7:review:1",
            review_id: Some("r1"),
            repository: "octo/widgets",
            pull_request: 7,
            head_sha: "abc123",
            kind: JobKind::Review,
        })
        .await
        .unwrap();
    assert_eq!(again, runs[0].id);

    // The lapsed lease is still there: claiming it counts on from its generation.
    let lease = store
        .claim(
            "octo/widgets",
            7,
            JobKind::Write,
            "replica-b",
            Duration::from_mins(1),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lease.generation, 4);

    let key = JobKey {
        repository: "octo/widgets",
        pull_request: 7,
        kind: JobKind::Write,
        head_sha: "abc123",
    };
    assert_eq!(store.job_attempts(&key).await.unwrap(), None);
    let attempts = store
        .record_job_failure(&key, "build failed", |_| Duration::from_mins(1))
        .await
        .unwrap();
    assert_eq!(attempts.failures, 1);
}

#[tokio::test]
async fn a_new_sqlite_file_and_its_directories_are_created_in_wal_mode() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("a/b/c/review-bot.sqlite3");
    let store = Store::open(&review_store::sqlite_url(&path)).await.unwrap();
    store.close().await;
    assert!(path.is_file());
    let mut connection = sqlx::SqliteConnection::connect(&review_store::sqlite_url(&path))
        .await
        .unwrap();
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut connection)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_reported_as_such() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("notes.txt");
    std::fs::write(&path, "these are my notes, not a database\n".repeat(200)).unwrap();
    let error = Store::open(&review_store::sqlite_url(&path))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("is damaged or is not a review-bot database"),
        "{message}"
    );
    assert!(message.contains(&path.display().to_string()), "{message}");
    // Nothing was written over the operator's file.
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .starts_with("these are my notes")
    );
}

#[tokio::test]
async fn a_sqlite_path_that_cannot_be_created_says_so() {
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let error = Store::open(&review_store::sqlite_url(&file.join("db.sqlite3")))
        .await
        .unwrap_err();
    assert!(
        matches!(error, StoreError::CreateDirectory { .. }),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("point --database at a writable location"),
        "{error}"
    );
}

#[tokio::test]
async fn an_unreachable_postgres_server_is_reported_without_the_password() {
    // Port 1 on loopback: nothing listens there, so the connection is refused.
    let error = Store::open("postgres://bot:hunter2@127.0.0.1:1/review")
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::Unreachable { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.starts_with("could not open the database at postgres://bot@127.0.0.1:1/review"),
        "{message}"
    );
    assert!(
        message.contains("the PostgreSQL server is running"),
        "{message}"
    );
    assert!(!message.contains("hunter2"), "{message}");
}

#[tokio::test]
async fn a_missing_postgres_database_is_reported() {
    let Some(server) = review_store::testing::postgres_server_url() else {
        return;
    };
    let mut url = url::Url::parse(&server).unwrap();
    url.set_path("/no_such_database");
    let error = Store::open(url.as_str()).await.unwrap_err();
    assert!(matches!(error, StoreError::Unreachable { .. }), "{error:?}");
    assert!(error.to_string().contains("no_such_database"), "{error}");
}

#[tokio::test]
async fn an_unsupported_url_says_what_to_use() {
    let error = Store::open("mysql://localhost/review").await.unwrap_err();
    assert!(matches!(error, StoreError::InvalidUrl { .. }), "{error:?}");
    assert!(error.to_string().contains("use `sqlite://PATH`"), "{error}");
}
