//! The `--mcp-config` file: which MCP servers Claude Code starts for a run.
//!
//! Our server is keyed `review`, so the model sees its tools as
//! `mcp__review__<tool>`. Its command is the `review-bot` binary with `mcp`
//! and the caller's arguments; its environment is exactly what the caller
//! passes (plus what Claude Code inherits, which the runner keeps minimal) and
//! never a GitHub credential.
//!
//! Every server gets a tool-call timeout (`"timeout"`, milliseconds; Claude
//! Code 2.1.330 reads it per server and ends a call that runs longer with an
//! error the model sees), so a tool that never answers costs the agent one
//! failed call, not the rest of its run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::environment::check_not_github_credential;
use crate::AgentError;

/// The key our MCP server is registered under.
pub const REVIEW_SERVER: &str = "review";

/// How long one MCP tool call may take by default. Our tools answer in
/// milliseconds; this only ends a call that hangs.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_mins(2);

/// Claude Code ignores per-server timeouts under one second.
const SHORTEST_TOOL_TIMEOUT: Duration = Duration::from_secs(1);

/// How to start one stdio MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerCommand {
    /// The executable.
    pub command: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables set for it (on top of what Claude Code inherits).
    pub env: BTreeMap<String, String>,
}

impl McpServerCommand {
    /// `review-bot mcp ARGS…` with `binary` as the `review-bot` executable.
    pub fn review_bot(
        binary: impl Into<PathBuf>,
        args: impl IntoIterator<Item = String>,
        env: BTreeMap<String, String>,
    ) -> Self {
        Self {
            command: binary.into(),
            args: std::iter::once("mcp".to_owned()).chain(args).collect(),
            env,
        }
    }

    /// `review-bot mcp ARGS…` using the running executable (the daemon itself).
    pub fn current_review_bot(
        args: impl IntoIterator<Item = String>,
        env: BTreeMap<String, String>,
    ) -> std::io::Result<Self> {
        Ok(Self::review_bot(std::env::current_exe()?, args, env))
    }

    /// The command line, for messages.
    pub fn display(&self) -> String {
        std::iter::once(self.command.display().to_string())
            .chain(self.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A set of MCP servers for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpConfig {
    servers: BTreeMap<String, McpServerCommand>,
    /// The longest one tool call of any server may take.
    tool_timeout: Duration,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            servers: BTreeMap::new(),
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
        }
    }
}

#[derive(Serialize)]
struct ConfigFile<'a> {
    #[serde(rename = "mcpServers")]
    mcp_servers: BTreeMap<&'a str, ServerEntry<'a>>,
}

#[derive(Serialize)]
struct ServerEntry<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    command: &'a Path,
    args: &'a [String],
    env: &'a BTreeMap<String, String>,
    /// Tool-call timeout in milliseconds.
    timeout: u64,
}

impl McpConfig {
    /// Our server alone, under the key `review`.
    pub fn review(server: McpServerCommand) -> Self {
        Self::default().with_server(REVIEW_SERVER, server)
    }

    /// Add (or replace) a server under `name`.
    #[must_use]
    pub fn with_server(mut self, name: impl Into<String>, server: McpServerCommand) -> Self {
        self.servers.insert(name.into(), server);
        self
    }

    /// Set the longest one tool call may take (at least one second: Claude
    /// Code ignores shorter ones).
    #[must_use]
    pub fn with_tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = timeout.max(SHORTEST_TOOL_TIMEOUT);
        self
    }

    /// The longest one tool call may take.
    pub fn tool_timeout(&self) -> Duration {
        self.tool_timeout
    }

    /// The servers, by key.
    pub fn servers(&self) -> &BTreeMap<String, McpServerCommand> {
        &self.servers
    }

    /// The config as Claude Code reads it. Fails when a server's environment
    /// holds a GitHub credential.
    pub fn to_json(&self) -> Result<String, AgentError> {
        for server in self.servers.values() {
            for name in server.env.keys() {
                check_not_github_credential(name)?;
            }
        }
        let file = ConfigFile {
            mcp_servers: self
                .servers
                .iter()
                .map(|(name, server)| {
                    (
                        name.as_str(),
                        ServerEntry {
                            kind: "stdio",
                            command: &server.command,
                            args: &server.args,
                            env: &server.env,
                            timeout: u64::try_from(self.tool_timeout.as_millis())
                                .unwrap_or(u64::MAX),
                        },
                    )
                })
                .collect(),
        };
        Ok(serde_json::to_string_pretty(&file).expect("the MCP config serialises"))
    }

    /// Write the config to `path`, readable by the owner only.
    pub fn write(&self, path: &Path) -> Result<(), AgentError> {
        use std::io::Write as _;

        let json = self.to_json()?;
        let file_error = |source| AgentError::File {
            action: "write the MCP config",
            path: path.to_owned(),
            source,
        };
        // The run directory is the agent's to write: whatever an earlier
        // run left at `path` (a link to the bot's config) is replaced, never
        // written through.
        let mut file = review_sandbox::create_private_file(path).map_err(file_error)?;
        file.write_all(json.as_bytes()).map_err(file_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[test]
    fn our_server_is_keyed_review_and_runs_review_bot_mcp() {
        let config = McpConfig::review(McpServerCommand::review_bot(
            "/opt/review-bot",
            ["--snapshot".to_owned(), "/run/snapshot.json".to_owned()],
            env(&[("COMMENTS_FILE", "/run/comments.jsonl")]),
        ));
        let json: serde_json::Value = serde_json::from_str(&config.to_json().unwrap()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"mcpServers": {"review": {
                "type": "stdio",
                "command": "/opt/review-bot",
                "args": ["mcp", "--snapshot", "/run/snapshot.json"],
                "env": {"COMMENTS_FILE": "/run/comments.jsonl"},
                "timeout": 120_000,
            }}})
        );
    }

    #[test]
    fn a_github_token_never_reaches_the_config() {
        for name in ["GITHUB_TOKEN", "GH_TOKEN", "GITHUB_PERSONAL_ACCESS_TOKEN"] {
            let config = McpConfig::review(McpServerCommand::review_bot(
                "/opt/review-bot",
                [],
                env(&[(name, "ghp_secret")]),
            ));
            let error = config.to_json().unwrap_err();
            assert!(
                matches!(error, AgentError::GitHubCredential { .. }),
                "{name}"
            );
        }
    }

    #[test]
    fn the_written_file_is_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("mcp.json");
        McpConfig::review(McpServerCommand::review_bot("/x", [], BTreeMap::new()))
            .write(&path)
            .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
