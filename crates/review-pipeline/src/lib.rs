//! The pipelines that drive the review loop.
//!
//! Checkout, build and test gate, the review pipeline, the write pipeline, the
//! CI handler, and the poller that turns labelled pull requests into jobs.
//! Today: [`checkout`] (step 1 of every job), the hardened git runner it uses ([`git`]),
//! and the build + test gate ([`build_gate`], step 2).

pub mod build_gate;
pub mod checkout;
pub mod git;

pub use checkout::{CheckoutError, CheckoutRequest, CheckoutSettings, Checkouts, Worktree};
pub use git::GitCredential;
