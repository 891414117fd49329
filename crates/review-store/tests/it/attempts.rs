//! Job attempts, on both databases: counting failures, backoff by the
//! database's clock, hand-over, clearing, and many tasks failing at once.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use review_store::{JobKey, JobKind, StoreError};

use crate::support::{TestDatabase, both};

both!(
    a_first_failure_creates_the_record,
    failures_count_up_and_the_backoff_follows_the_count,
    concurrent_failures_are_each_counted,
    each_head_kind_and_pull_request_has_its_own_record,
    a_hand_over_is_recorded_once_and_kept,
    clearing_forgets_the_record,
    the_gauge_counts_only_records_waiting_for_their_retry,
    a_huge_error_is_trimmed_on_a_character_boundary,
    an_overlong_backoff_is_clamped_to_a_year,
    invalid_keys_are_rejected,
);

const MINUTE: Duration = Duration::from_mins(1);
/// Slack for the time between the database's answer and the next read.
const SLACK: Duration = Duration::from_secs(30);

fn key(head_sha: &str) -> JobKey<'_> {
    JobKey {
        repository: "octo/widgets",
        pull_request: 42,
        kind: JobKind::Review,
        head_sha,
    }
}

/// One more minute of backoff for each failure.
fn linear(failures: u32) -> Duration {
    MINUTE * failures
}

/// Asserts `actual` is `expected`, or at most [`SLACK`] less (time has passed
/// since the retry was scheduled).
#[track_caller]
fn assert_about(actual: Duration, expected: Duration) {
    assert!(
        actual <= expected && actual + SLACK >= expected,
        "{actual:?} is not about {expected:?}"
    );
}

