//! The `github-sim` binary, run as a separate process and probed from outside.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["-c", "user.name=Dev", "-c", "user.email=dev@example.com"])
        .args(args)
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// CI reports the way the README shows: a status with the token, a check run with the CI
/// app's installation token, both read back by branch name.
async fn ci_reports_by_branch(api_url: &str, token: &str, ci_token: &str, head: &str) {
    let http = reqwest::Client::new();
    let posted = http
        .post(format!("{api_url}/repos/acme/widgets/statuses/{head}"))
        .bearer_auth(token)
        .json(&serde_json::json!({"state": "failure", "context": "ci/test"}))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status().as_u16(), 201);
    let posted = http
        .post(format!("{api_url}/repos/acme/widgets/check-runs"))
        .bearer_auth(ci_token)
        .json(&serde_json::json!({"name": "build", "head_sha": head, "conclusion": "success"}))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status().as_u16(), 201);
    let read = |path: &str| {
        let request = http.get(format!("{api_url}{path}")).bearer_auth(token);
        async move { request.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let combined = read("/repos/acme/widgets/commits/feature/status").await;
    assert_eq!(combined["state"], "failure");
    let runs = read("/repos/acme/widgets/commits/feature/check-runs").await;
    assert_eq!(runs["check_runs"][0]["conclusion"], "success");
}

#[tokio::test]
async fn github_sim_serves_a_local_repository_with_one_pull_request() {
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("source");
    std::fs::create_dir(&source).unwrap();
    git(&source, &["init", "--quiet", "--initial-branch=main"]);
    std::fs::write(source.join("lib.rs"), "fn a() {}\n").unwrap();
    git(&source, &["add", "."]);
    git(&source, &["commit", "--quiet", "-m", "base"]);
    git(&source, &["checkout", "--quiet", "-b", "feature"]);
    std::fs::write(source.join("lib.rs"), "fn a() {}\nfn b() {}\n").unwrap();
    git(&source, &["commit", "--quiet", "-am", "add b"]);

    let child = Command::new(env!("CARGO_BIN_EXE_github-sim"))
        .args([
            "--repo",
            source.to_str().unwrap(),
            "--head",
            "feature",
            "--base",
            "main",
        ])
        .args(["--label", "bot-review-needed"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("github-sim starts");
    let mut server = Server(child);
    let mut line = String::new();
    BufReader::new(server.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ready: Value = serde_json::from_str(&line).expect("one JSON line");
    let api_url = ready["api_url"].as_str().unwrap();
    let token = ready["token"].as_str().unwrap();
    let clone_url = ready["clone_url"].as_str().unwrap();
    assert!(api_url.starts_with("http://127.0.0.1:"));
    assert_eq!(clone_url, format!("{api_url}/acme/widgets.git"));

    let pull: Value = reqwest::Client::new()
        .get(format!("{api_url}/repos/acme/widgets/pulls/1"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(pull["head"]["ref"], "feature");
    assert_eq!(pull["base"]["ref"], "main");
    assert_eq!(pull["labels"][0]["name"], "bot-review-needed");
    assert_eq!(pull["changed_files"], 1);

    let head = pull["head"]["sha"].as_str().unwrap();
    ci_reports_by_branch(api_url, token, ready["ci_token"].as_str().unwrap(), head).await;

    git(
        work.path(),
        &[
            "clone", "--quiet", "--branch", "feature", clone_url, "clone",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(work.path().join("clone/lib.rs")).unwrap(),
        "fn a() {}\nfn b() {}\n"
    );
}

#[test]
fn github_sim_explains_a_missing_branch() {
    let work = tempfile::tempdir().unwrap();
    git(work.path(), &["init", "--quiet", "--initial-branch=main"]);
    std::fs::write(work.path().join("a"), "a\n").unwrap();
    git(work.path(), &["add", "."]);
    git(work.path(), &["commit", "--quiet", "-m", "a"]);
    let output = Command::new(env!("CARGO_BIN_EXE_github-sim"))
        .args([
            "--repo",
            work.path().to_str().unwrap(),
            "--head",
            "nope",
            "--base",
            "main",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("nope"), "{stderr}");
    assert!(output.stdout.is_empty());
}

/// A local repository with `main` and a branch per `(name, file, contents)`, each one commit
/// ahead of `main`.
fn source_repository(dir: &Path, branches: &[(&str, &str, &str)]) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "--quiet", "--initial-branch=main"]);
    std::fs::write(dir.join("README.md"), "# project\n").unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "--quiet", "-m", "base"]);
    for (branch, file, contents) in branches {
        git(dir, &["checkout", "--quiet", "-b", branch, "main"]);
        std::fs::write(dir.join(file), contents).unwrap();
        git(dir, &["add", "."]);
        git(dir, &["commit", "--quiet", "-m", branch]);
    }
    git(dir, &["checkout", "--quiet", "main"]);
}

/// Starts `github-sim --scenario FILE` and reads its ready line.
fn start_scenario(file: &Path) -> (Server, Value) {
    let child = Command::new(env!("CARGO_BIN_EXE_github-sim"))
        .arg("--scenario")
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("github-sim starts");
    let mut server = Server(child);
    let mut line = String::new();
    BufReader::new(server.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ready = serde_json::from_str(&line).expect("one JSON line");
    (server, ready)
}

#[tokio::test]
#[allow(clippy::too_many_lines)] // One scenario, checked from the ready line to a clone.
async fn github_sim_serves_a_scenario_of_several_repositories_and_pull_requests() {
    let work = tempfile::tempdir().unwrap();
    source_repository(
        &work.path().join("widgets"),
        &[
            ("feature-a", "a.rs", "fn a() {}\n"),
            ("feature-b", "b.rs", "fn b() {}\n"),
        ],
    );
    let gadgets = work.path().join("elsewhere/gadgets");
    source_repository(&gadgets, &[("fix", "fix.rs", "fn fix() {}\n")]);
    let scenario = work.path().join("scenario.json");
    std::fs::write(
        &scenario,
        serde_json::json!({"repositories": [
            {"name": "acme/widgets", "path": "widgets",
             "pull_requests": [
                {"head": "feature-a", "base": "main", "title": "Add a",
                 "labels": ["bot-review-needed"]},
                {"head": "feature-b", "labels": ["bot-ci-pending"],
                 "statuses": [{"context": "ci/test", "state": "success"}]}]},
            {"name": "globex/gadgets", "path": gadgets, "pull_requests": [
                {"head": "fix", "author": "dev", "draft": true}]}
        ]})
        .to_string(),
    )
    .unwrap();
    let (_server, ready) = start_scenario(&scenario);
    let api_url = ready["api_url"].as_str().unwrap();
    let token = ready["token"].as_str().unwrap();
    assert_eq!(ready["clone_url"], format!("{api_url}/acme/widgets.git"));
    assert_eq!(ready["ci_token"], ready["repositories"][0]["ci_token"]);
    let pulls = &ready["repositories"][0]["pull_requests"];
    let fix_pull = &ready["repositories"][1]["pull_requests"][0];
    let summary = |pull: &Value| serde_json::json!([pull["number"], pull["head"], pull["author"]]);
    assert_eq!(
        summary(&pulls[0]),
        serde_json::json!([1, "feature-a", "octocat"])
    );
    assert_eq!(
        summary(&pulls[1]),
        serde_json::json!([2, "feature-b", "octocat"])
    );
    assert_eq!(summary(fix_pull), serde_json::json!([1, "fix", "dev"]));
    assert_eq!(ready["person_token"], pulls[0]["person_token"]);
    assert_eq!(ready["repositories"][1]["name"], "globex/gadgets");
    let http = reqwest::Client::new();
    let get = |path: &str| {
        let request = http.get(format!("{api_url}{path}")).bearer_auth(token);
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status().as_u16(), 200, "{}", response.url());
            response.json::<Value>().await.unwrap()
        }
    };
    let a = get("/repos/acme/widgets/pulls/1").await;
    assert_eq!(
        (&a["title"], &a["head"]["ref"], &a["base"]["ref"]),
        (&"Add a".into(), &"feature-a".into(), &"main".into())
    );
    assert_eq!(a["labels"][0]["name"], "bot-review-needed");
    let b = get("/repos/acme/widgets/pulls/2").await;
    assert_eq!(b["base"]["ref"], "main");
    assert_eq!(b["labels"][0]["name"], "bot-ci-pending");
    let status = get("/repos/acme/widgets/commits/feature-b/status").await;
    assert_eq!(
        (&status["state"], &status["total_count"]),
        (&"success".into(), &1.into())
    );
    assert_eq!(status["statuses"][0]["context"], "ci/test");
    let status = get("/repos/acme/widgets/commits/feature-a/status").await;
    assert_eq!(status["total_count"], 0);
    let fix = get("/repos/globex/gadgets/pulls/1").await;
    assert_eq!(fix["user"]["login"], "dev");
    assert_eq!(fix["draft"], true);
    assert_eq!(fix["changed_files"], 1);
    // What the daemon's poller asks: both labelled pull requests, across repositories.
    let found =
        get("/search/issues?q=is%3Apr+is%3Aopen+label%3Abot-review-needed%2Cbot-ci-pending").await;
    assert_eq!(found["total_count"], 2);

    a_person_acts_through_their_token(api_url, token, &ready, fix_pull).await;

    // The second owner has its own CI installation.
    let posted = http
        .post(format!("{api_url}/repos/globex/gadgets/check-runs"))
        .bearer_auth(ready["repositories"][1]["ci_token"].as_str().unwrap())
        .json(&serde_json::json!({"name": "build", "head_sha": fix["head"]["sha"], "conclusion": "success"}))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status().as_u16(), 201);

    git(
        work.path(),
        &[
            "clone",
            "--quiet",
            "--branch",
            "fix",
            ready["repositories"][1]["clone_url"].as_str().unwrap(),
            "clone",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(work.path().join("clone/fix.rs")).unwrap(),
        "fn fix() {}\n"
    );
}

/// What a test does as a person (issue 25): each token says who it is, and the pull request's
/// author closes it (it leaves the poller's search) and reopens it.
async fn a_person_acts_through_their_token(
    api_url: &str,
    token: &str,
    ready: &Value,
    fix_pull: &Value,
) {
    let http = reqwest::Client::new();
    let get = |path: &str| {
        let request = http.get(format!("{api_url}{path}")).bearer_auth(token);
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status().as_u16(), 200, "{}", response.url());
            response.json::<Value>().await.unwrap()
        }
    };
    let whoami = |secret: String| {
        let request = http.get(format!("{api_url}/user")).bearer_auth(secret);
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status().as_u16(), 200);
            response.json::<Value>().await.unwrap()["login"].clone()
        }
    };
    assert_eq!(whoami(token.to_owned()).await, "review-bot");
    let person = ready["person_token"].as_str().unwrap().to_owned();
    assert_eq!(whoami(person.clone()).await, "octocat");
    assert_eq!(
        whoami(fix_pull["person_token"].as_str().unwrap().to_owned()).await,
        "dev"
    );
    // The person closes their pull request (it leaves the poller's search), then reopens it.
    let set_state = |state: &'static str| {
        let request = http
            .patch(format!("{api_url}/repos/acme/widgets/pulls/1"))
            .bearer_auth(&person)
            .json(&serde_json::json!({"state": state}));
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status().as_u16(), 200);
            response.json::<Value>().await.unwrap()
        }
    };
    let closed = set_state("closed").await;
    assert_eq!(
        (&closed["state"], closed["closed_at"].is_string()),
        (&"closed".into(), true)
    );
    let found = get("/search/issues?q=is%3Apr+is%3Aopen+label%3Abot-review-needed").await;
    assert_eq!(found["total_count"], 0);
    let reopened = set_state("open").await;
    assert_eq!(
        (&reopened["state"], &reopened["closed_at"]),
        (&"open".into(), &Value::Null)
    );
    let found = get("/search/issues?q=is%3Apr+is%3Aopen+label%3Abot-review-needed").await;
    assert_eq!(found["total_count"], 1);
}

