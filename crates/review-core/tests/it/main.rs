//! review-core's integration tests: one binary, one module per concern.

mod anchor_rules;
mod build_commands;
mod diff_model;
mod findings;
mod git_corpus;
mod git_paths;
mod properties;
mod real_readmes;
mod to_github;

/// A fixture file under `tests/fixtures`.
pub fn fixture(path: &str) -> String {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|error| panic!("{}: {error}", full.display()))
}
