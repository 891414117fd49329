//! Agent cost sums (a pull request's, a day's) and cost notices, on both
//! databases.

use std::time::Duration;

use chrono::Utc;
use review_store::{AgentPass, JobKind, NewRun, Store};

use crate::support::{TestDatabase, both};

both!(
    a_pull_requests_cost_sums_every_pass_of_every_run,
    a_days_cost_is_split_per_repository_and_summed_overall,
    a_cost_notice_is_recorded_once,
);

fn pass(name: &str, turns: u32, cost: Option<f64>, millis: u64) -> AgentPass {
    AgentPass {
        name: name.to_owned(),
        transcript_path: None,
        session_id: None,
        turns: Some(turns),
        cost_usd: cost,
        duration: Some(Duration::from_millis(millis)),
    }
}

/// Record `agent_pass` for `run`.
async fn record(store: &Store, run: review_store::RunId, agent_pass: &AgentPass) {
    store.record_agent_pass(run, agent_pass).await.unwrap();
}

async fn run(
    store: &Store,
    key: &str,
    repository: &str,
    number: u64,
    kind: JobKind,
) -> review_store::RunId {
    store
        .start_run(&NewRun {
            key,
            review_id: None,
            repository,
            pull_request: number,
            head_sha: "4f2a9c0d",
            kind,
        })
        .await
        .unwrap()
}

fn close(left: f64, right: f64) -> bool {
    (left - right).abs() < 1e-9
}

async fn a_pull_requests_cost_sums_every_pass_of_every_run(database: TestDatabase) {
    let store = database.open().await;
    // Nothing recorded, not even the repository: zero.
    let nothing = store.pull_request_cost("octo/widgets", 7).await.unwrap();
    assert_eq!(nothing, review_store::CostTotal::default());

    let review = run(&store, "review-1", "octo/widgets", 7, JobKind::Review).await;
    record(&store, review, &pass("architecture", 3, Some(0.25), 1_000)).await;
    record(&store, review, &pass("detailed", 5, Some(0.5), 2_000)).await;
    record(&store, review, &pass("verify", 1, Some(0.125), 500)).await;
    let fix = run(&store, "write-1", "Octo/Widgets", 7, JobKind::Write).await;
    record(&store, fix, &pass("code-fix", 9, Some(1.0), 4_000)).await;
    // A pass that died before reporting a cost counts its turns only.
    record(&store, fix, &pass("merge-conflict", 2, None, 100)).await;
    // A retried pass replaces its record: counted once.
    record(&store, review, &pass("detailed", 5, Some(0.5), 2_000)).await;
    // Another pull request, another repository: not counted.
    let other = run(&store, "review-2", "octo/widgets", 8, JobKind::Review).await;
    record(&store, other, &pass("architecture", 4, Some(9.0), 1_000)).await;
    let elsewhere = run(&store, "review-3", "octo/gadgets", 7, JobKind::Review).await;
    record(
        &store,
        elsewhere,
        &pass("architecture", 4, Some(9.0), 1_000),
    )
    .await;

    let total = store.pull_request_cost("OCTO/widgets", 7).await.unwrap();
    assert!(close(total.cost_usd, 1.875), "{total:?}");
    assert_eq!(total.turns, 20);
    assert_eq!(total.passes, 5);
    assert_eq!(total.duration, Duration::from_millis(7_600));
    // The durations read back with the runs.
    let recorded = store.run(fix).await.unwrap().unwrap();
    assert_eq!(recorded.passes[0].duration, Some(Duration::from_secs(4)));
    assert!(store.pull_request_cost("octo/widgets", 0).await.is_ok());
}

async fn a_days_cost_is_split_per_repository_and_summed_overall(database: TestDatabase) {
    let store = database.open().await;
    let today = Utc::now().date_naive();
    let empty = store.day_cost(today).await.unwrap();
    assert!(close(empty.total_usd, 0.0));
    assert!(empty.by_repository.is_empty());

    let first = run(&store, "review-1", "octo/widgets", 7, JobKind::Review).await;
    record(&store, first, &pass("architecture", 3, Some(0.25), 1_000)).await;
    let second = run(&store, "write-1", "octo/widgets", 8, JobKind::Write).await;
    record(&store, second, &pass("code-fix", 3, Some(0.5), 1_000)).await;
    let third = run(&store, "review-2", "octo/gadgets", 1, JobKind::Review).await;
    record(&store, third, &pass("detailed", 3, Some(2.0), 1_000)).await;

    // The database's clock may sit on either side of midnight from ours:
    // the passes are on today or, right at midnight, tomorrow.
    let mut day = store.day_cost(today).await.unwrap();
    if day.by_repository.is_empty() {
        day = store.day_cost(today.succ_opt().unwrap()).await.unwrap();
    }
    assert!(close(day.total_usd, 2.75), "{day:?}");
    assert!(close(day.repository_usd("Octo/Widgets"), 0.75), "{day:?}");
    assert!(close(day.repository_usd("octo/gadgets"), 2.0), "{day:?}");
    assert!(close(day.repository_usd("octo/nothing"), 0.0), "{day:?}");
    // Another day holds none of it.
    let yesterday = store
        .day_cost(today.pred_opt().unwrap().pred_opt().unwrap())
        .await
        .unwrap();
    assert!(yesterday.by_repository.is_empty(), "{yesterday:?}");
}

async fn a_cost_notice_is_recorded_once(database: TestDatabase) {
    let store = database.open().await;
    assert!(
        !store
            .cost_notice_given("octo/widgets", 7, "day-cap:2026-11-26")
            .await
            .unwrap()
    );
    store
        .record_cost_notice("octo/widgets", 7, "day-cap:2026-11-26")
        .await
        .unwrap();
    store
        .record_cost_notice("Octo/Widgets", 7, "day-cap:2026-11-26")
        .await
        .unwrap();
    assert!(
        store
            .cost_notice_given("octo/widgets", 7, "day-cap:2026-11-26")
            .await
            .unwrap()
    );
    assert!(
        !store
            .cost_notice_given("octo/widgets", 7, "day-cap:2026-11-27")
            .await
            .unwrap()
    );
    assert!(
        !store
            .cost_notice_given("octo/widgets", 8, "day-cap:2026-11-26")
            .await
            .unwrap()
    );
    assert!(
        store
            .record_cost_notice("octo/widgets", 7, "")
            .await
            .is_err()
    );
}
