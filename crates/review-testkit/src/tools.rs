//! Finds the project-local test tools: the pinned Claude Code CLI and the MCP
//! inspector CLI that `scripts/install-test-deps` installs under `.tools/`.
//!
//! The directory is `$REVIEW_BOT_TOOLS_DIR` when set, otherwise `<workspace>/.tools`.
//!
//! Tests call [`claude_for_test`] / [`mcp_inspector_for_test`]: they return the
//! path when the tool is installed. When it is missing they **fail the test**
//! if `REVIEW_BOT_REQUIRE_ALL_TEST_DEPS=1` (set by `scripts/test`, so CI never
//! silently skips), and otherwise print why and return `None`, so a contributor
//! without npm can still run the rest of the suite:
//!
//! ```no_run
//! # async fn example() {
//! let Some(claude) = review_testkit::tools::claude_for_test() else { return };
//! // … run `claude` against a `review_testkit::model::ModelServer` …
//! # let _ = claude;
//! # }
//! ```

use std::path::{Path, PathBuf};

/// The environment variable naming the tools directory.
pub const TOOLS_DIR_VARIABLE: &str = "REVIEW_BOT_TOOLS_DIR";

/// The environment variable that turns a missing tool into a test failure.
pub const REQUIRE_ALL_VARIABLE: &str = "REVIEW_BOT_REQUIRE_ALL_TEST_DEPS";

/// The Claude Code version `scripts/install-test-deps` pins.
pub const PINNED_CLAUDE_CODE_VERSION: &str = "2.1.330";

/// A test tool that is not installed where the tests look for it.
#[derive(Debug, thiserror::Error)]
#[error(
    "{tool} is not installed: expected an executable at {}; run scripts/install-test-deps \
     (or point {TOOLS_DIR_VARIABLE} at a directory holding it)",
    path.display()
)]
pub struct MissingTool {
    /// Human name of the tool.
    pub tool: &'static str,
    /// Where it was looked for.
    pub path: PathBuf,
}

/// The directory the test tools live in.
pub fn tools_dir() -> PathBuf {
    match std::env::var_os(TOOLS_DIR_VARIABLE) {
        Some(directory) if !directory.is_empty() => PathBuf::from(directory),
        _ => workspace_root().join(".tools"),
    }
}

/// The workspace root (two levels above this crate's manifest).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("review-testkit lives at <workspace>/crates/review-testkit")
        .to_path_buf()
}

/// The pinned `claude` executable.
pub fn claude_binary() -> Result<PathBuf, MissingTool> {
    existing(
        "the pinned Claude Code CLI",
        tools_dir().join("claude-code/node_modules/.bin/claude"),
    )
}

/// The MCP inspector CLI (`mcp-inspector-cli`, a Node script with a shebang).
pub fn mcp_inspector_binary() -> Result<PathBuf, MissingTool> {
    existing(
        "the MCP inspector CLI",
        tools_dir().join("mcp-inspector/node_modules/.bin/mcp-inspector-cli"),
    )
}

/// The pinned `claude` for a test; see the module docs for the missing case.
pub fn claude_for_test() -> Option<PathBuf> {
    for_test(claude_binary())
}

/// The MCP inspector CLI for a test; see the module docs for the missing case.
pub fn mcp_inspector_for_test() -> Option<PathBuf> {
    for_test(mcp_inspector_binary())
}

/// Whether `REVIEW_BOT_REQUIRE_ALL_TEST_DEPS=1`.
pub fn all_test_deps_required() -> bool {
    std::env::var(REQUIRE_ALL_VARIABLE).is_ok_and(|value| value == "1")
}

fn for_test(found: Result<PathBuf, MissingTool>) -> Option<PathBuf> {
    match found {
        Ok(path) => Some(path),
        Err(missing) if all_test_deps_required() => {
            panic!("{missing} ({REQUIRE_ALL_VARIABLE}=1, so this test fails instead of skipping)")
        }
        Err(missing) => {
            eprintln!("not running this test: {missing}");
            None
        }
    }
}

fn existing(tool: &'static str, path: PathBuf) -> Result<PathBuf, MissingTool> {
    // `metadata` follows the `.bin` symlink, so a dangling link counts as missing.
    match std::fs::metadata(&path) {
        Ok(metadata) if metadata.is_file() => Ok(path),
        _ => Err(MissingTool { tool, path }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tool_says_how_to_install_it() {
        let error = existing("the thing", PathBuf::from("/nonexistent/thing")).unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("run scripts/install-test-deps"),
            "{message}"
        );
        assert!(message.contains("/nonexistent/thing"), "{message}");
    }

    #[test]
    fn the_workspace_root_holds_the_workspace_manifest() {
        assert!(workspace_root().join("Cargo.toml").is_file());
        assert!(workspace_root().join("crates/review-testkit").is_dir());
    }
}