#[test]
fn github_sim_refuses_a_malformed_scenario_naming_the_json_path() {
    let work = tempfile::tempdir().unwrap();
    source_repository(&work.path().join("widgets"), &[("feature", "a.rs", "a\n")]);
    std::fs::create_dir(work.path().join("plain")).unwrap();
    let widgets = serde_json::json!({"name": "acme/widgets", "path": "widgets",
                                     "pull_requests": [{"head": "feature"}]});
    for (scenario, expected) in [
        (
            serde_json::json!({"repositories": [widgets, {"name": "acme/gadgets", "path": "widgets",
                "pull_requests": [{"head": "feature"}, {"head": "nope", "base": "main"}]}]}),
            "$.repositories[1].pull_requests[1].head: ",
        ),
        (
            serde_json::json!({"repositories": [{"name": "acme/plain", "path": "plain"}]}),
            "$.repositories[0].path: ",
        ),
        (
            serde_json::json!({"repositories": [{"name": "acme/widgets", "path": "widgets",
                "pull_requests": [{"head": "feature", "lables": ["x"]}]}]}),
            "$.repositories[0].pull_requests[0].lables: unknown key",
        ),
        (
            serde_json::json!({"repositories": [widgets, {"name": "Acme/Widgets", "path": "widgets"}]}),
            "$.repositories[1].name: ",
        ),
    ] {
        let file = work.path().join("scenario.json");
        std::fs::write(&file, scenario.to_string()).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_github-sim"))
            .arg("--scenario")
            .arg(&file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{scenario}: {stderr}");
        assert!(stderr.contains(expected), "{scenario}: {stderr}");
        assert!(output.stdout.is_empty(), "{scenario}");
    }
    let output = Command::new(env!("CARGO_BIN_EXE_github-sim"))
        .args(["--scenario", "s.json", "--repo", ".", "--head", "a"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("cannot be used with"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
