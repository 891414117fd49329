//! The base-branch rerun (issue 24) against the GitHub simulator: real git
//! over smart HTTP, real bubblewrap, a real SQLite store. A test suite that
//! already fails on the base branch is not the pull request's doing (and the
//! second pull request on the same base finds the base's run in the store);
//! one the pull request breaks is.

use std::time::Instant;

use review_core::build_commands::{DiscoveredCommands, Source};
use review_pipeline::base_build::{self, BaseRerun, Blame};
use review_pipeline::build_gate::{
    self, BuildFailure, BuildGateSettings, DEFAULT_TIMEOUT, GateOutcome,
};
use review_pipeline::{CheckoutRequest, CheckoutSettings, Checkouts, GitCredential};
use review_store::Store;
use review_testkit::github::{GithubSim, PullRequestHandle, RepoHandle};
use secrecy::SecretString;

const TOKEN_BOT: &str = "review-bot";

/// The suite passes only when `VERSION` says `good`.
const TESTS: &str = "echo \"suite on $(cat VERSION)\"\n\
                     grep -q good VERSION || { echo 'assertion failed: VERSION is not good' >&2; exit 1; }\n";

struct Fixture {
    _sim: GithubSim,
    repo: RepoHandle,
    token: String,
    work: tempfile::TempDir,
    checkouts: Checkouts,
    store: Store,
}

async fn fixture(base_version: &str) -> Fixture {
    let sim = GithubSim::start().expect("simulator starts");
    let token = sim.user(TOKEN_BOT).token;
    let repo = sim
        .repo("acme/widgets")
        .file("VERSION", base_version)
        .file("tests.sh", TESTS)
        .file("src/lib.rs", "pub fn widget() -> u8 { 1 }\n")
        .create()
        .expect("repository");
    repo.add_collaborator(TOKEN_BOT, "write")
        .expect("collaborator");
    let work = tempfile::tempdir().expect("work directory");
    let checkouts = Checkouts::new(CheckoutSettings::new(work.path())).expect("checkouts");
    let store = Store::open(&review_store::sqlite_url(&work.path().join("store.db")))
        .await
        .expect("store");
    Fixture {
        _sim: sim,
        repo,
        token,
        work,
        checkouts,
        store,
    }
}

fn commands() -> DiscoveredCommands {
    DiscoveredCommands {
        setup: vec!["echo preparing".to_owned()],
        build: Vec::new(),
        test: vec!["sh ./tests.sh".to_owned()],
        environment: std::iter::once(("SUITE".to_owned(), "all".to_owned())).collect(),
        source: Source::RepositoryFile,
    }
}

impl Fixture {
    fn request(&self, pull: &PullRequestHandle, sha: String) -> CheckoutRequest {
        CheckoutRequest {
            repository: self.repo.full_name(),
            clone_url: self.repo.clone_url(),
            number: pull.number(),
            base_ref: "main".to_owned(),
            head_sha: sha,
            credential: Some(GitCredential::new(SecretString::from(self.token.clone()))),
        }
    }

    /// The gate on `pull`'s head: its failure.
    async fn head_failure(&self, pull: &PullRequestHandle, run: &str) -> BuildFailure {
        let worktree = self
            .checkouts
            .checkout(&self.request(pull, pull.head_sha().unwrap()))
            .await
            .expect("head checkout");
        let outcome = build_gate::run_commands(
            &BuildGateSettings::new(DEFAULT_TIMEOUT),
            worktree.path(),
            &self.work.path().join(run),
            &commands(),
        )
        .await
        .expect("the gate runs");
        worktree.remove().await.unwrap();
        match outcome {
            GateOutcome::Failed(failure) => failure,
            other => panic!("the head's suite should fail: {other:?}"),
        }
    }

