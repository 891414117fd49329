//! Rate limits: `retry-after` is honoured, a spent primary budget that resets
//! too late is a clear error, and the latest budget is exposed.

use std::time::Duration;

use review_github::{
    GitHubClient, GitHubError, RepositoryName, WRITE_SPACING_VARIABLE, WaitReason,
};
use review_testkit::github::{Fault, FaultRule, GithubSim, SimOptions};
use secrecy::SecretString;

use crate::support::{
    app_client, assert_conformant, fixture, fixture_with, installed_app, settings,
    statuses_and_costs, token_client, wait_until,
};

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
    assert!(
        error.to_string().contains(WRITE_SPACING_VARIABLE),
        "names the real variable: {error}"
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

#[tokio::test]
async fn a_secondary_limit_pauses_every_caller_of_the_credential() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    fixture.sim.inject(FaultRule::operation(
        "pulls/get",
        Fault::SecondaryRateLimit { retry_after: 1 },
    ));
    let first = tokio::spawn({
        let client = client.clone();
        let repository = fixture.repository.clone();
        async move { client.get_pull_request(&repository, 1).await }
    });
    wait_until("the first call is told to wait", || {
        client
            .recent_waits()
            .iter()
            .any(|wait| wait.reason == WaitReason::RetryAfter)
    })
    .await;

    // Another task's call, on another route, while the limit is on.
    let labels = client.list_labels(&fixture.repository, 1).await.unwrap();

    assert_eq!(labels, vec!["bot-review-needed"]);
    first.await.unwrap().unwrap();
    let refusal = fixture.sim.requests_for("pulls/get")[0].clone();
    assert_eq!(refusal.status, 403);
    let labels_request = fixture.sim.requests_for("issues/list-labels-on-issue")[0].clone();
    let gap = labels_request.received_at - refusal.received_at;
    assert!(
        gap >= chrono::Duration::milliseconds(950),
        "sent {gap:?} after the refusal, inside its retry-after"
    );
    assert!(client.recent_waits().iter().any(|wait| {
        wait.reason == WaitReason::SharedPause
            && wait.route == "/repos/{owner}/{repo}/issues/{issue_number}/labels"
    }));
}

#[tokio::test]
async fn a_secondary_backoff_carries_over_to_the_next_call_instead_of_restarting() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    fixture.sim.inject(
        FaultRule::operation("pulls/get", Fault::SecondaryRateLimitWithoutRetryAfter).times(2),
    );
    fixture.sim.inject(FaultRule::operation(
        "issues/list-labels-on-issue",
        Fault::SecondaryRateLimitWithoutRetryAfter,
    ));

    client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();
    client.list_labels(&fixture.repository, 1).await.unwrap();

    let backoffs: Vec<Duration> = client
        .recent_waits()
        .iter()
        .filter(|wait| wait.reason == WaitReason::SecondaryBackoff)
        .map(|wait| wait.duration)
        .collect();
    // Test settings start at 50 ms; the second call goes on doubling.
    assert_eq!(
        backoffs,
        vec![
            Duration::from_millis(50),
            Duration::from_millis(100),
            Duration::from_millis(200),
        ]
    );
}

#[tokio::test]
async fn concurrent_requests_stay_within_the_bound() {
    // GitHub allows 100 concurrent requests; this simulator 4, and so does the client.
    let fixture = fixture_with(SimOptions {
        max_concurrent_requests: 4,
        ..SimOptions::default()
    });
    let mut client_settings = settings(
        &fixture.sim,
        review_github::Credentials::PersonalAccessToken(SecretString::from(
            fixture.bot.token.clone(),
        )),
    );
    client_settings.max_concurrent_requests = 4;
    let client = GitHubClient::new(client_settings).unwrap();
    fixture.sim.inject(
        FaultRule::operation("pulls/get", Fault::Hang(Duration::from_millis(100))).times(16),
    );

    let calls = (0..16).map(|_| client.get_pull_request(&fixture.repository, 1));
    let results = futures::future::join_all(calls).await;

    assert!(results.iter().all(Result::is_ok));
    let statuses: Vec<u16> = fixture
        .sim
        .requests_for("pulls/get")
        .iter()
        .map(|record| record.status)
        .collect();
    assert_eq!(statuses, vec![200; 16], "no request was refused");
    assert!(
        fixture.sim.peak_concurrent_requests() <= 4,
        "{}",
        fixture.sim.peak_concurrent_requests()
    );
}

#[tokio::test]
async fn an_app_whose_installation_budget_is_spent_is_not_told_to_use_an_app() {
    let fixture = fixture_with(SimOptions {
        installation_limit: 1,
        ..SimOptions::default()
    });
    let app = installed_app(&fixture);
    let client = app_client(&fixture.sim, &app);
    client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();

    let error = client
        .list_labels(&fixture.repository, 1)
        .await
        .unwrap_err();

    assert!(
        matches!(error, GitHubError::RateLimitExhausted { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(!message.contains("use a GitHub App"), "{message}");
    assert!(message.contains("installation"), "{message}");
}
