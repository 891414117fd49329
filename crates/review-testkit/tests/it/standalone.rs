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
