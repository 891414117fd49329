//! `review-bot mcp`: the MCP server the agent talks to, over standard input/output.
//!
//! Glue only: resolve the flags and environment into `review_mcp::ServerOptions`
//! and serve. The pipeline starts it through Claude Code's MCP config with the
//! snapshot and comments file in the environment; standard output is the MCP
//! session, logs go to standard error.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use review_core::snapshot::PullRequestSnapshot;
use review_mcp::panel::PanelSettings;
use review_mcp::settings::{self, default_run_directory, refuse_github_credentials};
use review_mcp::{ReviewServer, ServerOptions, Source};

/// Arguments of `mcp`. Each can come from the environment the starter sets.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// The pull-request snapshot the pipeline wrote (pipeline mode). Without it,
    /// the comment tools and `present_review` still work, inline comments unchecked.
    #[arg(long, value_name = "FILE", env = settings::SNAPSHOT_VARIABLE)]
    pub snapshot: Option<PathBuf>,

    /// The JSON-lines file comment and reply requests are appended to.
    #[arg(long, value_name = "FILE", env = settings::COMMENTS_FILE_VARIABLE)]
    pub comments_file: Option<PathBuf>,

    /// The Unix socket a review panel listens on, for `present_review`.
    #[arg(long, value_name = "SOCKET", env = settings::PANEL_SOCKET_VARIABLE)]
    pub panel_socket: Option<PathBuf>,

    /// Where `present_review` writes `review.md` when no panel listens (default:
    /// beside the comments file, else a temporary directory).
    #[arg(long, value_name = "DIR", env = settings::RUN_DIRECTORY_VARIABLE)]
    pub run_dir: Option<PathBuf>,
}

pub fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    let args = McpArgs {
        snapshot: non_empty(args.snapshot),
        comments_file: non_empty(args.comments_file),
        panel_socket: non_empty(args.panel_socket),
        run_dir: non_empty(args.run_dir),
    };
    // DESIGN.md invariant 5: in pipeline mode no GitHub credential may exist
    // anywhere in this process. Refuse rather than serve with one.
    refuse_github_credentials(std::env::vars_os())?;
    let snapshot = args
        .snapshot
        .as_deref()
        .map(|path| {
            let text = std::fs::read_to_string(path).with_context(|| {
                format!(
                    "could not read the pull-request snapshot {}",
                    path.display()
                )
            })?;
            PullRequestSnapshot::from_json(&text).with_context(|| format!("in {}", path.display()))
        })
        .transpose()?;
    if let Some(snapshot) = &snapshot {
        tracing::info!(
            repository = %snapshot.repository,
            pull_request = snapshot.pull_request.number,
            "serving the pull-request snapshot"
        );
    } else {
        tracing::info!("no snapshot: serving the comment tools and present_review only");
    }
    if args.comments_file.is_none() {
        tracing::warn!(
            "{} is not set: comments and replies will be accepted but not recorded",
            settings::COMMENTS_FILE_VARIABLE
        );
    }
    let run_directory = args
        .run_dir
        .unwrap_or_else(|| default_run_directory(args.comments_file.as_deref()));
    let server = ReviewServer::new(ServerOptions {
        comments_file: args.comments_file,
        source: Source::Snapshot(snapshot),
        panel: PanelSettings {
            socket: args.panel_socket,
            run_directory,
        },
    });
    super::block_on(server.serve_stdio())??;
    Ok(ExitCode::SUCCESS)
}

fn non_empty(path: Option<PathBuf>) -> Option<PathBuf> {
    path.filter(|path| !path.as_os_str().is_empty())
}
