//! What CI systems write, written the way they write it: commit statuses from any token,
//! check runs from a GitHub App's installation token (a personal access token is refused
//! with GitHub's message), and the read endpoints reflecting both, by SHA or branch name.
//! Also the smaller operations the next features need: reactions, one issue comment,
//! permissions, pull request commits and comparisons.

use reqwest::Method;
use review_testkit::github::{GithubSim, RepositorySelection};
use serde_json::{Value, json};

use super::conformance::app_jwt;
use super::{fixture, get, send};

/// An installation token of an app installed on `acme`, minted over HTTP with the app's JWT.
async fn installation_token(sim: &GithubSim) -> String {
    let app = sim.create_app("ci").unwrap();
    let installation = sim
        .install_app(&app, "acme", RepositorySelection::All)
        .unwrap();
    let (status, _, minted) = send(
        sim,
        &app_jwt(&app),
        Method::POST,
        &format!("/app/installations/{installation}/access_tokens"),
        &json!({}),
    )
    .await;
    assert_eq!(status, 201, "{minted}");
    minted["token"].as_str().unwrap().to_owned()
}

fn contexts_and_states(statuses: &Value) -> Vec<(String, String)> {
    statuses
        .as_array()
        .unwrap()
        .iter()
        .map(|status| {
            (
                status["context"].as_str().unwrap().to_owned(),
                status["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn statuses_posted_by_ci_show_in_the_combined_status_and_the_list() {
    let fixture = fixture();
    let sim = &fixture.sim;
    let token = &fixture.bot.token;
    let head = fixture.pull.head_sha().unwrap();
    let path = format!("/repos/acme/widgets/statuses/{head}");

    let (status, headers, created) = send(
        sim,
        token,
        Method::POST,
        &path,
        &json!({"state": "pending", "target_url": "https://ci.example.com/1", "description": "building"}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["context"], "default");
    assert_eq!(created["state"], "pending");
    assert_eq!(created["target_url"], "https://ci.example.com/1");
    assert_eq!(created["description"], "building");
    assert_eq!(created["creator"]["login"], "review-bot");
    assert!(headers.contains_key("location"));

    for (context, state) in [
        ("ci/test", "pending"),
        ("ci/test", "failure"),
        ("default", "success"),
    ] {
        let (status, _, body) = send(
            sim,
            token,
            Method::POST,
            &path,
            &json!({"state": state, "context": context}),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }

    // The combined status keeps the newest status of each context; the branch name works too.
    let (status, _, combined) = get(sim, token, "/repos/acme/widgets/commits/feature/status").await;
    assert_eq!(status, 200);
    assert_eq!(combined["sha"], head.as_str());
    assert_eq!(combined["state"], "failure");
    assert_eq!(combined["total_count"], 2);
    let mut latest = contexts_and_states(&combined["statuses"]);
    latest.sort();
    assert_eq!(
        latest,
        [
            ("ci/test".to_owned(), "failure".to_owned()),
            ("default".to_owned(), "success".to_owned())
        ]
    );

    // The list keeps every one, newest first.
    let (status, _, listed) = get(sim, token, "/repos/acme/widgets/commits/feature/statuses").await;
    assert_eq!(status, 200);
    assert_eq!(
        contexts_and_states(&listed),
        [
            ("default", "success"),
            ("ci/test", "failure"),
            ("ci/test", "pending"),
            ("default", "pending")
        ]
        .map(|(context, state)| (context.to_owned(), state.to_owned()))
    );
}

#[tokio::test]
async fn a_status_state_github_does_not_know_is_its_validation_error() {
    let fixture = fixture();
    let head = fixture.pull.head_sha().unwrap();
    let path = format!("/repos/acme/widgets/statuses/{head}");
    for body in [json!({"state": "passed"}), json!({"context": "ci"})] {
        let (status, _, error) =
            send(&fixture.sim, &fixture.bot.token, Method::POST, &path, &body).await;
        assert_eq!(status, 422);
        assert_eq!(error["message"], "Validation Failed");
        assert_eq!(
            error["errors"],
            json!([{"resource": "Status", "field": "state", "code": "custom",
                    "message": "state is not included in the list"}])
        );
    }
    let (status, _, error) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        "/repos/acme/widgets/statuses/0123456789012345678901234567890123456789",
        &json!({"state": "success"}),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(
        error["message"],
        "No commit found for SHA: 0123456789012345678901234567890123456789"
    );
    assert!(fixture.repo.statuses().unwrap().is_empty());
}

#[tokio::test]
async fn check_runs_are_for_github_apps_and_show_for_the_commit() {
    let fixture = fixture();
    let sim = &fixture.sim;
    let head = fixture.pull.head_sha().unwrap();
    let body = json!({"name": "build", "head_sha": head, "status": "in_progress",
                      "details_url": "https://ci.example.com/runs/7"});

    // A personal access token is refused, as GitHub refuses it.
    let (status, _, error) = send(
        sim,
        &fixture.bot.token,
        Method::POST,
        "/repos/acme/widgets/check-runs",
        &body,
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(error["message"], "You must authenticate via a GitHub App.");
    assert!(fixture.repo.check_runs().unwrap().is_empty());

    let app_token = installation_token(sim).await;
    let (status, headers, created) = send(
        sim,
        &app_token,
        Method::POST,
        "/repos/acme/widgets/check-runs",
        &body,
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["status"], "in_progress");
    assert_eq!(created["conclusion"], Value::Null);
    assert_eq!(created["app"]["slug"], "ci");
    assert!(headers.contains_key("location"));
    let id = created["id"].as_u64().unwrap();

    // Completing without a conclusion is refused; with one, the run completes.
    let run_path = format!("/repos/acme/widgets/check-runs/{id}");
    let (status, _, _) = send(
        sim,
        &app_token,
        Method::PATCH,
        &run_path,
        &json!({"status": "completed"}),
    )
    .await;
    assert_eq!(status, 422);
    let (status, _, _) = send(
        sim,
        &fixture.bot.token,
        Method::PATCH,
        &run_path,
        &json!({"conclusion": "failure"}),
    )
    .await;
    assert_eq!(status, 403);
    let (status, _, updated) = send(
        sim,
        &app_token,
        Method::PATCH,
        &run_path,
        &json!({"conclusion": "failure",
                "output": {"title": "2 tests failed", "summary": "see the log"}}),
    )
    .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["status"], "completed");
    assert_eq!(updated["conclusion"], "failure");
    assert_eq!(updated["output"]["title"], "2 tests failed");
    assert!(updated["completed_at"].is_string());

    // Anyone who can read sees it, by id and for the branch.
    let (status, _, fetched) = get(sim, &fixture.bot.token, &run_path).await;
    assert_eq!(status, 200);
    assert_eq!(fetched["conclusion"], "failure");
    let (status, _, listed) = get(
        sim,
        &fixture.bot.token,
        "/repos/acme/widgets/commits/feature/check-runs",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(listed["total_count"], 1);
    assert_eq!(listed["check_runs"][0]["id"], id);
    assert_eq!(
        listed["check_runs"][0]["details_url"],
        "https://ci.example.com/runs/7"
    );

    // A run on a commit that does not exist.
    let (status, _, error) = send(
        sim,
        &app_token,
        Method::POST,
        "/repos/acme/widgets/check-runs",
        &json!({"name": "build", "head_sha": "feature"}),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(error["message"], "No commit found for SHA: feature");
}

#[tokio::test]
async fn reactions_comments_permissions_commits_and_comparisons() {
    let fixture = fixture();
    let sim = &fixture.sim;
    let token = &fixture.bot.token;
    let comment = fixture.pull.comment("alice", "please review").unwrap();
    let path = format!("/repos/acme/widgets/issues/comments/{comment}");

    let (status, _, first) = send(
        sim,
        token,
        Method::POST,
        &format!("{path}/reactions"),
        &json!({"content": "eyes"}),
    )
    .await;
    assert_eq!(status, 201, "{first}");
    let (status, _, again) = send(
        sim,
        token,
        Method::POST,
        &format!("{path}/reactions"),
        &json!({"content": "eyes"}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(again["id"], first["id"]);
    let (status, _, fetched) = get(sim, token, &path).await;
    assert_eq!(status, 200);
    assert_eq!(fetched["body"], "please review");
    assert_eq!(fetched["reactions"]["eyes"], 1);
    assert_eq!(fetched["reactions"]["total_count"], 1);

    fixture.repo.add_collaborator("carol", "maintain").unwrap();
    sim.user("dave");
    let permission = |login: &str| {
        let path = format!("/repos/acme/widgets/collaborators/{login}/permission");
        async move { get(sim, token, &path).await }
    };
    let (_, _, carol) = permission("carol").await;
    assert_eq!(
        (carol["permission"].as_str(), carol["role_name"].as_str()),
        (Some("write"), Some("maintain"))
    );
    let (_, _, dave) = permission("dave").await;
    assert_eq!(dave["permission"], "read");
    let (status, _, _) = permission("nobody-at-all").await;
    assert_eq!(status, 404);

    let (status, _, commits) = get(sim, token, "/repos/acme/widgets/pulls/1/commits").await;
    assert_eq!(status, 200);
    assert_eq!(commits.as_array().unwrap().len(), 1);
    assert_eq!(commits[0]["sha"], fixture.pull.head_sha().unwrap().as_str());

    let (status, _, comparison) =
        get(sim, token, "/repos/acme/widgets/compare/main...feature").await;
    assert_eq!(status, 200);
    assert_eq!(comparison["status"], "ahead");
    assert_eq!(comparison["ahead_by"], 1);
    assert_eq!(comparison["behind_by"], 0);
    assert_eq!(comparison["files"].as_array().unwrap().len(), 2);
    let (_, _, reverse) = get(sim, token, "/repos/acme/widgets/compare/feature...main").await;
    assert_eq!(reverse["status"], "behind");
    let (status, _, _) = get(sim, token, "/repos/acme/widgets/compare/main...nope").await;
    assert_eq!(status, 404);

    let (status, _, repository) = get(sim, token, "/repos/acme/widgets").await;
    assert_eq!(status, 200);
    assert_eq!(repository["full_name"], "acme/widgets");
}
