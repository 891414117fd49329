//! Run history and posted-comment fingerprints, on both databases.

use review_store::{AgentPass, Fingerprint, InlineComment, JobKind, NewRun, RunId, StoreError};

use crate::support::{TestDatabase, both};

both!(
    a_run_records_its_passes_and_outcome,
    runs_are_listed_per_pull_request_and_by_recency,
    unknown_runs_are_errors,
    starting_a_run_again_returns_the_same_run,
    recording_a_pass_again_updates_it_in_place,
    two_sessions_record_passes_of_one_run_at_once,
    posted_fingerprints_are_remembered_per_pull_request,
);

fn pass(name: &str, turns: u32, cost: f64) -> AgentPass {
    AgentPass {
        name: name.to_owned(),
        transcript_path: Some(format!("/var/lib/review-bot/transcripts/r1-{name}.json")),
        session_id: Some(format!("session-{name}")),
        turns: Some(turns),
        cost_usd: Some(cost),
        duration: Some(std::time::Duration::from_millis(1500)),
    }
}

async fn a_run_records_its_passes_and_outcome(database: TestDatabase) {
    let store = database.open().await;
    let id = store
        .start_run(&NewRun {
            key: "octo/widgets#42:review:1",
            review_id: Some("0b1c2d3e-review"),
            repository: "octo/widgets",
            pull_request: 42,
            head_sha: "4f2a9c0d",
            kind: JobKind::Review,
        })
        .await
        .unwrap();
    let started = store.run(id).await.unwrap().unwrap();
    assert_eq!(started.outcome, None);
    assert_eq!(started.finished_at, None);
    assert!(started.passes.is_empty());

    store
        .record_agent_pass(id, &pass("architecture", 12, 0.42))
        .await
        .unwrap();
    let failed_early = AgentPass {
        name: "detailed".to_owned(),
        transcript_path: None,
        session_id: None,
        turns: None,
        cost_usd: None,
        duration: None,
    };
    store.record_agent_pass(id, &failed_early).await.unwrap();
    store.finish_run(id, "changes-requested").await.unwrap();

    let run = store.run(id).await.unwrap().unwrap();
    assert_eq!(run.id, id);
    assert_eq!(run.review_id.as_deref(), Some("0b1c2d3e-review"));
    assert_eq!(run.repository, "octo/widgets");
    assert_eq!(run.pull_request, 42);
    assert_eq!(run.head_sha, "4f2a9c0d");
    assert_eq!(run.kind, JobKind::Review);
    assert_eq!(run.outcome.as_deref(), Some("changes-requested"));
    let finished_at = run.finished_at.unwrap();
    assert!(finished_at >= run.started_at);
    assert_eq!(
        run.passes,
        vec![pass("architecture", 12, 0.42), failed_early]
    );
}

async fn runs_are_listed_per_pull_request_and_by_recency(database: TestDatabase) {
    let store = database.open().await;
    let mut ids = Vec::new();
    for (attempt, (pull_request, kind)) in [
        (1, JobKind::Review),
        (1, JobKind::Write),
        (2, JobKind::Review),
        (1, JobKind::Ci),
    ]
    .into_iter()
    .enumerate()
    {
        ids.push(
            store
                .start_run(&NewRun {
                    key: &format!("o/r#{pull_request}:{kind}:{attempt}"),
                    review_id: None,
                    repository: "o/r",
                    pull_request,
                    head_sha: "abc",
                    kind,
                })
                .await
                .unwrap(),
        );
    }
    let on_first: Vec<(RunId, JobKind)> = store
        .runs_for_pull_request("o/r", 1)
        .await
        .unwrap()
        .into_iter()
        .map(|run| (run.id, run.kind))
        .collect();
    assert_eq!(
        on_first,
        vec![
            (ids[0], JobKind::Review),
            (ids[1], JobKind::Write),
            (ids[3], JobKind::Ci)
        ]
    );
    assert!(
        store
            .runs_for_pull_request("o/x", 1)
            .await
            .unwrap()
            .is_empty()
    );
    let recent: Vec<RunId> = store
        .recent_runs(2)
        .await
        .unwrap()
        .into_iter()
        .map(|run| run.id)
        .collect();
    assert_eq!(recent.len(), 2);
    // Started in this order; ties on the clock fall back to the id.
    assert_eq!(recent, vec![ids[3], ids[2]]);
}

async fn unknown_runs_are_errors(database: TestDatabase) {
    let store = database.open().await;
    let missing = RunId(987_654);
    assert_eq!(store.run(missing).await.unwrap(), None);
    let error = store.finish_run(missing, "lgtm").await.unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::UnknownRun {
                run_id: 987_654,
                ..
            }
        ),
        "{error:?}"
    );
    let error = store
        .record_agent_pass(missing, &pass("detailed", 1, 0.0))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::UnknownRun { .. }), "{error:?}");
}

fn new_run(key: &str) -> NewRun<'_> {
    NewRun {
        key,
        review_id: Some("5d7e-review"),
        repository: "octo/widgets",
        pull_request: 7,
        head_sha: "9e8d7c6b",
        kind: JobKind::Review,
    }
}