async fn a_first_failure_creates_the_record(database: TestDatabase) {
    let store = database.open().await;
    assert_eq!(store.job_attempts(&key("abc123")).await.unwrap(), None);
    let asked = Mutex::new(Vec::new());
    let attempts = store
        .record_job_failure(&key("abc123"), "claude exited with status 1", |failures| {
            asked.lock().unwrap().push(failures);
            linear(failures)
        })
        .await
        .unwrap();
    assert_eq!(
        *asked.lock().unwrap(),
        [1],
        "backoff asked for the new count"
    );
    assert_eq!(attempts.repository, "octo/widgets");
    assert_eq!(attempts.pull_request, 42);
    assert_eq!(attempts.kind, JobKind::Review);
    assert_eq!(attempts.head_sha, "abc123");
    assert_eq!(attempts.failures, 1);
    assert_eq!(
        attempts.last_error.as_deref(),
        Some("claude exited with status 1")
    );
    assert_about(attempts.retry_in, MINUTE);
    assert_eq!(attempts.handed_over_at, None);

    let read = store.job_attempts(&key("abc123")).await.unwrap().unwrap();
    assert_about(read.retry_in, MINUTE);
    assert_eq!(
        read,
        review_store::JobAttempts {
            retry_in: read.retry_in,
            ..attempts
        }
    );
    // The repository is case-insensitive, like GitHub's.
    let shouted = store
        .job_attempts(&JobKey {
            repository: "OCTO/Widgets",
            ..key("abc123")
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(shouted.failures, 1);
}

async fn failures_count_up_and_the_backoff_follows_the_count(database: TestDatabase) {
    let store = database.open().await;
    for (failure, error) in (1..=3).zip(["first", "second", "third"]) {
        let attempts = store
            .record_job_failure(&key("abc123"), error, linear)
            .await
            .unwrap();
        assert_eq!(attempts.failures, failure);
        assert_eq!(attempts.last_error.as_deref(), Some(error));
        assert_about(attempts.retry_in, linear(failure));
    }
    let read = store.job_attempts(&key("abc123")).await.unwrap().unwrap();
    assert_eq!(read.failures, 3);
    assert_eq!(read.last_error.as_deref(), Some("third"));
    assert_about(read.retry_in, 3 * MINUTE);

    // No backoff: due at once.
    let due = store
        .record_job_failure(&key("abc123"), "fourth", |_| Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(due.failures, 4);
    assert_eq!(due.retry_in, Duration::ZERO);
    assert!(due.updated_at >= read.updated_at);
}

async fn concurrent_failures_are_each_counted(database: TestDatabase) {
    const TASKS: u32 = 8;
    // Two stores, each with its own pool, as two replicas would have.
    let stores = [database.open().await, database.open().await];
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let store = stores[task as usize % 2].clone();
            tokio::spawn(async move {
                store
                    .record_job_failure(&key("abc123"), &format!("task {task}"), linear)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut counts = BTreeSet::new();
    for task in tasks {
        let attempts = task.await.unwrap();
        // Each backoff was computed from the count it was stored with.
        assert_about(attempts.retry_in, linear(attempts.failures));
        counts.insert(attempts.failures);
    }
    assert_eq!(
        counts,
        (1..=TASKS).collect(),
        "every caller saw its own count"
    );
    let read = stores[0]
        .job_attempts(&key("abc123"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.failures, TASKS);
    assert_about(read.retry_in, linear(TASKS));
}

async fn each_head_kind_and_pull_request_has_its_own_record(database: TestDatabase) {
    let store = database.open().await;
    let keys = [
        key("abc123"),
        key("def456"),
        JobKey {
            kind: JobKind::Write,
            ..key("abc123")
        },
        JobKey {
            kind: JobKind::Ci,
            ..key("abc123")
        },
        JobKey {
            pull_request: 43,
            ..key("abc123")
        },
        JobKey {
            repository: "octo/gadgets",
            ..key("abc123")
        },
    ];
    for (index, key) in keys.iter().enumerate() {
        for _ in 0..=index {
            store
                .record_job_failure(key, "failed", linear)
                .await
                .unwrap();
        }
    }
    for (index, key) in keys.iter().enumerate() {
        let attempts = store.job_attempts(key).await.unwrap().unwrap();
        assert_eq!(attempts.failures as usize, index + 1, "{key:?}");
        assert_eq!(attempts.head_sha, key.head_sha);
        assert_eq!(attempts.kind, key.kind);
    }
    // Clearing one leaves the others.
    assert!(store.clear_job_attempts(&keys[0]).await.unwrap());
    assert_eq!(store.job_attempts(&keys[0]).await.unwrap(), None);
    assert_eq!(
        store
            .job_attempts(&keys[1])
            .await
            .unwrap()
            .unwrap()
            .failures,
        2
    );
}

async fn a_hand_over_is_recorded_once_and_kept(database: TestDatabase) {
    let store = database.open().await;
    assert!(!store.record_handed_over(&key("abc123")).await.unwrap());
    let failed = store
        .record_job_failure(&key("abc123"), "failed", linear)
        .await
        .unwrap();
    assert!(store.record_handed_over(&key("abc123")).await.unwrap());
    let handed = store.job_attempts(&key("abc123")).await.unwrap().unwrap();
    let handed_over_at = handed.handed_over_at.expect("handed over");
    assert!(handed_over_at >= failed.updated_at);
    assert_eq!(handed.updated_at, handed_over_at);
    assert_eq!(handed.failures, 1);

    // A retried hand-over keeps the first time.
    assert!(store.record_handed_over(&key("abc123")).await.unwrap());
    let again = store.job_attempts(&key("abc123")).await.unwrap().unwrap();
    assert_eq!(again.handed_over_at, Some(handed_over_at));
    assert_eq!(again.updated_at, handed.updated_at);

    // A later failure counts, and does not undo the hand-over.
    let later = store
        .record_job_failure(&key("abc123"), "failed again", linear)
        .await
        .unwrap();
    assert_eq!(later.failures, 2);
    assert_eq!(later.handed_over_at, Some(handed_over_at));
    // Other heads are not handed over.
    assert!(!store.record_handed_over(&key("def456")).await.unwrap());
}

async fn clearing_forgets_the_record(database: TestDatabase) {
    let store = database.open().await;
    // Nothing to clear, for a repository never seen or a record never made.
    let unseen = JobKey {
        repository: "never/seen",
        ..key("abc123")
    };
    assert!(!store.clear_job_attempts(&unseen).await.unwrap());
    assert_eq!(store.job_attempts(&unseen).await.unwrap(), None);
    assert!(!store.record_handed_over(&unseen).await.unwrap());
    assert!(!store.clear_job_attempts(&key("abc123")).await.unwrap());

    for _ in 0..3 {
        store
            .record_job_failure(&key("abc123"), "failed", linear)
            .await
            .unwrap();
    }
    store.record_handed_over(&key("abc123")).await.unwrap();
    assert!(store.clear_job_attempts(&key("abc123")).await.unwrap());
    assert_eq!(store.job_attempts(&key("abc123")).await.unwrap(), None);
    assert!(!store.clear_job_attempts(&key("abc123")).await.unwrap());

    // After a human asked for a retry, the count starts again.
    let fresh = store
        .record_job_failure(&key("abc123"), "failed", linear)
        .await
        .unwrap();
    assert_eq!(fresh.failures, 1);
    assert_eq!(fresh.handed_over_at, None);
}

async fn the_gauge_counts_only_records_waiting_for_their_retry(database: TestDatabase) {
    let store = database.open().await;
    assert_eq!(store.job_attempts_backing_off().await.unwrap(), 0);
    let hour = |_| Duration::from_hours(1);
    for head in ["waiting-1", "waiting-2", "handed-over"] {
        store
            .record_job_failure(&key(head), "failed", hour)
            .await
            .unwrap();
    }
    store
        .record_job_failure(&key("due-now"), "failed", |_| Duration::ZERO)
        .await
        .unwrap();
    // Another repository counts too.
    store
        .record_job_failure(
            &JobKey {
                repository: "octo/gadgets",
                ..key("waiting-3")
            },
            "failed",
            hour,
        )
        .await
        .unwrap();
    store.record_handed_over(&key("handed-over")).await.unwrap();
    assert_eq!(store.job_attempts_backing_off().await.unwrap(), 3);
    store.clear_job_attempts(&key("waiting-1")).await.unwrap();
    assert_eq!(store.job_attempts_backing_off().await.unwrap(), 2);
}

async fn a_huge_error_is_trimmed_on_a_character_boundary(database: TestDatabase) {
    let store = database.open().await;
    // A megabyte of one-, two-, three- and four-byte characters, starting one
    // byte in so no multiple of four lands on a boundary by luck.
    let mut error = String::from("x");
    while error.len() < 1 << 20 {
        error.push_str("aé€😀");
    }
    let attempts = store
        .record_job_failure(&key("abc123"), &error, linear)
        .await
        .unwrap();
    let stored = attempts.last_error.unwrap();
    assert!(stored.len() <= 4096, "{} bytes", stored.len());
    assert!(stored.len() > 4096 - 4, "{} bytes", stored.len());
    assert!(error.is_char_boundary(stored.len()));
    assert!(error.starts_with(&stored));
    let read = store.job_attempts(&key("abc123")).await.unwrap().unwrap();
    assert_eq!(read.last_error.as_deref(), Some(stored.as_str()));

    // Agent output can hold NUL, which PostgreSQL's text cannot.
    let attempts = store
        .record_job_failure(&key("abc123"), "exit\0status 1", linear)
        .await
        .unwrap();
    assert_eq!(attempts.last_error.as_deref(), Some("exit\u{FFFD}status 1"));
}

async fn an_overlong_backoff_is_clamped_to_a_year(database: TestDatabase) {
    let store = database.open().await;
    let year = Duration::from_hours(365 * 24);
    for backoff in [Duration::MAX, Duration::from_hours(1_000_000 * 24), year] {
        let attempts = store
            .record_job_failure(&key("abc123"), "failed", |_| backoff)
            .await
            .unwrap();
        assert_about(attempts.retry_in, year);
    }
    assert_about(
        store
            .job_attempts(&key("abc123"))
            .await
            .unwrap()
            .unwrap()
            .retry_in,
        year,
    );
}

async fn invalid_keys_are_rejected(database: TestDatabase) {
    let store = database.open().await;
    let long_sha = "a".repeat(300);
    let invalid = [
        key(""),
        key("abc\n123"),
        key(&long_sha),
        JobKey {
            repository: "",
            ..key("abc123")
        },
        JobKey {
            repository: "octo widgets",
            ..key("abc123")
        },
        JobKey {
            pull_request: u64::MAX,
            ..key("abc123")
        },
    ];
    for key in &invalid {
        let errors = [
            store
                .record_job_failure(key, "failed", linear)
                .await
                .unwrap_err(),
            store.job_attempts(key).await.unwrap_err(),
            store.record_handed_over(key).await.unwrap_err(),
            store.clear_job_attempts(key).await.unwrap_err(),
        ];
        for error in errors {
            assert!(
                matches!(error, StoreError::InvalidInput { .. }),
                "{key:?}: {error:?}"
            );
        }
    }
    assert_eq!(store.job_attempts_backing_off().await.unwrap(), 0);
}
