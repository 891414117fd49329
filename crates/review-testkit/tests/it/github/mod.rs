//! Tests of `review_testkit::github`, one module per area.

mod auth;
mod basics;
mod ci;
mod conformance;
mod files;
mod git;
mod graphql;
mod labels;
mod limits;
mod reviews;

use review_testkit::github::{GithubSim, PullRequestHandle, RepoHandle, SimUser};
use serde_json::Value;

/// A simulator with `acme/widgets` and an open pull request #1 changing `src/lib.rs`.
pub(crate) struct Fixture {
    pub sim: GithubSim,
    pub bot: SimUser,
    pub repo: RepoHandle,
    pub pull: PullRequestHandle,
}

pub(crate) const LIB_BEFORE: &str = "fn one() -> u32 {\n    1\n}\n\nfn two() -> u32 {\n    2\n}\n\nfn three() -> u32 {\n    3\n}\n\nfn four() -> u32 {\n    4\n}\n\nfn five() -> u32 {\n    5\n}\n";
pub(crate) const LIB_AFTER: &str = "fn one() -> u32 {\n    1\n}\n\nfn two() -> u32 {\n    22\n}\n\nfn three() -> u32 {\n    3\n}\n\nfn four() -> u32 {\n    4\n}\n\nfn five() -> u32 {\n    55\n}\n";

pub(crate) fn fixture() -> Fixture {
    let sim = GithubSim::start().expect("simulator starts");
    let bot = sim.user("review-bot");
    let repo = sim
        .repo("acme/widgets")
        .file("src/lib.rs", LIB_BEFORE)
        .file("README.md", "# widgets\n")
        .create()
        .expect("repository");
    let pull = repo
        .pull_request("feature")
        .modify("src/lib.rs", LIB_AFTER)
        .add("src/new.rs", "pub fn new() {}\n")
        .title("Improve widgets")
        .open()
        .expect("pull request");
    Fixture {
        sim,
        bot,
        repo,
        pull,
    }
}

/// A plain HTTP client (no retries, short timeout).
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .expect("client")
}

/// GET `path` with `token`; returns status, headers and JSON (or `Null`).
pub(crate) async fn get(
    sim: &GithubSim,
    token: &str,
    path: &str,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let response = client()
        .get(format!("{}{path}", sim.api_url()))
        .bearer_auth(token)
        .header("user-agent", "review-testkit-tests")
        .send()
        .await
        .expect("request");
    split(response).await
}

/// Sends `method path` with a JSON body.
pub(crate) async fn send(
    sim: &GithubSim,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: &Value,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let response = client()
        .request(method, format!("{}{path}", sim.api_url()))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .expect("request");
    split(response).await
}

pub(crate) async fn split(response: reqwest::Response) -> (u16, reqwest::header::HeaderMap, Value) {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body");
    let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, headers, json)
}
