//! Small helpers: a scripted model server, a checkout and a run directory,
//! and a runner pointed at them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use review_agent::claude::{
    ClaudeCode, ClaudeCodeRun, ClaudeCodeSettings, McpConfig, McpServerCommand,
};
use review_testkit::model::{ModelServer, Script};
use tempfile::TempDir;

/// The model the tests ask for (any name works; this one has known pricing).
pub const MODEL: &str = "claude-opus-4-6";

/// One test's world: the model server, a checkout, a run directory.
pub struct Harness {
    pub server: ModelServer,
    pub checkout: TempDir,
    pub run_directory: TempDir,
    pub settings: ClaudeCodeSettings,
}

impl Harness {
    /// `None` (after saying why) when the pinned CLI is not installed and not required.
    pub async fn start(script: Script) -> Option<Self> {
        let claude = review_testkit::tools::claude_for_test()?;
        let server = ModelServer::start(script)
            .await
            .expect("model server starts");
        let settings = ClaudeCodeSettings::new(claude, MODEL)
            .with_base_url(server.base_url())
            .with_api_key("sk-ant-scripted-model-server".into())
            .with_max_retries(0)
            .with_timeout(Duration::from_mins(2));
        Some(Self {
            server,
            checkout: tempfile::tempdir().unwrap(),
            run_directory: tempfile::tempdir().unwrap(),
            settings,
        })
    }

    /// A run of `prompt` in the checkout.
    pub fn run(&self, prompt: &str) -> ClaudeCodeRun {
        ClaudeCodeRun::new(
            prompt,
            self.checkout.path(),
            self.run_directory.path().join("run"),
        )
    }

    /// The runner with the current settings.
    pub fn claude(&self) -> ClaudeCode {
        ClaudeCode::new(self.settings.clone())
    }

    /// A file in the checkout.
    pub fn checkout_file(&self, name: &str) -> PathBuf {
        self.checkout.path().join(name)
    }
}

/// The tiny MCP server fixture (Node), registered as `review`.
pub fn tiny_mcp_server(env: &[(&str, &str)]) -> McpConfig {
    tiny_mcp_server_marked(env, None)
}

/// The tiny MCP server with `marker` as an extra (ignored) argument, so a
/// test can find it in `/proc` ([`live_processes_with_argument`]).
pub fn tiny_mcp_server_marked(env: &[(&str, &str)], marker: Option<&str>) -> McpConfig {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/tiny-mcp-server.js");
    McpConfig::review(McpServerCommand {
        command: find_in_path("node").expect("node is on PATH (the test tools need it)"),
        args: std::iter::once(script.display().to_string())
            .chain(marker.map(str::to_owned))
            .collect(),
        env: env
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect::<BTreeMap<_, _>>(),
    })
}

fn find_in_path(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|directory| directory.join(program))
        .find(|candidate| candidate.is_file())
}

pub use review_testkit::processes::{live_processes_with_argument, marker};
