//! Files, patches, the diff media type and its limits, commits, CI, search and request
//! validation.

use reqwest::Method;
use review_testkit::github::GithubSim;
use serde_json::json;

use super::{client, fixture, get, send, split};

#[tokio::test]
async fn files_carry_git_patches_statuses_and_paginate() {
    let sim = GithubSim::start().unwrap();
    let user = sim.user("review-bot");
    let mut repo = sim
        .repo("acme/widgets")
        .file("old.txt", "same\ncontent\nhere\n")
        .file("gone.txt", "bye\n");
    for index in 0..70 {
        repo = repo.file(&format!("many/{index:02}.txt"), "one\n");
    }
    let repo = repo.create().unwrap();
    let mut pull = repo
        .pull_request("feature")
        .rename("old.txt", "new.txt")
        .delete("gone.txt")
        .binary("logo.png", &[0x89, b'P', b'N', b'G', 0, 1, 2, 0, 255]);
    for index in 0..70 {
        pull = pull.modify(&format!("many/{index:02}.txt"), "two\n");
    }
    pull.open().unwrap();
    let mut files = Vec::new();
    let mut next = Some(format!(
        "{}/repos/acme/widgets/pulls/1/files?per_page=30",
        sim.api_url()
    ));
    let mut pages = 0;
    while let Some(url) = next {
        let response = client()
            .get(&url)
            .bearer_auth(&user.token)
            .send()
            .await
            .unwrap();
        next = response
            .headers()
            .get("link")
            .and_then(|link| link.to_str().ok())
            .and_then(|link| {
                link.split(',')
                    .find(|part| part.contains("rel=\"next\""))
                    .and_then(|part| part.split(['<', '>']).nth(1))
                    .map(str::to_owned)
            });
        let (status, _, page) = split(response).await;
        assert_eq!(status, 200);
        files.extend(page.as_array().unwrap().clone());
        pages += 1;
    }
    assert_eq!(pages, 3);
    assert_eq!(files.len(), 73);
    let by_name = |name: &str| {
        files
            .iter()
            .find(|file| file["filename"] == name)
            .unwrap()
            .clone()
    };
    let renamed = by_name("new.txt");
    assert_eq!(renamed["status"], "renamed");
    assert_eq!(renamed["previous_filename"], "old.txt");
    assert!(renamed.get("patch").is_none());
    assert_eq!(by_name("gone.txt")["status"], "removed");
    let binary = by_name("logo.png");
    assert_eq!(binary["status"], "added");
    assert!(binary.get("patch").is_none());
    let modified = by_name("many/00.txt");
    assert_eq!(modified["patch"], "@@ -1 +1 @@\n-one\n+two");
    assert_eq!(
        (
            modified["additions"].as_u64(),
            modified["deletions"].as_u64()
        ),
        (Some(1), Some(1))
    );
}

