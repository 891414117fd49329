//! The pipelines that drive the review loop.
//!
//! Checkout, build and test gate, the review pipeline, the write pipeline, the
//! CI handler, and the poller that turns labelled pull requests into jobs.
//! Today: [`checkout`] (step 1 of every job), the hardened git runner it uses ([`git`]),
//! the build + test gate ([`build_gate`], step 2), and the review flow
//! ([`review`]) that runs them, the agent's two passes, and posts one review.
//! [`progress`] is how a flow tells its caller what it is doing. [`ci`] is the CI
//! check (`bot-ci-pending`), [`write`](mod@write) the write flow (`bot-changes-needed`).
//! [`local`] is `review --local`: the review flow on a working tree's changes.
//! [`daemon`] is `review-bot run`: the poller and the lease-holding scheduler.
//! [`step`] is one step of the loop for one pull request (read, route, gate,
//! run the job, record): what `review-bot step` and the daemon both run.
//! [`cost`] shows the agent's cost in every review body and caps it per pull
//! request and per day.

pub mod base_build;
pub mod build_gate;
pub mod checkout;
pub mod ci;
pub mod command_sources;
pub mod cost;
pub mod daemon;
pub mod decided;
pub mod discovery;
pub mod git;
pub mod local;
pub mod local_git;
pub mod progress;
pub mod review;
pub mod runs;
pub mod status;
pub mod step;
pub mod write;

pub use checkout::{CheckoutError, CheckoutRequest, CheckoutSettings, Checkouts, Worktree};
pub use git::GitCredential;
pub use progress::{Progress, ProgressEvent};
pub use review::{ReviewFailure, ReviewReport, ReviewRequest, ReviewSettings, Reviewer};
