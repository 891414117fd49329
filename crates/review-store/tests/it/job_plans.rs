//! Job plans, on both databases: saved under the job's plan id, read back
//! whole, replaced by a second save, removed once done; the pull request's
//! plans of the same job under other ids are removed as stale.

use review_store::{JobKind, JobPlanKey};

use crate::support::{TestDatabase, both};

both!(
    a_job_plan_is_saved_read_and_removed,
    stale_plans_of_other_ids_are_removed,
);

fn key(pull_request: u64, job: JobKind, plan_id: &str) -> JobPlanKey<'_> {
    JobPlanKey {
        repository: "Octo/Widgets",
        pull_request,
        job,
        plan_id,
    }
}

async fn a_job_plan_is_saved_read_and_removed(database: TestDatabase) {
    let store = database.open().await;
    let sha = "a".repeat(40);
    let write = |pull_request| key(pull_request, JobKind::Write, &sha);
    assert_eq!(store.job_plan(&write(7)).await.unwrap(), None);
    let plan = r#"{"version":1,"replies":[{"body":"Fixed — ✓ ünïcode"}]}"#;
    store.save_job_plan(&write(7), plan).await.unwrap();
    assert_eq!(
        store.job_plan(&write(7)).await.unwrap().as_deref(),
        Some(plan)
    );
    // The repository name is matched like GitHub's, case-insensitively.
    let other_case = JobPlanKey {
        repository: "octo/widgets",
        ..write(7)
    };
    assert_eq!(
        store.job_plan(&other_case).await.unwrap().as_deref(),
        Some(plan)
    );
    // Another pull request or another job does not see it.
    assert_eq!(store.job_plan(&write(8)).await.unwrap(), None);
    assert_eq!(
        store
            .job_plan(&key(7, JobKind::Review, &sha))
            .await
            .unwrap(),
        None
    );
    // A second save replaces the first.
    store.save_job_plan(&write(7), "{}").await.unwrap();
    assert_eq!(
        store.job_plan(&write(7)).await.unwrap().as_deref(),
        Some("{}")
    );
    store.remove_job_plan(&write(7)).await.unwrap();
    assert_eq!(store.job_plan(&write(7)).await.unwrap(), None);
    // Removing again, or in a repository the store has never seen, is fine.
    store.remove_job_plan(&write(7)).await.unwrap();
    store
        .remove_job_plan(&JobPlanKey {
            repository: "nobody/here",
            ..write(7)
        })
        .await
        .unwrap();
    // Hostile input is refused with a reason, nothing stored.
    let error = store
        .save_job_plan(&write(7), "nul\0inside")
        .await
        .unwrap_err();
    assert!(error.to_string().contains("NUL"), "{error}");
    let error = store
        .save_job_plan(&key(7, JobKind::Write, ""), "{}")
        .await
        .unwrap_err();
    assert!(error.to_string().contains("plan id"), "{error}");
    assert_eq!(store.job_plan(&write(7)).await.unwrap(), None);
}

async fn stale_plans_of_other_ids_are_removed(database: TestDatabase) {
    let store = database.open().await;
    let (first, second, third) = ("1".repeat(40), "2".repeat(40), "3".repeat(40));
    let write = |pull_request, sha| key(pull_request, JobKind::Write, sha);
    store
        .save_job_plan(&write(7, &first), "first")
        .await
        .unwrap();
    store
        .save_job_plan(&write(7, &second), "second")
        .await
        .unwrap();
    store
        .save_job_plan(&write(9, &third), "other pull request")
        .await
        .unwrap();
    store
        .save_job_plan(&key(7, JobKind::Review, "some-review"), "a review")
        .await
        .unwrap();
    assert_eq!(
        store
            .remove_other_job_plans(&write(7, &second))
            .await
            .unwrap(),
        1
    );
    assert_eq!(store.job_plan(&write(7, &first)).await.unwrap(), None);
    for (key, plan) in [
        (write(7, &second), "second"),
        (write(9, &third), "other pull request"),
        (key(7, JobKind::Review, "some-review"), "a review"),
    ] {
        assert_eq!(store.job_plan(&key).await.unwrap().as_deref(), Some(plan));
    }
}
