//! Conditional requests: an unchanged poll or PR read is a 304 that costs no
//! rate-limit budget and is served from the bounded cache.

use review_github::{PullRequestDiff, SearchScope};

use crate::support::{assert_conformant, fixture, statuses_and_costs, token_client};

#[tokio::test]
async fn an_unchanged_poll_is_a_free_304() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let scope = SearchScope::Organization("acme".into());

    let first = client
        .search_pull_requests(&scope, "bot-review-needed")
        .await
        .unwrap();
    let budget_after_first = fixture.sim.search_rate_limit(&fixture.bot.token).unwrap();
    let second = client
        .search_pull_requests(&scope, "bot-review-needed")
        .await
        .unwrap();
    let budget_after_second = fixture.sim.search_rate_limit(&fixture.bot.token).unwrap();

    assert_eq!(first.hits.len(), 1);
    assert_eq!(first.hits[0].repository, fixture.repository);
    assert_eq!(first.hits[0].number, 1);
    assert!(!first.unchanged);
    assert_eq!(second.hits, first.hits);
    assert!(second.unchanged);
    assert_eq!(
        statuses_and_costs(&fixture.sim, "search/issues-and-pull-requests"),
        vec![(200, 1), (304, 0)]
    );
    assert_eq!(budget_after_second.remaining, budget_after_first.remaining);
    let conditional = fixture.sim.requests_for("search/issues-and-pull-requests");
    assert!(!conditional[0].conditional && conditional[1].conditional);
    assert_conformant(&fixture.sim);
}

#[tokio::test]
async fn a_changed_poll_is_answered_fresh() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let scope = SearchScope::Organization("acme".into());
    client
        .search_pull_requests(&scope, "bot-review-needed")
        .await
        .unwrap();

    fixture.pull.remove_label("bot-review-needed").unwrap();
    let after = client
        .search_pull_requests(&scope, "bot-review-needed")
        .await
        .unwrap();

    assert!(after.hits.is_empty());
    assert!(!after.unchanged);
    assert_eq!(
        statuses_and_costs(&fixture.sim, "search/issues-and-pull-requests"),
        vec![(200, 1), (200, 1)]
    );
}

#[tokio::test]
async fn pull_request_reads_and_the_diff_revalidate_for_free() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);

    let pull_request = client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();
    let again = client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();
    let diff = client
        .get_pull_request_diff(&fixture.repository, 1)
        .await
        .unwrap();
    let diff_again = client
        .get_pull_request_diff(&fixture.repository, 1)
        .await
        .unwrap();

    assert_eq!(pull_request, again);
    assert_eq!(pull_request.head_sha, fixture.pull.head_sha().unwrap());
    assert_eq!(pull_request.head_branch, "feature");
    assert_eq!(pull_request.base_branch, "main");
    assert_eq!(pull_request.labels, vec!["bot-review-needed".to_owned()]);
    let PullRequestDiff::Unified(text) = &diff else {
        panic!("expected the unified diff, got {diff:?}");
    };
    assert!(text.contains("+line 50 changed"));
    assert_eq!(diff, diff_again);
    assert_eq!(
        statuses_and_costs(&fixture.sim, "pulls/get"),
        vec![(200, 1), (304, 0), (200, 1), (304, 0)],
        "the JSON and the diff are cached separately"
    );
    let (entries, bytes) = client.conditional_cache_usage();
    assert_eq!(entries, 2);
    assert!(bytes > text.len());
}
