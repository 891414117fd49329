//! Reply tracking (seed 002), import and export, on both databases.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use review_store::reply_file::{self, NaiveTimestamps};
use review_store::{CommentId, CommentReply, ImportSummary, Store, StoreError};

use crate::support::{TestDatabase, both, sqlite_database};

both!(
    marked_comments_are_listed_per_pull_request_and_repository,
    marking_is_idempotent_and_keeps_the_first_time,
    repository_names_are_case_insensitive,
    asking_about_an_unknown_repository_answers_empty,
    replies_survive_reopening,
    history_is_oldest_first_and_filtered_by_since,
    import_is_idempotent_and_counts_what_it_did,
    duplicates_in_an_import_keep_the_earliest_time,
    export_then_import_round_trips_across_databases,
    invalid_arguments_are_rejected_without_writing,
    health_check_reports_the_backend_and_schema,
);

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

fn reply(comment: u64, pull_request: u64, repository: &str, replied_at: &str) -> CommentReply {
    CommentReply {
        comment_id: CommentId(comment),
        pull_request,
        repository: repository.to_owned(),
        replied_at: at(replied_at),
    }
}

fn ids(list: &[u64]) -> HashSet<CommentId> {
    list.iter().copied().map(CommentId).collect()
}

async fn marked_comments_are_listed_per_pull_request_and_repository(database: TestDatabase) {
    let store = database.open().await;
    for comment in [11, 12, 13] {
        store
            .mark_comment_replied(CommentId(comment), 1, "octo/widgets")
            .await
            .unwrap();
    }
    store
        .mark_comment_replied(CommentId(21), 2, "octo/widgets")
        .await
        .unwrap();
    // The same comment id in another repository is another comment.
    store
        .mark_comment_replied(CommentId(11), 1, "octo/gadgets")
        .await
        .unwrap();

    assert_eq!(
        store.replied_comment_ids(1, "octo/widgets").await.unwrap(),
        ids(&[11, 12, 13])
    );
    assert_eq!(
        store.replied_comment_ids(2, "octo/widgets").await.unwrap(),
        ids(&[21])
    );
    assert_eq!(
        store.replied_comment_ids(1, "octo/gadgets").await.unwrap(),
        ids(&[11])
    );
    assert_eq!(
        store.replied_comment_ids(3, "octo/widgets").await.unwrap(),
        ids(&[])
    );

    assert!(
        store
            .has_replied(CommentId(21), "octo/widgets")
            .await
            .unwrap()
    );
    assert!(
        !store
            .has_replied(CommentId(21), "octo/gadgets")
            .await
            .unwrap()
    );
    assert!(
        !store
            .has_replied(CommentId(99), "octo/widgets")
            .await
            .unwrap()
    );
}

async fn marking_is_idempotent_and_keeps_the_first_time(database: TestDatabase) {
    let store = database.open().await;
    assert!(
        store
            .mark_comment_replied(CommentId(5), 1, "o/r")
            .await
            .unwrap()
    );
    let first = store.reply_history("o/r", None).await.unwrap();
    assert!(
        !store
            .mark_comment_replied(CommentId(5), 1, "o/r")
            .await
            .unwrap()
    );
    let second = store.reply_history("o/r", None).await.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first, second);
}

async fn repository_names_are_case_insensitive(database: TestDatabase) {
    let store = database.open().await;
    store
        .mark_comment_replied(CommentId(1), 4, "Octo-Org/Widgets")
        .await
        .unwrap();
    assert!(
        !store
            .mark_comment_replied(CommentId(1), 4, "octo-org/widgets")
            .await
            .unwrap()
    );
    assert!(
        store
            .has_replied(CommentId(1), "OCTO-ORG/WIDGETS")
            .await
            .unwrap()
    );
    // A fresh store (empty cache) agrees, and keeps the first spelling.
    let reopened = database.open().await;
    let all = reopened.all_replies().await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].repository, "Octo-Org/Widgets");
}

