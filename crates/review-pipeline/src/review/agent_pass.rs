//! One review pass: a Claude Code run with the layered prompt and our MCP
//! server in pipeline mode, and the requests it left in its comments file.
//!
//! Each pass gets its own directories in the run directory: `NAME/`, the
//! bot's files (the prompt, the MCP config, the CLI's stderr log, a copy of
//! the snapshot), shown read-only; `NAME.output/`, where the MCP server
//! records `comments.jsonl`, shown writable; and, while the agent runs,
//! `NAME.scratch/` (its home, temporary and configuration directories, see
//! `review_agent::claude::scratch`), shown writable and removed after. They
//! are the only parts of the run directory the pass's confined processes
//! can see, so one pass cannot touch another's files, and nothing the agent
//! plants is written through by the bot. The system prompt (`NAME-system-prompt.md`, shown
//! read-only) and the transcript `{reviewId}-NAME.json` (seed 004's name,
//! written by the runner outside the confinement) sit beside it. The MCP server is `review-bot mcp --snapshot …` from the
//! same executable, with a panel socket inside the run directory where nothing
//! listens, so a `present_review` of a pipeline run lands in the run
//! directory's `review.md` and never in a developer's panel ([`PassOptions`]
//! lets `review --local` name the developer's panel instead).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use review_agent::AgentError;
use review_agent::claude::{AgentRun, ClaudeCode, ClaudeCodeRun, McpConfig, McpServerCommand};
use review_agent::prompts::{
    PromptError, Prompts, review_user_message, review_user_message_with_base,
};
use review_core::agent_requests::AgentRequest;
use review_core::footer::ReviewId;
use review_core::passes::Pass;
use review_mcp::collector::{self, CollectError, LineReport};

/// The pass's name in file names, the store and messages.
pub const fn pass_name(pass: Pass) -> &'static str {
    match pass {
        Pass::Architecture => "architecture",
        Pass::Detailed => "detailed",
    }
}

/// What one pass needs.
#[derive(Debug, Clone, Copy)]
pub struct PassSetup<'a> {
    /// The agent.
    pub claude: &'a ClaudeCode,
    /// The prompts and guides.
    pub prompts: &'a Prompts,
    /// The review guides to layer (file names).
    pub guides: &'a [&'a str],
    /// The `review-bot` executable that serves `mcp`.
    pub mcp_binary: &'a Path,
    /// How long one MCP tool call may take.
    pub mcp_tool_timeout: Duration,
    /// The snapshot file the MCP server serves.
    pub snapshot_path: &'a Path,
    /// The checkout (the agent's working directory).
    pub worktree: &'a Path,
    /// The run directory.
    pub run_directory: &'a Path,
    /// The review's id (names the transcripts).
    pub review_id: ReviewId,
    /// `owner/name`.
    pub repository: &'a str,
    /// The pull request.
    pub number: u64,
    /// Its title (untrusted).
    pub title: &'a str,
    /// What the passes are told about the build besides the prompt (a
    /// command that fails on the base branch too), appended to the user
    /// message.
    pub build_note: Option<&'a str>,
    /// An incremental re-review's paragraph (the range, the files it
    /// changed, the earlier findings; [`review_agent::prompts::re_review_message`]),
    /// appended to the user message.
    pub re_review: Option<&'a str>,
}

/// A pass that ran to its end.
#[derive(Debug)]
pub struct PassResult {
    /// Which pass.
    pub pass: Pass,
    /// The valid requests from its comments file, in order.
    pub requests: Vec<AgentRequest>,
    /// Lines of the comments file that were skipped, and why.
    pub skipped: Vec<LineReport>,
    /// The agent's accounting.
    pub run: AgentRun,
    /// Its transcript.
    pub transcript: PathBuf,
}

/// Why a pass failed.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    /// The prompts could not be layered.
    #[error(transparent)]
    Prompt(#[from] PromptError),
    /// The agent could not run, or did not succeed.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The comments file could not be read.
    #[error(transparent)]
    Collect(#[from] CollectError),
    /// A file of the pass could not be written.
    #[error("could not write `{}`: {source}; check that the work directory is writable", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl PassError {
    /// Why the pass failed, in words fit for the pull request (no paths of
    /// the bot's machine): the agent's outcome, a timeout, our MCP server not
    /// starting, or a pointer to the log. The review and write flows' error
    /// comments both say it this way.
    pub fn public_summary(&self) -> String {
        match self {
            Self::Agent(AgentError::Unsuccessful { run }) => run.outcome.to_string(),
            Self::Agent(AgentError::TimedOut { after, .. }) => format!(
                "it did not finish within {} s and was stopped",
                after.as_secs()
            ),
            Self::Agent(AgentError::McpServerNotConnected { .. }) => {
                "it could not start the bot's comment tools (MCP server)".to_owned()
            }
            _ => "details in the bot's log".to_owned(),
        }
    }

    /// The agent's accounting, when the agent ran far enough to report it.
    pub fn agent_run(&self) -> Option<&AgentRun> {
        match self {
            Self::Agent(AgentError::Unsuccessful { run }) => Some(run),
            _ => None,
        }
    }
}

/// The transcript path of a pass.
pub fn transcript_path(run_directory: &Path, review_id: ReviewId, pass: Pass) -> PathBuf {
    run_directory.join(format!("{review_id}-{}.json", pass_name(pass)))
}

/// What a pass may do beyond the pipeline's defaults.
#[derive(Debug, Clone, Default)]
pub struct PassOptions<'a> {
    /// The review panel socket the MCP server delivers `present_review` to.
    /// `None` (the pipeline): a socket in the pass's directory where nothing
    /// listens, so the review lands in the pass's `review.md`. The caller
    /// makes the socket reachable from the agent's confinement.
    pub panel_socket: Option<&'a Path>,
    /// The base branch to name in the user message (`git diff
    /// refs/heads/BASE...HEAD`); `None`: not named.
    pub base_ref: Option<&'a str>,
}