/// ARCHITECTURE.md: every write is idempotent. A retried start finds the run.
async fn starting_a_run_again_returns_the_same_run(database: TestDatabase) {
    let store = database.open().await;
    let first = store.start_run(&new_run("job-1")).await.unwrap();
    let again = store.start_run(&new_run("job-1")).await.unwrap();
    assert_eq!(again, first);
    assert_eq!(store.recent_runs(10).await.unwrap().len(), 1);
    let other = store.start_run(&new_run("job-2")).await.unwrap();
    assert_ne!(other, first);

    // A key reused for a different run is refused, not silently merged.
    let error = store
        .start_run(&NewRun {
            head_sha: "another",
            ..new_run("job-1")
        })
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::InvalidInput {
                what: "run key",
                ..
            }
        ),
        "{error:?}"
    );
    for key in ["", "line\nbreak"] {
        let error = store.start_run(&new_run(key)).await.unwrap_err();
        assert!(
            matches!(error, StoreError::InvalidInput { .. }),
            "{error:?}"
        );
    }
    assert_eq!(store.recent_runs(10).await.unwrap().len(), 2);
}

async fn recording_a_pass_again_updates_it_in_place(database: TestDatabase) {
    let store = database.open().await;
    let id = store.start_run(&new_run("job-1")).await.unwrap();
    store
        .record_agent_pass(id, &pass("architecture", 3, 0.1))
        .await
        .unwrap();
    store
        .record_agent_pass(id, &pass("detailed", 5, 0.2))
        .await
        .unwrap();
    // A retry of the same record, then a later, fuller record of the first pass.
    store
        .record_agent_pass(id, &pass("detailed", 5, 0.2))
        .await
        .unwrap();
    store
        .record_agent_pass(id, &pass("architecture", 9, 0.3))
        .await
        .unwrap();
    let run = store.run(id).await.unwrap().unwrap();
    assert_eq!(
        run.passes,
        vec![pass("architecture", 9, 0.3), pass("detailed", 5, 0.2)]
    );
}

/// Issue 19, item 8: two sessions (two pools, as two replicas or a retry racing
/// the original) start the same run and record passes of it at the same time.
/// With `MAX(ordinal) + 1` outside a lock, PostgreSQL answered "duplicate key".
async fn two_sessions_record_passes_of_one_run_at_once(database: TestDatabase) {
    const PASSES: usize = 24;
    let stores = [database.open().await, database.open().await];
    let starts = futures::future::join_all(
        stores
            .iter()
            .map(|store| async move { store.start_run(&new_run("raced")).await.unwrap() }),
    )
    .await;
    assert_eq!(starts[0], starts[1], "both sessions name the same run");
    let id = starts[0];

    // Each session records every pass: each name is recorded twice at once.
    let records = stores.iter().flat_map(|store| {
        (0..PASSES).map(move |index| async move {
            store
                .record_agent_pass(id, &pass(&format!("pass-{index}"), 1, 0.0))
                .await
        })
    });
    for result in futures::future::join_all(records).await {
        result.unwrap();
    }
    let run = stores[0].run(id).await.unwrap().unwrap();
    let mut names: Vec<String> = run.passes.into_iter().map(|pass| pass.name).collect();
    names.sort();
    let mut expected: Vec<String> = (0..PASSES).map(|index| format!("pass-{index}")).collect();
    expected.sort();
    assert_eq!(names, expected, "each pass exactly once");
    assert_eq!(stores[0].recent_runs(10).await.unwrap().len(), 1);
}

async fn posted_fingerprints_are_remembered_per_pull_request(database: TestDatabase) {
    let store = database.open().await;
    let posted = [
        InlineComment {
            path: "src/lib.rs",
            line: 10,
            body: "`len` can be zero.\n\n<sub>review::r1 · thread::t1</sub>",
        },
        InlineComment {
            path: "src/main.rs",
            line: 3,
            body: "Unused import.\n\n<sub>review::r1 · thread::t2</sub>",
        },
    ];
    store
        .record_posted_comments("o/r", 5, Some("r1"), &posted)
        .await
        .unwrap();
    // Recording again (a retried post) is harmless.
    store
        .record_posted_comments("o/r", 5, Some("r1"), &posted[..1])
        .await
        .unwrap();

    // The next cycle's findings: one repeat (new footer ids), one reworded, one moved.
    let repeat = Fingerprint::of(&InlineComment {
        path: "src/lib.rs",
        line: 10,
        body: "`len`  can be zero.\n\n<sub>review::r2 · thread::t9</sub>",
    });
    let reworded = Fingerprint::of(&InlineComment {
        path: "src/main.rs",
        line: 3,
        body: "Unused import `std::fmt`.",
    });
    let moved = Fingerprint::of(&InlineComment {
        path: "src/lib.rs",
        line: 11,
        body: "`len` can be zero.",
    });
    let candidates = [repeat, reworded, moved];
    let already = store
        .posted_fingerprints("o/r", 5, &candidates)
        .await
        .unwrap();
    assert_eq!(already, [repeat].into_iter().collect());
    // Scoped to the pull request and the repository.
    assert!(
        store
            .posted_fingerprints("o/r", 6, &candidates)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .posted_fingerprints("o/x", 5, &candidates)
            .await
            .unwrap()
            .is_empty()
    );
}