    async fn blame(&self, pull: &PullRequestHandle, failure: &BuildFailure, run: &str) -> Blame {
        let settings = BuildGateSettings::new(DEFAULT_TIMEOUT);
        let run_directory = self.work.path().join(run).join("base");
        let rerun = BaseRerun {
            settings: &settings,
            checkouts: &self.checkouts,
            store: &self.store,
            checkout: self.request(pull, pull.base_sha().unwrap()),
            run_directory: &run_directory,
        };
        base_build::blame(&rerun, failure)
            .await
            .expect("the base commit builds")
    }
}

#[tokio::test]
async fn a_suite_that_fails_on_the_base_too_is_not_the_pull_requests_and_is_cached() {
    let fixture = fixture("bad\n").await;
    let first = fixture
        .repo
        .pull_request("feature-one")
        .modify("src/lib.rs", "pub fn widget() -> u8 { 2 }\n")
        .title("One")
        .open()
        .unwrap();
    let failure = fixture.head_failure(&first, "run-1").await;
    assert_eq!(
        (failure.index, failure.command.as_str()),
        (1, "sh ./tests.sh")
    );

    let started = Instant::now();
    let Blame::AlsoOnBase(base) = fixture.blame(&first, &failure, "run-1").await else {
        panic!("the suite fails on the base branch too");
    };
    let first_rerun = started.elapsed();
    assert!(!base.cached);
    assert_eq!(base.base_sha, first.base_sha().unwrap());
    assert_eq!(base.end, "exited with status 1");
    assert!(
        base.output_tail
            .contains("assertion failed: VERSION is not good"),
        "{base:?}"
    );
    assert!(fixture.work.path().join("run-1/base/build/02.log").exists());

    // The review body names the command and shows both tails, escaped.
    let note = base_build::also_on_base_note(&failure, &base);
    assert!(
        note.contains("`sh ./tests.sh` (command 2 of 2 from .review-bot.toml)"),
        "{note}"
    );
    assert_eq!(
        note.matches("assertion failed: VERSION is not good")
            .count(),
        2,
        "{note}"
    );
    let told = base_build::also_on_base_for_agent(&failure, &base);
    assert!(told.contains("makes that failure worse"), "{told}");

    // A second pull request on the same base: the base's run is in the store.
    let second = fixture
        .repo
        .pull_request("feature-two")
        .modify("src/lib.rs", "pub fn widget() -> u8 { 3 }\n")
        .title("Two")
        .open()
        .unwrap();
    assert_eq!(second.base_sha().unwrap(), first.base_sha().unwrap());
    let failure = fixture.head_failure(&second, "run-2").await;
    let started = Instant::now();
    let Blame::AlsoOnBase(base) = fixture.blame(&second, &failure, "run-2").await else {
        panic!("the suite fails on the base branch too");
    };
    let cached_rerun = started.elapsed();
    assert!(base.cached);
    assert!(
        !fixture.work.path().join("run-2/base").exists(),
        "nothing ran for the base"
    );
    assert!(
        base.output_tail
            .contains("assertion failed: VERSION is not good")
    );
    eprintln!(
        "base-branch rerun: first {:.3} s (checkout + 2 commands), cached {:.3} s",
        first_rerun.as_secs_f64(),
        cached_rerun.as_secs_f64()
    );
}

#[tokio::test]
async fn a_suite_the_pull_request_breaks_is_the_pull_requests() {
    let fixture = fixture("good\n").await;
    let pull = fixture
        .repo
        .pull_request("breaks-it")
        .modify("VERSION", "bad\n")
        .title("Break it")
        .open()
        .unwrap();
    let failure = fixture.head_failure(&pull, "run-1").await;
    assert_eq!(
        fixture.blame(&pull, &failure, "run-1").await,
        Blame::PullRequest
    );
    // Cached too: the base passed.
    assert_eq!(
        fixture.blame(&pull, &failure, "run-2").await,
        Blame::PullRequest
    );
    assert!(!fixture.work.path().join("run-2/base").exists());
}
