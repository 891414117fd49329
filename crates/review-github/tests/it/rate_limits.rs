//! Rate limits: `retry-after` is honoured, a spent primary budget that resets
//! too late is a clear error, and the latest budget is exposed.

use std::time::Duration;

use review_github::{GitHubError, RepositoryName, WaitReason};
use review_testkit::github::{Fault, FaultRule, GithubSim, SimOptions};

use crate::support::{assert_conformant, fixture, statuses_and_costs, token_client};

#[tokio::test]
async fn a_secondary_limit_with_retry_after_is_waited_out_then_retried() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    fixture.sim.inject(FaultRule::operation(
        "pulls/get",
        Fault::SecondaryRateLimit { retry_after: 1 },
    ));

    let pull_request = client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();

    assert_eq!(pull_request.number, 1);
    let log: Vec<u16> = fixture
        .sim
        .requests_for("pulls/get")
        .iter()
        .map(|record| record.status)
        .collect();
    assert_eq!(log, vec![403, 200]);
    let waits = client.recent_waits();
    assert_eq!(waits.len(), 1);
    assert_eq!(waits[0].reason, WaitReason::RetryAfter);
    assert_eq!(
        waits[0].duration,
        Duration::from_secs(1),
        "exactly what retry-after said"
    );
}

#[tokio::test]
async fn a_secondary_limit_without_retry_after_backs_off_exponentially() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    fixture.sim.inject(
        FaultRule::operation("pulls/get", Fault::SecondaryRateLimitWithoutRetryAfter).times(3),
    );

    let pull_request = client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();

    assert_eq!(pull_request.number, 1);
    let log: Vec<u16> = fixture
        .sim
        .requests_for("pulls/get")
        .iter()
        .map(|record| record.status)
        .collect();
    assert_eq!(log, vec![403, 403, 403, 200]);
    let waits: Vec<(WaitReason, Duration)> = client
        .recent_waits()
        .iter()
        .map(|wait| (wait.reason, wait.duration))
        .collect();
    // The test settings start the backoff at 50 ms (a minute by default).
    assert_eq!(
        waits,
        vec![
            (WaitReason::SecondaryBackoff, Duration::from_millis(50)),
            (WaitReason::SecondaryBackoff, Duration::from_millis(100)),
            (WaitReason::SecondaryBackoff, Duration::from_millis(200)),
        ]
    );
}

#[tokio::test]
async fn a_429_on_a_write_is_retried_because_github_did_not_process_it() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    fixture.sim.inject(FaultRule::operation(
        "issues/create-comment",
        Fault::TooManyRequests { retry_after: 0 },
    ));

    let posted = client
        .create_issue_comment(&fixture.repository, 1, "Build failed.", None)
        .await
        .unwrap();

    assert!(!posted.already_existed);
    assert_eq!(
        statuses_and_costs(&fixture.sim, "issues/create-comment")
            .iter()
            .map(|(status, _)| *status)
            .collect::<Vec<_>>(),
        vec![429, 201]
    );
    assert_eq!(fixture.pull.issue_comments().unwrap().len(), 1);
    assert_eq!(client.recent_waits()[0].reason, WaitReason::RetryAfter);
    assert_conformant(&fixture.sim);
}

#[tokio::test]
async fn a_retry_after_longer_than_the_maximum_wait_is_an_error_not_a_sleep() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    fixture.sim.inject(FaultRule::operation(
        "pulls/get",
        Fault::SecondaryRateLimit { retry_after: 3_600 },
    ));

    let error = client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap_err();

    assert!(
        matches!(error, GitHubError::SecondaryRateLimit { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("secondary rate limit"),
        "{error}"
    );
    assert!(client.recent_waits().is_empty());
    assert_eq!(fixture.sim.requests_for("pulls/get").len(), 1);
}

#[tokio::test]
async fn a_spent_primary_budget_says_when_it_resets_and_what_to_do() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    fixture
        .sim
        .set_primary_limit(&fixture.bot.token, 2)
        .unwrap();

    client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();
    client.list_labels(&fixture.repository, 1).await.unwrap();
    let state = client.rate_limit_state();
    let core = state
        .iter()
        .find(|snapshot| snapshot.resource == "core")
        .unwrap();
    assert_eq!((core.limit, core.remaining), (2, 0));

    let error = client
        .list_reviews(&fixture.repository, 1)
        .await
        .unwrap_err();

    let message = error.to_string();
    assert!(
        matches!(error, GitHubError::RateLimitExhausted { .. }),
        "{error:?}"
    );
    assert!(
        message.contains("GitHub rate limit exhausted for this token; resets at")
            && message.contains("reduce poll frequency or use a GitHub App"),
        "{message}"
    );
    assert!(
        fixture.sim.requests_for("pulls/list-reviews").is_empty(),
        "a known-spent budget is not spent again on a refusal"
    );
}

#[tokio::test]
async fn a_secondary_limit_that_never_lifts_exhausts_the_retries() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    fixture.sim.inject(
        FaultRule::operation(
            "issues/list-labels-on-issue",
            Fault::TooManyRequests { retry_after: 0 },
        )
        .times(100),
    );

    let error = client
        .list_labels(&fixture.repository, 1)
        .await
        .unwrap_err();

    assert!(
        matches!(error, GitHubError::SecondaryRateLimit { attempts: 5, .. }),
        "{error:?}"
    );
    assert_eq!(
        fixture
            .sim
            .requests_for("issues/list-labels-on-issue")
            .len(),
        5
    );
}

#[tokio::test]
async fn a_spent_budget_that_resets_soon_is_waited_for_without_a_refusal() {
    let sim = GithubSim::start_with(SimOptions {
        primary_limit: 1,
        primary_window: Duration::from_secs(2),
        ..SimOptions::default()
    })
    .unwrap();
    let bot = sim.user("review-bot");
    sim.repo("acme/widgets")
        .file("README.md", "# widgets\n")
        .create()
        .unwrap()
        .pull_request("feature")
        .add("src/a.rs", "pub fn a() {}\n")
        .label("bot-review-needed")
        .open()
        .unwrap();
    let client = token_client(&sim, &bot.token);
    let repository = RepositoryName::parse("acme/widgets").unwrap();
    client.get_pull_request(&repository, 1).await.unwrap();

    let labels = client.list_labels(&repository, 1).await.unwrap();

    assert_eq!(labels, vec!["bot-review-needed"]);
    let statuses: Vec<u16> = sim.requests().iter().map(|record| record.status).collect();
    assert_eq!(
        statuses,
        vec![200, 200],
        "no request was spent on a refusal"
    );
    let waits = client.recent_waits();
    assert_eq!(waits.len(), 1);
    assert_eq!(waits[0].reason, WaitReason::PrimaryReset);
    assert!(waits[0].duration <= Duration::from_secs(3));
}

#[tokio::test]
async fn the_rate_limit_endpoint_is_free_and_updates_the_state() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);

    let budgets = client
        .get_rate_limit(Some(&fixture.repository))
        .await
        .unwrap();

    let core = budgets
        .iter()
        .find(|budget| budget.resource == "core")
        .unwrap();
    assert_eq!(core.credential, "token");
    assert_eq!(core.limit, 5_000);
    assert!(budgets.iter().any(|budget| budget.resource == "search"));
    assert_eq!(
        statuses_and_costs(&fixture.sim, "rate-limit/get"),
        vec![(200, 0)]
    );
    assert!(
        client
            .rate_limit_state()
            .iter()
            .any(|budget| budget.resource == "search")
    );
}
