//! How fast the GitHub simulator answers, so test suites built on it stay fast: a pull
//! request read, a review with 50 inline comments (anchoring included), a page of 100 files
//! of a 3,000-file pull request, and building a repository with a pull request.
//!
//! `cargo bench -p review-testkit --bench github_sim -- --warm-up-time 1 --measurement-time 3`

use std::fmt::Write as _;

use criterion::{Criterion, criterion_group, criterion_main};
use review_testkit::github::{GithubSim, SimOptions, SimUser};
use serde_json::{Value, json};

/// A simulator without limits in the way, its user, and `acme/widgets` with PR #1 changing
/// lines 2, 11–20 and 101–200 of a 400-line file.
struct Bench {
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
    sim: GithubSim,
    user: SimUser,
    before: String,
    after: String,
}

fn setup() -> Bench {
    let sim = GithubSim::start_with(SimOptions {
        content_creation_per_minute: u64::MAX,
        content_creation_per_hour: u64::MAX,
        ..SimOptions::default()
    })
    .expect("simulator");
    let user = sim.user("review-bot");
    sim.set_primary_limit(&user.token, u64::MAX).expect("limit");
    let before = (0..400).fold(String::new(), |mut text, index| {
        let _ = writeln!(text, "line {index}");
        text
    });
    let after = before.replace("line 1", "LINE 1");
    let repo = sim
        .repo("acme/widgets")
        .file("src/big.rs", &before)
        .create()
        .expect("repo");
    repo.pull_request("feature")
        .modify("src/big.rs", &after)
        .open()
        .expect("pull");
    Bench {
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime"),
        client: reqwest::Client::new(),
        sim,
        user,
        before,
        after,
    }
}

impl Bench {
    /// Sends one request and checks the status.
    fn call(&self, method: reqwest::Method, path: &str, body: Option<&Value>, expected: u16) {
        self.runtime.block_on(async {
            let mut request = self
                .client
                .request(method, format!("{}{path}", self.sim.api_url()))
                .bearer_auth(&self.user.token);
            if let Some(body) = body {
                request = request.json(body);
            }
            let response = request.send().await.expect("request");
            assert_eq!(response.status().as_u16(), expected);
            response.bytes().await.expect("body")
        });
    }
}

fn reads(criterion: &mut Criterion) {
    let bench = setup();
    criterion.bench_function("pulls/get (JSON)", |runner| {
        runner.iter(|| {
            bench.call(
                reqwest::Method::GET,
                "/repos/acme/widgets/pulls/1",
                None,
                200,
            );
        });
    });
    let huge = bench
        .sim
        .repo("acme/huge")
        .file("README.md", "huge\n")
        .create()
        .expect("repo");
    let mut pull = huge.pull_request("generated");
    for index in 0..3000 {
        pull = pull.add(&format!("generated/{index:04}.txt"), "x\n");
    }
    pull.open().expect("pull");
    criterion.bench_function("pulls/list-files (page of 100 of 3,000)", |runner| {
        runner.iter(|| {
            bench.call(
                reqwest::Method::GET,
                "/repos/acme/huge/pulls/1/files?per_page=100&page=7",
                None,
                200,
            );
        });
    });
}

fn writes(criterion: &mut Criterion) {
    let bench = setup();
    let comments: Vec<_> = (0..50)
        .map(|index| {
            json!({"path": "src/big.rs", "line": 102 + index, "side": "RIGHT", "body": format!("comment {index}")})
        })
        .collect();
    let review = json!({"event": "COMMENT", "body": "review", "comments": comments});
    criterion.bench_function("pulls/create-review (50 inline comments)", |runner| {
        runner.iter(|| {
            bench.call(
                reqwest::Method::POST,
                "/repos/acme/widgets/pulls/1/reviews",
                Some(&review),
                200,
            );
        });
    });
}

fn scenarios(criterion: &mut Criterion) {
    let bench = setup();
    let mut counter = 0_u64;
    criterion.bench_function(
        "scenario: repository + pull request (git plumbing)",
        |runner| {
            runner.iter(|| {
                counter += 1;
                let repo = bench
                    .sim
                    .repo(&format!("bench/repo-{counter}"))
                    .file("src/lib.rs", &bench.before)
                    .create()
                    .expect("repo");
                repo.pull_request("feature")
                    .modify("src/lib.rs", &bench.after)
                    .open()
                    .expect("pull")
            });
        },
    );
}

criterion_group!(github_sim, reads, writes, scenarios);
criterion_main!(github_sim);
