//! Measures what one review cycle costs in requests and rate-limit budget, per
//! operation, as the simulator's request log records it; prints the table
//! (run with `--nocapture` to see it) and asserts the figures that matter: an
//! unchanged re-poll is free, and nothing is retried or posted twice.

use std::collections::BTreeMap;

use review_github::{GitHubClient, ReviewId, SearchScope};
use review_testkit::github::GithubSim;

use crate::support::{
    Fixture, assert_conformant, fixture, inline, new_review_id, new_thread_id, review_payload,
    token_client, with_thread,
};

const LABELS: [&str; 3] = ["bot-review-needed", "bot-changes-needed", "bot-ci-pending"];

/// `(operation, requests, statuses, budget cost)` per operation since the last clear.
fn phase(sim: &GithubSim, name: &str) -> (usize, u64) {
    let mut by_operation: BTreeMap<String, (usize, BTreeMap<u16, usize>, u64)> = BTreeMap::new();
    for record in sim.requests() {
        let entry = by_operation
            .entry(record.operation_id.clone().unwrap_or(record.path.clone()))
            .or_default();
        entry.0 += 1;
        *entry.1.entry(record.status).or_default() += 1;
        entry.2 += record.cost;
    }
    println!("\n{name}");
    println!("| operation | requests | statuses | budget |");
    println!("| --- | ---: | --- | ---: |");
    let (mut requests, mut cost) = (0, 0);
    for (operation, (count, statuses, spent)) in &by_operation {
        let statuses: Vec<String> = statuses
            .iter()
            .map(|(status, times)| format!("{times}×{status}"))
            .collect();
        println!(
            "| {operation} | {count} | {} | {spent} |",
            statuses.join(" ")
        );
        requests += count;
        cost += spent;
    }
    println!("| **total** | {requests} | | {cost} |");
    sim.clear_requests();
    (requests, cost)
}

async fn poll(client: &GitHubClient) -> Vec<bool> {
    let mut unchanged = Vec::new();
    for label in LABELS {
        let results = client
            .search_pull_requests(&SearchScope::Organization("acme".into()), label)
            .await
            .unwrap();
        unchanged.push(results.unchanged);
    }
    unchanged
}

/// What the review pipeline reads and writes for one pull request.
async fn review_cycle(
    client: &GitHubClient,
    fixture: &Fixture,
    thread_start: u64,
    review_id: ReviewId,
) {
    let repository = &fixture.repository;
    let pull_request = client.get_pull_request(repository, 1).await.unwrap();
    client.get_pull_request_diff(repository, 1).await.unwrap();
    client.list_pull_request_files(repository, 1).await.unwrap();
    client.list_review_comments(repository, 1).await.unwrap();
    client.list_issue_comments(repository, 1).await.unwrap();
    client.list_reviews(repository, 1).await.unwrap();
    let review = review_payload(
        pull_request.head_sha.clone(),
        "Ten findings.",
        Some(review_id),
        (1..=10).map(inline).collect(),
    );
    client
        .post_review(repository, 1, &review, Some(review_id))
        .await
        .unwrap();
    let thread = new_thread_id();
    client
        .reply_to_review_comment(
            repository,
            1,
            thread_start,
            &with_thread("Still open: see the new finding.", thread),
            Some(thread),
        )
        .await
        .unwrap();
    client
        .remove_label(repository, 1, "bot-review-needed")
        .await
        .unwrap();
    client
        .add_labels(repository, 1, &["bot-changes-needed".to_owned()])
        .await
        .unwrap();
    client
        .ci_report(repository, &pull_request.head_sha)
        .await
        .unwrap();
    client
        .get_commit(repository, &pull_request.head_sha)
        .await
        .unwrap();
}

#[tokio::test]
async fn one_review_cycle_costs_what_the_table_says() {
    let fixture = fixture();
    let thread_start = fixture
        .pull
        .review_comment("alice", "src/lib.rs", 3, "Why?")
        .unwrap();
    fixture
        .pull
        .add_check_run("build", "completed", Some("success"))
        .unwrap();
    let client = token_client(&fixture.sim, &fixture.bot.token);

    assert_eq!(poll(&client).await, vec![false, false, false]);
    let (first_poll_requests, first_poll_cost) = phase(&fixture.sim, "First poll (3 labels)");
    assert_eq!(poll(&client).await, vec![true, true, true]);
    let (repoll_requests, repoll_cost) = phase(&fixture.sim, "Unchanged re-poll (3 × 304)");

    let review_id = new_review_id();
    review_cycle(&client, &fixture, thread_start, review_id).await;
    let (cycle_requests, cycle_cost) = phase(&fixture.sim, "Review cycle for one pull request");

    poll(&client).await;
    let (after_requests, after_cost) = phase(&fixture.sim, "Poll after the label swap");

    assert_eq!((first_poll_requests, first_poll_cost), (3, 3));
    assert_eq!(
        (repoll_requests, repoll_cost),
        (3, 0),
        "an unchanged poll is free"
    );
    assert_eq!(after_requests, 3);
    assert_eq!(
        after_cost, 2,
        "two labels' results changed, the third is a 304"
    );
    // 6 reads, review (pre-check + post), reply, 2 label writes, 2 CI lists, commit.
    assert_eq!(cycle_requests, 14);
    assert_eq!(cycle_cost, 13, "the pre-post check of the reviews is a 304");
    assert!(client.recent_waits().is_empty(), "nothing was retried");
    let ours = fixture
        .pull
        .reviews()
        .unwrap()
        .into_iter()
        .filter(|review| review.body.contains(&format!("review::{review_id}")))
        .count();
    assert_eq!(ours, 1);
    assert_conformant(&fixture.sim);
}
