//! The pure domain of review-bot.
//!
//! Everything here is a function of its inputs: no I/O, no async, no clock, no
//! randomness (callers pass ids and times in). That makes every rule of the
//! review loop — which lines GitHub accepts a comment on, how a finding becomes
//! a review, which label comes next — testable with plain unit and property
//! tests, and reusable by every adapter.
//!
//! **Architecture Invariant:** this crate does no I/O and has no async.

pub mod agent_requests;
pub mod anchor;
pub mod build_commands;
pub mod diff;
pub mod findings;
pub mod footer;
pub mod labels;
pub mod passes;
pub mod payload;
pub mod platform;
pub mod prompt;
pub mod snapshot;
