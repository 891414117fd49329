//! The write flow's two agent runs: the merge-conflict pass (no MCP server:
//! it needs only the worktree and git's merge state) and the code-fix pass
//! (our MCP server in pipeline mode over the pull request's snapshot, its
//! answer enforced with the CLI's `--json-schema`).
//!
//! Each run gets its own directories in the run directory, like a review
//! pass: `merge/` or `fix/` (the bot's files, read-only to the run: the
//! snapshot copy, the MCP config, the prompt), `fix.output/` (the comments
//! file the MCP server writes) and, while the agent runs, `NAME.scratch/`
//! (its home, temporary and configuration directories); nothing else of the
//! bot's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use review_agent::claude::{AgentRun, ClaudeCode, ClaudeCodeRun, McpConfig, McpServerCommand};
use review_agent::prompts::{
    CodeFixReport, Prompts, code_fix_output_schema, code_fix_user_message,
    merge_conflict_user_message,
};
use review_core::agent_requests::{AgentRequest, ReplyRequest};
use review_mcp::collector;

use crate::review::agent_pass::{PassError, output_directory, write_private};

/// What both runs need.
#[derive(Debug, Clone, Copy)]
pub struct AgentSetup<'a> {
    /// The agent.
    pub claude: &'a ClaudeCode,
    /// Prompts and guides.
    pub prompts: &'a Prompts,
    /// The `review-bot` executable that serves `mcp`.
    pub mcp_binary: &'a Path,
    /// How long one MCP tool call may take.
    pub mcp_tool_timeout: Duration,
    /// The checkout.
    pub worktree: &'a Path,
    /// The run directory.
    pub run_directory: &'a Path,
    /// `owner/name`.
    pub repository: &'a str,
    /// The pull request.
    pub number: u64,
    /// Its title (untrusted).
    pub title: &'a str,
}

/// The code-fix pass's result.
#[derive(Debug)]
pub struct FixResult {
    /// The agent's answer (from `structured_output`, or the result text).
    pub report: CodeFixReport,
    /// Whether the answer came from the CLI's structured output.
    pub structured: bool,
    /// The replies the agent asked for.
    pub replies: Vec<ReplyRequest>,
    /// The agent's accounting.
    pub run: AgentRun,
    /// The transcript.
    pub transcript: PathBuf,
}

fn prepare(setup: &AgentSetup<'_>, name: &str) -> Result<PathBuf, PassError> {
    let directory = setup.run_directory.join(name);
    std::fs::create_dir_all(&directory).map_err(|source| PassError::File {
        path: directory.clone(),
        source,
    })?;
    Ok(directory)
}

/// The merge-conflict pass: resolves the conflicts git left in the worktree.
pub async fn run_merge_pass(
    setup: &AgentSetup<'_>,
    base_ref: &str,
    conflicted: &[String],
) -> Result<AgentRun, PassError> {
    let directory = prepare(setup, "merge")?;
    let prompt_path = setup.run_directory.join("merge-system-prompt.md");
    write_private(&prompt_path, &setup.prompts.merge_conflict_system_prompt())?;
    let files: Vec<&str> = conflicted.iter().map(String::as_str).collect();
    let message = merge_conflict_user_message(setup.repository, setup.number, base_ref, &files);
    let run = ClaudeCodeRun::new(message, setup.worktree, &directory)
        .with_system_prompt_file(&prompt_path)
        .with_transcript_path(setup.run_directory.join("merge.json"));
    Ok(setup.claude.run(&run).await?.into_success()?)
}

/// The code-fix pass over `snapshot_path`, with the platform `guides`.
pub async fn run_fix_pass(
    setup: &AgentSetup<'_>,
    snapshot_path: &Path,
    guides: &[&str],
) -> Result<FixResult, PassError> {
    let directory = prepare(setup, "fix")?;
    let system_prompt = setup.prompts.code_fix_system_prompt(guides)?;
    let prompt_path = setup.run_directory.join("fix-system-prompt.md");
    write_private(&prompt_path, &system_prompt)?;
    let snapshot = std::fs::read_to_string(snapshot_path).map_err(|source| PassError::File {
        path: snapshot_path.to_owned(),
        source,
    })?;
    let agent_snapshot = directory.join("snapshot.json");
    write_private(&agent_snapshot, &snapshot)?;
    let output = output_directory(setup.run_directory, "fix")?;
    let comments_file = output.join("comments.jsonl");
    let transcript = setup.run_directory.join("fix.json");
    let server = McpServerCommand::review_bot(
        setup.mcp_binary,
        [
            "--snapshot".to_owned(),
            agent_snapshot.display().to_string(),
            "--comments-file".to_owned(),
            comments_file.display().to_string(),
            "--run-dir".to_owned(),
            output.display().to_string(),
            "--panel-socket".to_owned(),
            directory.join("no-panel.sock").display().to_string(),
        ],
        BTreeMap::new(),
    );
    let message = code_fix_user_message(setup.repository, setup.number, setup.title);
    let run = ClaudeCodeRun::new(message, setup.worktree, &directory)
        .with_output_directory(&output)
        .with_system_prompt_file(&prompt_path)
        .with_transcript_path(&transcript)
        .with_mcp(McpConfig::review(server).with_tool_timeout(setup.mcp_tool_timeout))
        .with_json_schema(code_fix_output_schema());
    let agent_run = setup.claude.run(&run).await?.into_success()?;
    let (report, structured) = answer(&agent_run);
    let collection = collector::collect(&comments_file)?;
    for report in &collection.reports {
        tracing::warn!(
            line = report.line_number,
            problem = %report.problem,
            "skipped a line of the fix pass's comments file"
        );
    }
    let replies = collection
        .requests
        .into_iter()
        .filter_map(|collected| match collected.request {
            AgentRequest::Reply(reply) => Some(reply),
            // The fix pass has no business commenting on lines; its
            // findings would be the next review's.
            other => {
                tracing::warn!(
                    ?other,
                    "the fix pass asked for a comment that is not a reply; ignored"
                );
                None
            }
        })
        .collect();
    Ok(FixResult {
        report,
        structured,
        replies,
        run: agent_run,
        transcript,
    })
}

/// The agent's answer: the CLI's structured output (checked against the
/// schema by the CLI, parsed again here), else the result text parsed as
/// the same object, else an answer that claims nothing.
fn answer(run: &AgentRun) -> (CodeFixReport, bool) {
    if let Some(value) = &run.structured_output {
        match serde_json::from_value::<CodeFixReport>(value.clone()) {
            Ok(report) => return (report, true),
            Err(error) => tracing::warn!(%error, "the fix pass's structured output does not fit"),
        }
    }
    if let Some(text) = &run.result {
        let trimmed = text
            .trim()
            .trim_start_matches("```json")
            .trim_start_matches("```")
            .trim_end_matches("```")
            .trim();
        if let Ok(report) = CodeFixReport::parse(trimmed) {
            return (report, false);
        }
    }
    tracing::warn!("the fix pass gave no answer in the expected form");
    (
        CodeFixReport {
            threads_addressed: Vec::new(),
            build_passed: false,
            summary: String::new(),
        },
        false,
    )
}
