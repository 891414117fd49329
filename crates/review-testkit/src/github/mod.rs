//! A GitHub simulator: a real HTTP server on 127.0.0.1 with real state, for tests that must
//! cross the same boundary production crosses.
//!
//! Repositories are real bare git repositories (cloneable and pushable over HTTP by the real
//! `git`); pull requests, diffs, file lists and patches are computed by git. Reviews, review
//! comments, replies, issue comments, labels, check runs, statuses, search, apps and
//! installations are in-memory records rendered as GitHub's JSON (validated against GitHub's
//! OpenAPI description in this crate's tests). GitHub's rules are enforced with GitHub's
//! messages: an inline comment off the diff fails the whole review with 422, replies only to
//! top-level comments, 404 when removing a label the issue lacks, 401 `Bad credentials`,
//! primary and secondary rate limits with the real headers, `ETag`s and free 304s.
//! `POST /graphql` serves review threads and their resolution (see `graphql`), checked
//! against the vendored subset of GitHub's GraphQL schema ([`GRAPHQL_SCHEMA`]).
//!
//! # Test-facing API
//!
//! ```no_run
//! use review_testkit::github::{Fault, FaultRule, GithubSim};
//!
//! # fn main() -> Result<(), review_testkit::github::SimError> {
//! let sim = GithubSim::start()?;                       // 127.0.0.1:<free port>
//! let bot = sim.user("review-bot");                     // a user with a token
//! let repo = sim
//!     .repo("acme/widgets")
//!     .file("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n")
//!     .create()?;                                       // bare repo, one commit on `main`
//! let pull = repo
//!     .pull_request("feature")                          // branch `feature` from `main`…
//!     .modify("src/lib.rs", "pub fn one() -> u32 {\n    2\n}\n")
//!     .add("src/two.rs", "pub fn two() {}\n")
//!     .title("Change one")
//!     .label("bot-review-needed")
//!     .open()?;                                         // …with one commit, PR #1
//! pull.add_check_run("build", "completed", Some("success"))?;
//!
//! // Point the client under test at `sim.api_url()` with `bot.token`, run it, then assert:
//! let reviews = pull.reviews();
//! let spent: u64 = sim.requests().iter().map(|request| request.cost).sum();
//! sim.inject(FaultRule::operation("pulls/create-review", Fault::ServerError(502)).times(2));
//! # let _ = (reviews, spent);
//! # Ok(())
//! # }
//! ```
//!
//! - [`GithubSim`]: start ([`GithubSim::start`], [`GithubSim::start_with`] for
//!   [`SimOptions`]), `api_url()`, users and tokens ([`GithubSim::user`],
//!   [`GithubSim::new_token`], [`GithubSim::revoke_token`], [`GithubSim::reinstate_token`]),
//!   repositories ([`GithubSim::repo`], [`GithubSim::import_repo`]),
//!   apps ([`GithubSim::create_app`], [`GithubSim::install_app`],
//!   [`GithubSim::expire_installation_tokens`]), budgets ([`GithubSim::rate_limit`],
//!   [`GithubSim::set_primary_limit`]), faults ([`GithubSim::inject`]) and the request log
//!   ([`GithubSim::requests`], [`GithubSim::requests_for`], [`GithubSim::counters`],
//!   [`GithubSim::clear_requests`], [`GithubSim::request_schema_violations`]).
//! - [`RepoHandle`]: commits on branches ([`RepoHandle::branch`] → [`CommitBuilder`]),
//!   pull requests ([`RepoHandle::pull_request`] → [`PullRequestBuilder`]), labels, check runs
//!   and statuses on any commit.
//! - [`PullRequestHandle`]: new commits on the head branch, labels, comments, reviews and
//!   replies by any user (through the same rules the API enforces), check runs and statuses
//!   on the head, and snapshots of what was posted ([`PullRequestHandle::reviews`],
//!   [`PullRequestHandle::review_comments`], [`PullRequestHandle::issue_comments`],
//!   [`PullRequestHandle::labels`]).
//!
//! The server runs on its own thread and runtime: helpers are plain blocking functions that
//! work from any test (async or not); dropping the last handle stops the server and deletes
//! the repositories.

mod api;
mod auth;
mod diff;
mod faults;
mod git;
mod git_http;
mod graphql;
mod log;
mod model;
mod options;
mod rate;
mod render;
mod routes;
mod scenario;
mod server;
mod state;

use std::net::SocketAddr;
use std::path::PathBuf;

pub use diff::Side;
pub use faults::{Fault, FaultRule};
pub use graphql::SCHEMA as GRAPHQL_SCHEMA;
pub use log::{OperationCounter, RequestCounters, RequestRecord};
pub use model::{
    AccountKind, CheckRun, CommitStatus, IssueComment, Label, Reaction, RepositorySelection,
    Review, ReviewComment, ReviewState,
};
pub use options::SimOptions;
pub use rate::RateLimitSnapshot;
pub use scenario::{
    CommitBuilder, GithubSim, PullRequestBuilder, PullRequestHandle, RepoBuilder, RepoHandle,
    SimApp, SimUser,
};

/// Everything that can go wrong driving the simulator from a test.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The listener could not bind.
    #[error("the GitHub simulator cannot listen on {address}: {source}")]
    Bind {
        /// The address asked for.
        address: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The server thread or runtime could not start.
    #[error("the GitHub simulator cannot start its server thread: {source}")]
    Runtime {
        /// The OS error.
        source: std::io::Error,
    },
    /// A file or directory could not be created or read.
    #[error("the GitHub simulator cannot use {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// `git` could not be started (is it installed and on PATH?).
    #[error("cannot run git ({command}): {source} — is git installed and on PATH?")]
    GitSpawn {
        /// The command line.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// `git` failed.
    #[error("git failed ({command}, {status}): {stderr}")]
    Git {
        /// The command line.
        command: String,
        /// The exit status.
        status: String,
        /// What git printed on stderr.
        stderr: String,
    },
    /// The scenario asked for something impossible (a missing branch, a duplicate repository…).
    #[error("invalid scenario: {0}")]
    Scenario(String),
    /// A helper's action was refused by GitHub's rules (the same answer the API would give).
    #[error("GitHub would refuse this ({status}): {message}")]
    Rejected {
        /// The HTTP status the API would answer.
        status: u16,
        /// GitHub's error body.
        message: String,
    },
    /// Something git printed could not be read.
    #[error("unexpected: {0}")]
    Unexpected(String),
}
