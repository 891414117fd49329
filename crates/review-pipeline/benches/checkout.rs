//! The second checkout of a repository (mirror warm: an incremental fetch plus a worktree)
//! against a fresh `git clone` of it, both over the simulator's smart HTTP with a token.
//!
//! The fixture repository has some history: 60 files and 150 commits on `main`, and a pull
//! request of 3 commits. Run with `cargo bench -p review-pipeline --bench checkout`.

use std::process::Command;

use criterion::{Criterion, criterion_group, criterion_main};
use review_pipeline::{CheckoutRequest, CheckoutSettings, Checkouts, GitCredential};
use review_testkit::github::GithubSim;
use secrecy::SecretString;

const FILES: usize = 60;
const COMMITS: usize = 150;

fn file_contents(file: usize, revision: usize) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    for line in 0..80 {
        let _ = writeln!(text, "// file {file} line {line} revision {revision}");
    }
    text
}

fn bench_checkout(c: &mut Criterion) {
    let sim = GithubSim::start().expect("simulator");
    let token = sim.user("review-bot").token;
    let mut builder = sim.repo("acme/history");
    for file in 0..FILES {
        builder = builder.file(&format!("src/f{file}.rs"), &file_contents(file, 0));
    }
    let repo = builder.create().expect("repository");
    for commit in 1..=COMMITS {
        let mut change = repo.branch("main");
        for file in (commit % 7..FILES).step_by(7) {
            change = change.modify(&format!("src/f{file}.rs"), &file_contents(file, commit));
        }
        change.commit().expect("commit");
    }
    let pull = repo
        .pull_request("feature")
        .modify("src/f1.rs", &file_contents(1, 10_000))
        .open()
        .expect("pull request");
    for revision in 1..3 {
        pull.new_commit()
            .expect("commit builder")
            .modify("src/f2.rs", &file_contents(2, 20_000 + revision))
            .commit()
            .expect("commit");
    }

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let work = tempfile::tempdir().expect("work directory");
    let checkouts = Checkouts::new(CheckoutSettings::new(work.path())).expect("checkouts");
    let request = CheckoutRequest {
        repository: repo.full_name(),
        clone_url: repo.clone_url(),
        number: pull.number(),
        base_ref: "main".to_owned(),
        head_sha: pull.head_sha().expect("head"),
        credential: Some(GitCredential::new(SecretString::from(token.clone()))),
    };
    // The first checkout creates the mirror; every measured one is a second checkout.
    runtime.block_on(async {
        let first = checkouts.checkout(&request).await.expect("first checkout");
        first.remove().await.expect("remove");
    });

    let mut group = c.benchmark_group("checkout");
    group.sample_size(20);
    group.bench_function(
        "second checkout (warm mirror: fetch + worktree + remove)",
        |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let worktree = checkouts.checkout(&request).await.expect("checkout");
                    worktree.remove().await.expect("remove");
                });
            });
        },
    );
    let header = format!("http.extraHeader=Authorization: Bearer {token}");
    group.bench_function("fresh git clone", |b| {
        b.iter(|| {
            let target = tempfile::tempdir().expect("clone directory");
            let status = Command::new("git")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_TERMINAL_PROMPT", "0")
                .args(["-c", &header, "clone", "--quiet", &repo.clone_url()])
                .arg(target.path().join("clone"))
                .status()
                .expect("git clone runs");
            assert!(status.success());
        });
    });
    group.finish();
}

criterion_group!(benches, bench_checkout);
criterion_main!(benches);
