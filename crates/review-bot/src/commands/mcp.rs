//! `review-bot mcp`: the MCP server the agent talks to, over standard input/output.
//!
//! Glue only: resolve the flags and environment into `review_mcp::ServerOptions`
//! and serve. The pipeline starts it through Claude Code's MCP config with the
//! snapshot and comments file in the environment (pipeline mode); a developer
//! adds `--live --repo OWNER/REPO --pr N` to their own Claude Code session
//! (live mode). Standard output is the MCP session, logs go to standard error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use review_core::snapshot::PullRequestSnapshot;
use review_github::{ClientSettings, GitHubClient, RepositoryName, TOKEN_VARIABLE};
use review_mcp::live::LiveSource;
use review_mcp::panel::PanelSettings;
use review_mcp::settings::{self, default_run_directory, refuse_github_credentials};
use review_mcp::{ReviewServer, ServerOptions, Source};

use super::replies::DatabaseArgs;

/// Where live mode looks for the developer's token, in order.
const LIVE_TOKEN_VARIABLES: [&str; 3] = [TOKEN_VARIABLE, "GITHUB_TOKEN", "GH_TOKEN"];

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

    /// The Unix socket a review panel listens on, for `present_review`
    /// (default: the one `review-bot panel` uses, `$XDG_RUNTIME_DIR/review-bot/panel.sock`
    /// or `<temp dir>/review-bot-<uid>/panel.sock`, when a panel listens there).
    #[arg(long, value_name = "SOCKET", env = settings::PANEL_SOCKET_VARIABLE)]
    pub panel_socket: Option<PathBuf>,

    /// Where `present_review` writes `review.md` when no panel listens (default:
    /// beside the comments file, else a private temporary directory made on
    /// first use).
    #[arg(long, value_name = "DIR", env = settings::RUN_DIRECTORY_VARIABLE)]
    pub run_dir: Option<PathBuf>,

    /// Live mode, for your own Claude Code session: read the pull request and
    /// post replies on GitHub with your token (`REVIEW_BOT_GITHUB_TOKEN`,
    /// `GITHUB_TOKEN` or `GH_TOKEN`), recording replies in the local store.
    #[arg(long, requires_all = ["repo", "pull_request"])]
    pub live: bool,

    /// The repository, for live mode.
    #[arg(long, value_name = "OWNER/REPO", requires = "live")]
    pub repo: Option<String>,

    /// The pull request number, for live mode.
    #[arg(long = "pr", value_name = "NUMBER", requires = "live")]
    pub pull_request: Option<u64>,

    /// The login review-bot posts as on this repository (`octo-reviewer`, or
    /// `NAME[bot]` for a GitHub App), for live mode: only that account's
    /// comments carry `thread::` ids the agent may reply by. Without it,
    /// replies go by numeric comment id only. (Pipeline mode reads it from the
    /// snapshot.)
    #[arg(long, value_name = "LOGIN", env = "REVIEW_BOT_GITHUB_BOT_LOGIN")]
    pub bot_login: Option<String>,

    /// The store live mode records replies in.
    #[command(flatten)]
    pub database: DatabaseArgs,
}

pub fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    let comments_file = non_empty(args.comments_file);
    let run_directory =
        non_empty(args.run_dir).or_else(|| default_run_directory(comments_file.as_deref()));
    // Without a socket, the one `review-bot panel` listens on by default.
    let panel = match non_empty(args.panel_socket) {
        Some(socket) => PanelSettings::new(Some(socket), run_directory),
        None => PanelSettings::with_default_socket(run_directory),
    };
    if comments_file.is_none() {
        tracing::warn!(
            "{} is not set: comments and replies will be accepted but not recorded",
            settings::COMMENTS_FILE_VARIABLE
        );
    }
    super::block_on(async move {
        let source = if args.live {
            live_source(
                args.repo.as_deref(),
                args.pull_request,
                bot_login(args.bot_login),
                &args.database,
            )
            .await?
        } else {
            pipeline_source(non_empty(args.snapshot).as_deref())?
        };
        let server = ReviewServer::new(ServerOptions {
            comments_file,
            source,
            panel,
        });
        server.serve_stdio().await?;
        anyhow::Ok(ExitCode::SUCCESS)
    })?
}

/// Pipeline mode: the snapshot, and no GitHub credential anywhere.
fn pipeline_source(snapshot: Option<&Path>) -> anyhow::Result<Source> {
    // DESIGN.md invariant 5: in pipeline mode no GitHub credential may exist
    // anywhere in this process. Refuse rather than serve with one.
    refuse_github_credentials(std::env::vars_os())?;
    let snapshot = snapshot
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
    Ok(Source::Snapshot(snapshot))
}

/// Live mode: the developer's token, GitHub and the local store.
async fn live_source(
    repository: Option<&str>,
    pull_request: Option<u64>,
    bot_login: Option<String>,
    database: &DatabaseArgs,
) -> anyhow::Result<Source> {
    let (Some(repository), Some(pull_request)) = (repository, pull_request) else {
        anyhow::bail!("live mode needs --repo OWNER/REPO and --pr NUMBER");
    };
    let repository = RepositoryName::parse(repository)?;
    let lookup = |name: &str| {
        let present = |variable: &str| {
            std::env::var(variable)
                .ok()
                .filter(|value| !value.trim().is_empty())
        };
        if name == TOKEN_VARIABLE {
            LIVE_TOKEN_VARIABLES
                .iter()
                .find_map(|variable| present(variable))
        } else {
            present(name)
        }
    };
    let settings = ClientSettings::from_environment(lookup).with_context(|| {
        format!(
            "live mode uses your own GitHub token: set one of {} (for example `export GITHUB_TOKEN=$(gh auth token)`)",
            LIVE_TOKEN_VARIABLES.join(", ")
        )
    })?;
    let github = GitHubClient::new(settings)?;
    let store = database.open().await?;
    let live = LiveSource::connect(github, store, repository.clone(), pull_request, bot_login)
        .await
        .with_context(|| format!("could not read {repository}#{pull_request} from GitHub"))?;
    tracing::info!(pull_request = %live.describe(), "live mode: serving the pull request from GitHub");
    Ok(Source::Live(Box::new(live)))
}

/// The variable `mcp --live` read before it took the name every other command
/// uses (`REVIEW_BOT_GITHUB_BOT_LOGIN`); still honoured, with a warning.
const FORMER_BOT_LOGIN_VARIABLE: &str = "REVIEW_BOT_BOT_LOGIN";

/// `--bot-login` / `REVIEW_BOT_GITHUB_BOT_LOGIN`, else the former variable.
fn bot_login(given: Option<String>) -> Option<String> {
    let present = |login: &String| !login.trim().is_empty();
    given.filter(present).or_else(|| {
        let former = std::env::var(FORMER_BOT_LOGIN_VARIABLE)
            .ok()
            .filter(present)?;
        tracing::warn!(
            "{FORMER_BOT_LOGIN_VARIABLE} is deprecated: set REVIEW_BOT_GITHUB_BOT_LOGIN, the \
             name every review-bot command reads"
        );
        Some(former)
    })
}

fn non_empty(path: Option<PathBuf>) -> Option<PathBuf> {
    path.filter(|path| !path.as_os_str().is_empty())
}