/// Runs one pass and collects its requests.
pub async fn run_pass(setup: &PassSetup<'_>, pass: Pass) -> Result<PassResult, PassError> {
    run_pass_with(setup, pass, &PassOptions::default()).await
}

/// [`run_pass`] with [`PassOptions`].
pub async fn run_pass_with(
    setup: &PassSetup<'_>,
    pass: Pass,
    options: &PassOptions<'_>,
) -> Result<PassResult, PassError> {
    let name = pass_name(pass);
    let system_prompt = setup.prompts.review_system_prompt(pass, setup.guides)?;
    let prompt_path = setup.run_directory.join(format!("{name}-system-prompt.md"));
    write_private(&prompt_path, &system_prompt)?;
    let agent_directory = setup.run_directory.join(name);
    std::fs::create_dir_all(&agent_directory).map_err(|source| PassError::File {
        path: agent_directory.clone(),
        source,
    })?;
    let snapshot_path = agent_directory.join("snapshot.json");
    let snapshot =
        std::fs::read_to_string(setup.snapshot_path).map_err(|source| PassError::File {
            path: setup.snapshot_path.to_owned(),
            source,
        })?;
    write_private(&snapshot_path, &snapshot)?;
    let output = output_directory(setup.run_directory, name)?;
    let comments_file = output.join("comments.jsonl");
    let transcript = transcript_path(setup.run_directory, setup.review_id, pass);
    let server = McpServerCommand::review_bot(
        setup.mcp_binary,
        [
            "--snapshot".to_owned(),
            snapshot_path.display().to_string(),
            "--comments-file".to_owned(),
            comments_file.display().to_string(),
            "--run-dir".to_owned(),
            output.display().to_string(),
            "--panel-socket".to_owned(),
            options.panel_socket.map_or_else(
                || agent_directory.join("no-panel.sock").display().to_string(),
                |socket| socket.display().to_string(),
            ),
        ],
        BTreeMap::new(),
    );
    let message = match options.base_ref {
        Some(base) => {
            review_user_message_with_base(pass, setup.repository, setup.number, setup.title, base)
        }
        None => review_user_message(pass, setup.repository, setup.number, setup.title),
    };
    let message = match setup.build_note {
        Some(note) => format!("{message}\n\n{note}"),
        None => message,
    };
    let message = match setup.re_review {
        Some(note) => format!("{message}\n{note}"),
        None => message,
    };
    let run = ClaudeCodeRun::new(message, setup.worktree, &agent_directory)
        .with_output_directory(&output)
        .with_system_prompt_file(&prompt_path)
        .with_transcript_path(&transcript)
        .with_mcp(McpConfig::review(server).with_tool_timeout(setup.mcp_tool_timeout));
    let agent_run = setup.claude.run(&run).await?.into_success()?;
    let collection = collector::collect(&comments_file)?;
    for report in &collection.reports {
        tracing::warn!(
            pass = name,
            line = report.line_number,
            problem = %report.problem,
            preview = %report.preview,
            "skipped a line of the agent's comments file"
        );
    }
    Ok(PassResult {
        pass,
        requests: collection
            .requests
            .into_iter()
            .map(|collected| collected.request)
            .collect(),
        skipped: collection.reports,
        run: agent_run,
        transcript,
    })
}

/// Makes `RUN/NAME.output` fresh and empty: the only directory of the
/// run's the pass's confined processes can write besides their scratch
/// directory (`RUN/NAME.scratch`, the agent runner's), where the MCP server
/// records the comments file and a `present_review` without a panel. What an
/// earlier attempt left there goes (it would mix two attempts' requests),
/// links without being followed; the bot only reads what is in it, as
/// hostile (the collector opens regular files only, without following links
/// or blocking).
pub fn output_directory(run_directory: &Path, name: &str) -> Result<PathBuf, PassError> {
    use std::os::unix::fs::DirBuilderExt as _;
    let directory = run_directory.join(format!("{name}.output"));
    review_agent::claude::scratch::remove_entry(&directory)?;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&directory)
        .map_err(|source| PassError::File {
            path: directory.clone(),
            source,
        })?;
    Ok(directory)
}

/// Writes `text` to `path` as a private file (0600): written under a fresh
/// random name (created exclusively, so nothing planted there is followed)
/// and renamed over `path`, so a link an earlier agent run left at `path` is
/// replaced, never written through.
pub fn write_private(path: &Path, text: &str) -> Result<(), PassError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file_error = |source| PassError::File {
        path: path.to_owned(),
        source,
    };
    let directory = path.parent().unwrap_or(Path::new("."));
    let temporary = directory.join(format!(".write-{}", uuid::Uuid::new_v4()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(file_error)?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all());
    drop(file);
    written
        .and_then(|()| std::fs::rename(&temporary, path))
        .map_err(|source| {
            let _ = std::fs::remove_file(&temporary);
            file_error(source)
        })
}
