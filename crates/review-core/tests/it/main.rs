//! Integration tests of review-core: the shipped JSON Schema, realistic
//! documents, and anything else that reads fixture files.

mod build_commands;
mod findings;

/// A fixture file under `tests/fixtures`.
pub fn fixture(path: &str) -> String {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|error| panic!("{}: {error}", full.display()))
}