#[tokio::test]
async fn the_diff_media_type_is_gits_diff_and_406_past_the_limits() {
    let fixture = fixture();
    let response = client()
        .get(format!(
            "{}/repos/acme/widgets/pulls/1",
            fixture.sim.api_url()
        ))
        .bearer_auth(&fixture.bot.token)
        .header("accept", "application/vnd.github.diff")
        .send()
        .await
        .unwrap();
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/vnd.github.diff")
    );
    let diff = response.text().await.unwrap();
    assert!(
        diff.starts_with("diff --git a/src/lib.rs b/src/lib.rs\n"),
        "{diff}"
    );
    assert!(diff.contains("+    22\n"));
    assert!(diff.contains("diff --git a/src/new.rs b/src/new.rs\nnew file mode 100644\n"));

    let sim = GithubSim::start_with(review_testkit::github::SimOptions {
        diff_max_files: 2,
        ..Default::default()
    })
    .unwrap();
    let user = sim.user("u");
    let repo = sim.repo("acme/big").file("a", "a\n").create().unwrap();
    repo.pull_request("many")
        .add("x", "x\n")
        .add("y", "y\n")
        .add("z", "z\n")
        .open()
        .unwrap();
    let response = client()
        .get(format!("{}/repos/acme/big/pulls/1", sim.api_url()))
        .bearer_auth(&user.token)
        .header("accept", "application/vnd.github.v3.diff")
        .send()
        .await
        .unwrap();
    let (status, _, error) = split(response).await;
    assert_eq!(status, 406);
    assert_eq!(
        error["message"],
        "Sorry, the diff exceeded the maximum number of files (2). Consider using 'List pull requests files' API or locally cloning the repository instead."
    );
    assert_eq!(error["errors"][0]["code"], "too_large");
    // The files list still works.
    assert_eq!(
        get(&sim, &user.token, "/repos/acme/big/pulls/1/files")
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn combined_status_is_pending_without_statuses_and_checks_are_separate() {
    let fixture = fixture();
    let head = fixture.pull.head_sha().unwrap();
    let status_path = format!("/repos/acme/widgets/commits/{head}/status");
    fixture
        .pull
        .add_check_run("build", "completed", Some("success"))
        .unwrap();
    let (_, _, combined) = get(&fixture.sim, &fixture.bot.token, &status_path).await;
    assert_eq!(combined["state"], "pending");
    assert_eq!(combined["total_count"], 0);
    fixture.pull.add_status("ci/a", "pending").unwrap();
    fixture.pull.add_status("ci/a", "success").unwrap();
    fixture.pull.add_status("ci/b", "success").unwrap();
    let (_, _, combined) = get(&fixture.sim, &fixture.bot.token, &status_path).await;
    assert_eq!(
        (combined["state"].as_str(), combined["total_count"].as_u64()),
        (Some("success"), Some(2))
    );
    fixture.pull.add_status("ci/b", "failure").unwrap();
    let (_, _, combined) = get(&fixture.sim, &fixture.bot.token, &status_path).await;
    assert_eq!(combined["state"], "failure");
    let (_, _, all) = get(
        &fixture.sim,
        &fixture.bot.token,
        &format!("/repos/acme/widgets/commits/{head}/statuses"),
    )
    .await;
    assert_eq!(all.as_array().unwrap().len(), 4);
    fixture
        .pull
        .add_check_run("build", "completed", Some("failure"))
        .unwrap();
    let (_, _, runs) = get(
        &fixture.sim,
        &fixture.bot.token,
        "/repos/acme/widgets/commits/feature/check-runs",
    )
    .await;
    assert_eq!(runs["total_count"], 1, "latest run per name");
    assert_eq!(runs["check_runs"][0]["conclusion"], "failure");
    let (_, _, runs) = get(
        &fixture.sim,
        &fixture.bot.token,
        "/repos/acme/widgets/commits/feature/check-runs?filter=all",
    )
    .await;
    assert_eq!(runs["total_count"], 2);
}

#[tokio::test]
async fn a_commit_reports_its_date() {
    let fixture = fixture();
    let date = chrono::DateTime::parse_from_rfc3339("2024-05-01T10:00:00Z")
        .unwrap()
        .to_utc();
    let sha = fixture
        .pull
        .new_commit()
        .unwrap()
        .modify("src/new.rs", "x\n")
        .date(date)
        .commit()
        .unwrap();
    assert_eq!(fixture.pull.head_sha().unwrap(), sha);
    let (status, _, commit) = get(
        &fixture.sim,
        &fixture.bot.token,
        &format!("/repos/acme/widgets/commits/{sha}"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        commit["commit"]["committer"]["date"],
        "2024-05-01T10:00:00Z"
    );
    assert_eq!(commit["files"][0]["filename"], "src/new.rs");
}

#[tokio::test]
async fn search_understands_the_pollers_qualifiers() {
    let fixture = fixture();
    let second = fixture
        .repo
        .pull_request("other")
        .add("b.txt", "b\n")
        .label("bot review needed")
        .open()
        .unwrap();
    fixture.pull.add_label("bot-review-needed").unwrap();
    let closed = fixture
        .repo
        .pull_request("closed")
        .add("c.txt", "c\n")
        .label("bot-review-needed")
        .open()
        .unwrap();
    closed.close().unwrap();
    let elsewhere = fixture
        .sim
        .repo("other-org/thing")
        .file("a", "a\n")
        .create()
        .unwrap();
    elsewhere
        .pull_request("x")
        .add("b", "b\n")
        .label("bot-review-needed")
        .open()
        .unwrap();
    let search = |query: &str| {
        let url = format!(
            "/search/issues?q={}",
            url::form_urlencoded::byte_serialize(query.as_bytes()).collect::<String>()
        );
        let sim = fixture.sim.clone();
        let token = fixture.bot.token.clone();
        async move {
            let (status, _, result) = get(&sim, &token, &url).await;
            assert_eq!(status, 200, "{result}");
            let mut numbers: Vec<u64> = result["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|item| item["number"].as_u64().unwrap())
                .collect();
            numbers.sort_unstable();
            (result["total_count"].as_u64().unwrap(), numbers)
        }
    };
    assert_eq!(
        search(r#"is:pr is:open label:"bot-review-needed" org:acme"#).await,
        (1, vec![1])
    );
    assert_eq!(
        search("is:pr is:open label:bot-review-needed repo:acme/widgets").await,
        (1, vec![1])
    );
    assert_eq!(
        search(r#"is:pr is:open label:"bot review needed" org:acme"#).await,
        (1, vec![second.number()])
    );
    assert_eq!(
        search("is:pr label:bot-review-needed org:acme").await,
        (2, vec![1, closed.number()])
    );
    assert_eq!(search("is:pr is:open label:bot-review-needed").await.0, 2);
    assert_eq!(search("is:issue is:open org:acme").await.0, 0);
}

#[tokio::test]
async fn malformed_bodies_are_refused_like_github_and_logged() {
    let fixture = fixture();
    let comments = "/repos/acme/widgets/issues/1/comments";
    let (status, _, error) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        comments,
        &json!({"body": 5}),
    )
    .await;
    assert_eq!(status, 422, "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("Invalid request.\n\n")
    );
    let (status, _, _) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        comments,
        &json!({"body": "x", "bodyy": 1}),
    )
    .await;
    assert_eq!(status, 201, "an unknown field is ignored by GitHub…");
    let violations = fixture.sim.request_schema_violations();
    assert_eq!(violations.len(), 2, "{violations:?}");
    assert!(
        violations[1].contains("bodyy"),
        "…but recorded: {violations:?}"
    );
    let response = client()
        .post(format!("{}{comments}", fixture.sim.api_url()))
        .bearer_auth(&fixture.bot.token)
        .body("{not json")
        .send()
        .await
        .unwrap();
    let (status, _, error) = split(response).await;
    assert_eq!(
        (status, error["message"].as_str()),
        (400, Some("Problems parsing JSON"))
    );
}

#[tokio::test]
async fn at_most_3000_files_are_listed() {
    let sim = GithubSim::start().unwrap();
    let user = sim.user("review-bot");
    let repo = sim
        .repo("acme/huge")
        .file("README.md", "huge\n")
        .create()
        .unwrap();
    let mut pull = repo.pull_request("generated");
    for index in 0..3005 {
        pull = pull.add(&format!("generated/{index:04}.txt"), "x\n");
    }
    pull.open().unwrap();
    let (_, _, details) = get(&sim, &user.token, "/repos/acme/huge/pulls/1").await;
    assert_eq!(details["changed_files"], 3005);
    let mut listed = 0;
    for page in 1..=31 {
        let (status, _, files) = get(
            &sim,
            &user.token,
            &format!("/repos/acme/huge/pulls/1/files?per_page=100&page={page}"),
        )
        .await;
        assert_eq!(status, 200);
        listed += files.as_array().unwrap().len();
    }
    assert_eq!(listed, 3000);
    let response = client()
        .get(format!("{}/repos/acme/huge/pulls/1", sim.api_url()))
        .bearer_auth(&user.token)
        .header("accept", "application/vnd.github.diff")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 406, "past 300 files");
}

#[tokio::test]
async fn a_diff_past_the_line_limit_is_406() {
    let sim = GithubSim::start_with(review_testkit::github::SimOptions {
        diff_max_lines: 50,
        ..Default::default()
    })
    .unwrap();
    let user = sim.user("u");
    let repo = sim.repo("acme/long").file("a", "a\n").create().unwrap();
    repo.pull_request("long")
        .add("b", &"line\n".repeat(60))
        .open()
        .unwrap();
    let response = client()
        .get(format!("{}/repos/acme/long/pulls/1", sim.api_url()))
        .bearer_auth(&user.token)
        .header("accept", "application/vnd.github.diff")
        .send()
        .await
        .unwrap();
    let (status, _, error) = split(response).await;
    assert_eq!(status, 406);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("maximum number of lines (50)"),
        "{error}"
    );
}
