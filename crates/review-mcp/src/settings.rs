//! What the process that starts `review-bot mcp` tells it, and the credential guard.
//!
//! The repository and pull request the server acts on come from its
//! environment (or the equivalent flags), never from tool arguments, so the
//! agent cannot aim a write at another pull request. The names below are the
//! contract between the pipeline (which writes the MCP config) and the server.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// The key the MCP config gives this server; the model sees its tools as
/// `mcp__review__<tool>`.
pub const SERVER_NAME: &str = "review";

/// Environment variable: the JSON-lines file the comment and reply tools
/// append to (seed 000's name).
pub const COMMENTS_FILE_VARIABLE: &str = "COMMENTS_FILE";

/// Environment variable: the pull-request snapshot (`review_core::snapshot`) to serve.
pub const SNAPSHOT_VARIABLE: &str = "REVIEW_BOT_SNAPSHOT";

/// Environment variable: the Unix socket a review panel listens on.
pub const PANEL_SOCKET_VARIABLE: &str = "REVIEW_BOT_REVIEW_PANEL_SOCKET";

/// Environment variable: the run directory `present_review` writes `review.md`
/// to when no panel listens.
pub const RUN_DIRECTORY_VARIABLE: &str = "REVIEW_BOT_RUN_DIR";

/// Environment variables that hold a GitHub credential by convention (the
/// GitHub CLI's, Actions', the GitHub MCP server's, and review-bot's own).
pub const GITHUB_CREDENTIAL_VARIABLES: &[&str] = &[
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITHUB_PAT",
    "GITHUB_PERSONAL_ACCESS_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "GITHUB_APP_PRIVATE_KEY",
    "REVIEW_BOT_GITHUB_TOKEN",
    "REVIEW_BOT_GITHUB_APP_PRIVATE_KEY",
];

/// The prefixes GitHub gives its tokens (personal, OAuth, user-to-server,
/// server-to-server, refresh, fine-grained).
const GITHUB_TOKEN_PREFIXES: &[&str] = &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"];

/// The environment variables that carry a GitHub credential, by name or by
/// value (a value containing a GitHub token). Only names are returned: a
/// token must never reach a log line.
pub fn github_credential_variables<I, K, V>(environment: I) -> Vec<String>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    let mut found: Vec<String> = environment
        .into_iter()
        .filter(|(name, value)| {
            let name = name.as_ref().to_string_lossy();
            let value = value.as_ref().to_string_lossy();
            let named = GITHUB_CREDENTIAL_VARIABLES
                .iter()
                .any(|credential| name.eq_ignore_ascii_case(credential))
                && !value.trim().is_empty();
            named || contains_github_token(&value)
        })
        .map(|(name, _)| name.as_ref().to_string_lossy().into_owned())
        .collect();
    found.sort();
    found
}

fn contains_github_token(value: &str) -> bool {
    GITHUB_TOKEN_PREFIXES.iter().any(|prefix| {
        value.match_indices(prefix).any(|(start, _)| {
            let at_word_start = value[..start]
                .chars()
                .next_back()
                .is_none_or(|before| !before.is_ascii_alphanumeric());
            let rest = &value[start + prefix.len()..];
            let token_chars = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .count();
            at_word_start && token_chars >= 20
        })
    })
}

/// Pipeline mode found a GitHub credential in its environment and refuses to run.
#[derive(Debug, thiserror::Error)]
#[error(
    "refusing to start in pipeline mode: the environment holds a GitHub credential in {}. \
     The agent must never hold a GitHub credential; start `review-bot mcp` with a scrubbed \
     environment (the pipeline's MCP config does), or use `--live` for your own session",
    .variables.join(", ")
)]
pub struct CredentialInEnvironment {
    /// The offending variables' names.
    pub variables: Vec<String>,
}

/// Refuses a pipeline-mode start when a GitHub credential is visible.
pub fn refuse_github_credentials<I, K, V>(environment: I) -> Result<(), CredentialInEnvironment>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    let variables = github_credential_variables(environment);
    if variables.is_empty() {
        Ok(())
    } else {
        Err(CredentialInEnvironment { variables })
    }
}

/// The run directory when none is given: beside the comments file, else
/// `None`, and `present_review` makes a private directory of its own (see
/// [`crate::panel::PanelSettings::run_directory`]). Never a predictable name
/// under the shared temporary directory, where another user could plant a link.
pub fn default_run_directory(comments_file: Option<&std::path::Path>) -> Option<PathBuf> {
    comments_file
        .and_then(std::path::Path::parent)
        .filter(|parent| !parent.as_os_str().is_empty())
        .map(std::path::Path::to_path_buf)
}

/// A value from the environment, treating an empty one as absent.
pub fn non_empty(value: Option<OsString>) -> Option<OsString> {
    value.filter(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_found_by_name_or_by_value_and_only_names_are_reported() {
        let token = format!("ghp_{}", "a1".repeat(18));
        let environment = [
            ("PATH", "/usr/bin".to_owned()),
            ("GH_TOKEN", "x".to_owned()),
            ("GITHUB_TOKEN", String::new()),
            ("SOMETHING_ELSE", format!("Bearer {token}")),
            ("HOME", "/home/ghp_short".to_owned()),
            ("NOTATOKEN", format!("xghp_{}", "a".repeat(30))),
        ];
        let found =
            github_credential_variables(environment.iter().map(|(name, value)| (name, value)));
        assert_eq!(found, ["GH_TOKEN", "SOMETHING_ELSE"]);
        let error =
            refuse_github_credentials(environment.iter().map(|(name, value)| (name, value)))
                .unwrap_err();
        let message = error.to_string();
        assert!(message.contains("GH_TOKEN, SOMETHING_ELSE"), "{message}");
        assert!(!message.contains(&token));
        assert!(refuse_github_credentials([("PATH", "/bin")]).is_ok());
    }

    #[test]
    fn the_run_directory_defaults_beside_the_comments_file() {
        assert_eq!(
            default_run_directory(Some(std::path::Path::new("/run/job/comments.jsonl"))),
            Some(PathBuf::from("/run/job"))
        );
        assert_eq!(default_run_directory(None), None);
        assert_eq!(
            default_run_directory(Some(std::path::Path::new("comments.jsonl"))),
            None
        );
    }
}