async fn asking_about_an_unknown_repository_answers_empty(database: TestDatabase) {
    let store = database.open().await;
    assert!(
        store
            .replied_comment_ids(1, "nobody/here")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        !store
            .has_replied(CommentId(1), "nobody/here")
            .await
            .unwrap()
    );
    assert!(
        store
            .reply_history("nobody/here", None)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn replies_survive_reopening(database: TestDatabase) {
    let store = database.open().await;
    store
        .mark_comment_replied(CommentId(77), 9, "o/r")
        .await
        .unwrap();
    store.close().await;
    let reopened = database.open().await;
    assert_eq!(
        reopened.replied_comment_ids(9, "o/r").await.unwrap(),
        ids(&[77])
    );
}

async fn history_is_oldest_first_and_filtered_by_since(database: TestDatabase) {
    let store = database.open().await;
    store
        .import_replies(&[
            reply(3, 1, "o/r", "2024-03-01T00:00:00Z"),
            reply(1, 1, "o/r", "2024-01-01T00:00:00.000001Z"),
            reply(2, 2, "o/r", "2024-02-01T12:30:00.5Z"),
            reply(4, 1, "o/other", "2024-02-15T00:00:00Z"),
        ])
        .await
        .unwrap();
    let history = store.reply_history("o/r", None).await.unwrap();
    assert_eq!(
        history,
        vec![
            reply(1, 1, "o/r", "2024-01-01T00:00:00.000001Z"),
            reply(2, 2, "o/r", "2024-02-01T12:30:00.5Z"),
            reply(3, 1, "o/r", "2024-03-01T00:00:00Z"),
        ]
    );
    let since = store
        .reply_history("o/r", Some(at("2024-02-01T12:30:00.5Z")))
        .await
        .unwrap();
    let since_ids: Vec<u64> = since.iter().map(|reply| reply.comment_id.0).collect();
    assert_eq!(since_ids, vec![2, 3], "`since` is inclusive");
}

async fn import_is_idempotent_and_counts_what_it_did(database: TestDatabase) {
    let store = database.open().await;
    store
        .mark_comment_replied(CommentId(1), 1, "o/r")
        .await
        .unwrap();
    let records: Vec<CommentReply> = (1..=1200)
        .map(|comment| reply(comment, comment % 7 + 1, "o/r", "2024-05-01T09:30:00Z"))
        .collect();
    let first = store.import_replies(&records).await.unwrap();
    assert_eq!(
        first,
        ImportSummary {
            imported: 1199,
            already_present: 1,
            duplicates_in_input: 0,
        }
    );
    let second = store.import_replies(&records).await.unwrap();
    assert_eq!(
        second,
        ImportSummary {
            imported: 0,
            already_present: 1200,
            duplicates_in_input: 0,
        }
    );
    assert_eq!(store.all_replies().await.unwrap().len(), 1200);
    // The reply recorded live keeps its own time, not the imported one.
    let live = store.reply_history("o/r", None).await.unwrap();
    assert!(
        live.iter().any(|reply| reply.comment_id == CommentId(1)
            && reply.replied_at != at("2024-05-01T09:30:00Z"))
    );
}

async fn duplicates_in_an_import_keep_the_earliest_time(database: TestDatabase) {
    let store = database.open().await;
    // The seed's file tracker appended a record on every reply, duplicates included.
    let summary = store
        .import_replies(&[
            reply(8, 1, "o/r", "2024-05-02T00:00:00Z"),
            reply(8, 1, "O/R", "2024-05-01T00:00:00Z"),
            reply(8, 1, "o/r", "2024-05-03T00:00:00Z"),
        ])
        .await
        .unwrap();
    assert_eq!(
        summary,
        ImportSummary {
            imported: 1,
            already_present: 0,
            duplicates_in_input: 2,
        }
    );
    assert_eq!(
        store.reply_history("o/r", None).await.unwrap(),
        vec![reply(8, 1, "O/R", "2024-05-01T00:00:00Z")]
            .into_iter()
            .map(|reply| CommentReply {
                repository: "o/r".to_owned(),
                ..reply
            })
            .collect::<Vec<_>>()
    );
}

async fn export_then_import_round_trips_across_databases(database: TestDatabase) {
    let store = database.open().await;
    let seed_file = r#"{"replies": [
        {"comment_id": "1001", "pr_number": 7, "replied_at": "2024-05-01T09:30:00.123456",
         "repository_name": "octo/widgets"},
        {"comment_id": "1002", "pr_number": 7, "replied_at": "2024-05-01T09:31:00+02:00",
         "repository_name": "octo/widgets"},
        {"comment_id": "9", "pr_number": 1, "replied_at": "2023-12-31T23:59:59.999999",
         "repository_name": "Octo/Gadgets"}
    ]}"#;
    let parsed = reply_file::parse(seed_file, NaiveTimestamps::Utc).unwrap();
    assert!(parsed.malformed.is_empty());
    store.import_replies(&parsed.replies).await.unwrap();

    let mut exported = Vec::new();
    reply_file::write(&mut exported, &store.all_replies().await.unwrap()).unwrap();
    let exported = String::from_utf8(exported).unwrap();

    // Into a fresh SQLite file (for a PostgreSQL source: the move back).
    let target = sqlite_database();
    let fresh = target.open().await;
    let reparsed = reply_file::parse(&exported, NaiveTimestamps::Local).unwrap();
    assert!(reparsed.malformed.is_empty());
    let summary = fresh.import_replies(&reparsed.replies).await.unwrap();
    assert_eq!(summary.imported, 3);
    assert_eq!(
        fresh.all_replies().await.unwrap(),
        store.all_replies().await.unwrap()
    );
    let mut sorted = parsed.replies.clone();
    sorted.sort_by_key(|reply| (reply.repository.to_ascii_lowercase(), reply.replied_at));
    assert_eq!(fresh.all_replies().await.unwrap(), sorted);

    // And back into the source: nothing new.
    let again = store.import_replies(&reparsed.replies).await.unwrap();
    assert_eq!(again.imported, 0);
    assert_eq!(again.already_present, 3);
}

async fn invalid_arguments_are_rejected_without_writing(database: TestDatabase) {
    let store = database.open().await;
    let error = store
        .mark_comment_replied(CommentId(1), 1, "")
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::InvalidInput { .. }), "{error}");
    let error = store
        .mark_comment_replied(CommentId(u64::MAX), 1, "o/r")
        .await
        .unwrap_err();
    assert!(error.to_string().contains("comment id"), "{error}");
    let error = store
        .import_replies(&[
            reply(1, 1, "o/r", "2024-05-01T00:00:00Z"),
            reply(2, 1, "not a repository", "2024-05-01T00:00:00Z"),
        ])
        .await
        .unwrap_err();
    assert!(error.to_string().contains("repository name"), "{error}");
    assert!(
        store.all_replies().await.unwrap().is_empty(),
        "all or nothing"
    );
}

async fn health_check_reports_the_backend_and_schema(database: TestDatabase) {
    let store: Store = database.open().await;
    let health = store.health_check().await.unwrap();
    assert_eq!(health.schema_version, review_store::SCHEMA_VERSION);
    let expected = match database.kind {
        crate::support::Kind::Sqlite => "sqlite",
        crate::support::Kind::Postgres => "postgres",
    };
    assert_eq!(health.backend, expected);
    assert_eq!(&health.location, store.location());
}
