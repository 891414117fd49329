//! Opening: file creation, WAL, migrations, and the errors an operator sees.

use review_store::{SCHEMA_VERSION, Store, StoreError};
use sqlx::Connection as _;

use crate::support::{TestDatabase, both};

both!(
    a_database_migrated_by_a_newer_binary_is_refused,
    a_database_with_a_modified_migration_is_refused,
    opening_again_applies_nothing_and_keeps_data,
    concurrent_opens_of_a_fresh_database_all_succeed,
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
    let opens = (0..6).map(|_| Store::open(&database.url));
    for result in futures::future::join_all(opens).await {
        let store = result.unwrap();
        store.health_check().await.unwrap();
        store.close().await;
    }
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
