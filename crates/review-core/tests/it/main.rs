//! review-core's integration tests: one binary, one module per concern.

mod anchor_rules;
mod diff_model;
mod git_corpus;
mod properties;
