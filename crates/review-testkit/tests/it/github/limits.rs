//! Rate limits (primary, secondary, search), `ETag`s and free 304s, and fault injection.

use std::time::Duration;

use reqwest::Method;
use review_testkit::github::{Fault, FaultRule, GithubSim, SimOptions};
use serde_json::json;

use super::{client, fixture, get, send, split};

#[tokio::test]
async fn an_unchanged_read_answers_304_and_costs_nothing() {
    let fixture = fixture();
    let path = "/search/issues?q=is%3Apr+is%3Aopen+label%3A%22bot-review-needed%22+org%3Aacme";
    fixture.pull.add_label("bot-review-needed").unwrap();
    let (status, headers, first) = get(&fixture.sim, &fixture.bot.token, path).await;
    assert_eq!(status, 200);
    assert_eq!(first["total_count"], 1);
    let etag = headers["etag"].to_str().unwrap().to_owned();
    let search_used = fixture
        .sim
        .search_rate_limit(&fixture.bot.token)
        .unwrap()
        .used;
    for _ in 0..3 {
        let response = client()
            .get(format!("{}{path}", fixture.sim.api_url()))
            .bearer_auth(&fixture.bot.token)
            .header("if-none-match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 304);
        assert_eq!(response.headers()["x-ratelimit-resource"], "search");
    }
    assert_eq!(
        fixture
            .sim
            .search_rate_limit(&fixture.bot.token)
            .unwrap()
            .used,
        search_used
    );
    let conditional: Vec<_> = fixture
        .sim
        .requests_for("search/issues-and-pull-requests")
        .into_iter()
        .filter(|request| request.conditional)
        .collect();
    assert_eq!(conditional.len(), 3);
    assert!(
        conditional
            .iter()
            .all(|request| request.status == 304 && request.cost == 0)
    );

    // A change (a new label) changes the answer: the old ETag no longer matches.
    fixture.pull.remove_label("bot-review-needed").unwrap();
    let response = client()
        .get(format!("{}{path}", fixture.sim.api_url()))
        .bearer_auth(&fixture.bot.token)
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    let (status, _, changed) = split(response).await;
    assert_eq!(status, 200);
    assert_eq!(changed["total_count"], 0);
}

#[tokio::test]
async fn the_primary_budget_runs_out_with_githubs_headers() {
    let fixture = fixture();
    fixture
        .sim
        .set_primary_limit(&fixture.bot.token, 3)
        .unwrap();
    for remaining in [2, 1, 0] {
        let (status, headers, _) = get(
            &fixture.sim,
            &fixture.bot.token,
            "/repos/acme/widgets/pulls/1",
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(
            headers["x-ratelimit-remaining"],
            remaining.to_string().as_str()
        );
        assert_eq!(headers["x-ratelimit-limit"], "3");
    }
    let (status, headers, error) = get(
        &fixture.sim,
        &fixture.bot.token,
        "/repos/acme/widgets/pulls/1",
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(headers["x-ratelimit-remaining"], "0");
    assert!(headers.contains_key("x-ratelimit-reset"));
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("API rate limit exceeded for user ID")
    );
    // Another token has its own budget.
    let other = fixture.sim.new_token("review-bot");
    let (status, _, _) = get(&fixture.sim, &other, "/repos/acme/widgets/pulls/1").await;
    assert_eq!(status, 200);
    // The rate-limit endpoint is free and reports the exhausted budget.
    let (status, _, limits) = get(&fixture.sim, &fixture.bot.token, "/rate_limit").await;
    assert_eq!(status, 200);
    assert_eq!(limits["resources"]["core"]["remaining"], 0);
    assert_eq!(limits["rate"]["used"], 3);
}

#[tokio::test]
async fn content_creation_past_the_secondary_limit_answers_403_with_retry_after() {
    let sim = GithubSim::start_with(SimOptions {
        content_creation_per_minute: 3,
        secondary_retry_after: Duration::from_secs(7),
        ..SimOptions::default()
    })
    .unwrap();
    let user = sim.user("review-bot");
    let repo = sim
        .repo("acme/widgets")
        .file("a.txt", "a\n")
        .create()
        .unwrap();
    repo.pull_request("feature")
        .modify("a.txt", "b\n")
        .open()
        .unwrap();
    let comments = "/repos/acme/widgets/issues/1/comments";
    for _ in 0..3 {
        let (status, _, _) = send(
            &sim,
            &user.token,
            Method::POST,
            comments,
            &json!({"body": "hi"}),
        )
        .await;
        assert_eq!(status, 201);
    }
    let (status, headers, error) = send(
        &sim,
        &user.token,
        Method::POST,
        comments,
        &json!({"body": "hi"}),
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(headers["retry-after"], "7");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("You have exceeded a secondary rate limit"),
        "{error}"
    );
    // Reads are not content creation.
    let (status, _, _) = get(&sim, &user.token, comments).await;
    assert_eq!(status, 200);
    assert_eq!(repo.pull(1).unwrap().issue_comments().unwrap().len(), 3);
}

#[tokio::test]
async fn search_has_its_own_budget() {
    let sim = GithubSim::start_with(SimOptions {
        search_limit: 2,
        ..SimOptions::default()
    })
    .unwrap();
    let user = sim.user("review-bot");
    for _ in 0..2 {
        let (status, headers, _) = get(&sim, &user.token, "/search/issues?q=is%3Apr").await;
        assert_eq!(status, 200);
        assert_eq!(headers["x-ratelimit-resource"], "search");
    }
    let (status, _, error) = get(&sim, &user.token, "/search/issues?q=is%3Apr").await;
    assert_eq!(status, 403, "{error}");
    assert_eq!(sim.rate_limit(&user.token).unwrap().used, 0);
}

#[tokio::test]
async fn injected_faults_answer_then_stop() {
    let fixture = fixture();
    let sim = &fixture.sim;
    sim.inject(FaultRule::operation("pulls/get", Fault::ServerError(502)).times(2));
    sim.inject(FaultRule::route(
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}/files",
        Fault::SecondaryRateLimit { retry_after: 3 },
    ));
    sim.inject(FaultRule::operation(
        "pulls/list-reviews",
        Fault::TooManyRequests { retry_after: 1 },
    ));
    for _ in 0..2 {
        let (status, _, _) = get(sim, &fixture.bot.token, "/repos/acme/widgets/pulls/1").await;
        assert_eq!(status, 502);
    }
    let (status, _, _) = get(sim, &fixture.bot.token, "/repos/acme/widgets/pulls/1").await;
    assert_eq!(status, 200);
    let (status, headers, _) =
        get(sim, &fixture.bot.token, "/repos/acme/widgets/pulls/1/files").await;
    assert_eq!(
        (status, headers["retry-after"].to_str().unwrap()),
        (403, "3")
    );
    let (status, headers, _) = get(
        sim,
        &fixture.bot.token,
        "/repos/acme/widgets/pulls/1/reviews",
    )
    .await;
    assert_eq!(
        (status, headers["retry-after"].to_str().unwrap()),
        (429, "1")
    );
    let faulted: Vec<_> = sim
        .requests()
        .into_iter()
        .filter(|request| request.fault.is_some())
        .collect();
    assert_eq!(faulted.len(), 4);
    assert!(faulted.iter().all(|request| request.cost == 0));
}

#[tokio::test]
async fn a_dropped_response_still_performs_the_write() {
    let fixture = fixture();
    fixture.sim.inject(FaultRule::operation(
        "pulls/create-review",
        Fault::DropResponse,
    ));
    let (status, _, _) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        "/repos/acme/widgets/pulls/1/reviews",
        &json!({"event": "COMMENT", "body": "review::1"}),
    )
    .await;
    assert_eq!(status, 502);
    assert_eq!(
        fixture.pull.reviews().unwrap().len(),
        1,
        "the review landed"
    );
}

#[tokio::test]
async fn a_hang_outlasts_the_client_timeout_and_the_write_lands() {
    let fixture = fixture();
    fixture.sim.inject(FaultRule::operation(
        "issues/create-comment",
        Fault::Hang(Duration::from_millis(1500)),
    ));
    let timed_out = reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap()
        .post(format!(
            "{}/repos/acme/widgets/issues/1/comments",
            fixture.sim.api_url()
        ))
        .bearer_auth(&fixture.bot.token)
        .json(&json!({"body": "slow"}))
        .send()
        .await;
    assert!(timed_out.unwrap_err().is_timeout());
    // The server finishes the request after the client gave up; wait for its
    // log entry (the bound only matters when something is wrong).
    let deadline = tokio::time::Instant::now() + Duration::from_mins(1);
    while fixture.sim.requests_for("issues/create-comment").is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the hung request never finished"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        fixture.sim.requests_for("issues/create-comment")[0].status,
        201
    );
    assert_eq!(fixture.pull.issue_comments().unwrap().len(), 1);
}
