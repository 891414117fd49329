//! The base-branch rerun (issue 24, DESIGN.md invariant 9): a command that
//! fails on a pull request's head is run again on its base commit before the
//! pull request is blamed for it.
//!
//! The same commands (setup, build, test, the same environment) run in a
//! second worktree at the base commit, checked out from the same mirror
//! ([`Checkouts`]) and run by the same gate ([`build_gate::run_commands`]:
//! the same confinement and containment). What they did is kept in the store
//! per repository, base commit and commands ([`review_store::BaseBuildKey`]),
//! so a busy repository pays for each base commit once.
//!
//! The verdict ([`Blame`]): when the same command (same position, same
//! text) fails on the base too, the failure is not the pull request's doing;
//! when the base passes, or fails at another command, it is.

use std::path::Path;

use review_store::{BaseBuild, BaseBuildKey, Store};
use sha2::{Digest as _, Sha256};

use crate::build_gate::{self, BuildFailure, BuildGateSettings, GateOutcome};
use crate::checkout::{CheckoutRequest, Checkouts};

/// What the base commit says about a failure on the head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blame {
    /// The same command fails on the base commit too: not the pull request's
    /// doing.
    AlsoOnBase(BaseFailure),
    /// The base commit passes, or fails at another command: the pull
    /// request's failure.
    PullRequest,
}

/// The same command's failure on the base commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseFailure {
    /// The base commit.
    pub base_sha: String,
    /// How the command ended there, in words.
    pub end: String,
    /// The end of its output there (escape sequences and the bot's paths
    /// already removed).
    pub output_tail: String,
    /// How many bytes it printed there in all.
    pub output_bytes: u64,
    /// Whether the result came from the store (the commands did not run again).
    pub cached: bool,
}

/// Why the base commit could not be built (the caller blames the pull
/// request, as without a rerun, and logs this).
#[derive(Debug, thiserror::Error)]
pub enum BaseBuildError {
    /// The base commit could not be checked out.
    #[error("could not check out the base commit: {0}")]
    Checkout(#[from] crate::checkout::CheckoutError),
    /// The gate could not run there.
    #[error("could not run the commands on the base commit: {0}")]
    Gate(#[from] build_gate::BuildGateError),
    /// The store failed.
    #[error("could not read or record the base commit's build: {0}")]
    Store(#[from] review_store::StoreError),
}

/// What the rerun needs.
pub struct BaseRerun<'a> {
    /// The gate's settings for this repository.
    pub settings: &'a BuildGateSettings,
    /// Mirrors and worktrees.
    pub checkouts: &'a Checkouts,
    /// The cache.
    pub store: &'a Store,
    /// The checkout of the pull request, with `head_sha` set to the base
    /// commit.
    pub checkout: CheckoutRequest,
    /// Where the base build's logs, home and temporary directory go.
    pub run_directory: &'a Path,
}

/// The store's key of `failure`'s commands: SHA-256 (hex) of each command
/// and each variable, length-prefixed so no two lists hash alike.
pub fn commands_hash(failure: &BuildFailure) -> String {
    let mut hasher = Sha256::new();
    let mut add = |part: &str| {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    };
    for command in failure.commands.commands() {
        add("command");
        add(&command);
    }
    for (name, value) in &failure.commands.environment {
        add("variable");
        add(name);
        add(value);
    }
    hasher
        .finalize()
        .iter()
        .fold(String::with_capacity(64), |mut hex, byte| {
            use std::fmt::Write as _;
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

/// Runs `failure`'s commands on the base commit (or finds that run in the
/// store) and says whose failure it is.
pub async fn blame(rerun: &BaseRerun<'_>, failure: &BuildFailure) -> Result<Blame, BaseBuildError> {
    let hash = commands_hash(failure);
    let key = BaseBuildKey {
        repository: &rerun.checkout.repository,
        base_sha: &rerun.checkout.head_sha,
        commands_hash: &hash,
    };
    let (build, cached) = if let Some(build) = rerun.store.base_build(&key).await? {
        (build, true)
    } else {
        let build = run_on_base(rerun, failure).await?;
        rerun.store.record_base_build(&key, &build).await?;
        (build, false)
    };
    tracing::info!(
        base_sha = %rerun.checkout.head_sha,
        cached,
        failed_index = ?build.failed_index,
        "base-branch build"
    );
    let same_command = build.failed_index == Some(failure.index as u64)
        && build.failed_command.as_deref() == Some(failure.command.as_str());
    if !same_command {
        return Ok(Blame::PullRequest);
    }
    Ok(Blame::AlsoOnBase(BaseFailure {
        base_sha: rerun.checkout.head_sha.clone(),
        end: build.failed_end.unwrap_or_default(),
        output_tail: build.output_tail.unwrap_or_default(),
        output_bytes: build.output_bytes,
        cached,
    }))
}

async fn run_on_base(
    rerun: &BaseRerun<'_>,
    failure: &BuildFailure,
) -> Result<BaseBuild, BaseBuildError> {
    let worktree = rerun.checkouts.checkout(&rerun.checkout).await?;
    let outcome = build_gate::run_commands(
        rerun.settings,
        worktree.path(),
        rerun.run_directory,
        &failure.commands,
    )
    .await;
    if let Err(error) = worktree.remove().await {
        tracing::warn!(%error, "could not remove the base commit's worktree; the next prune removes it");
    }
    Ok(match outcome? {
        GateOutcome::Passed { .. } | GateOutcome::NoCommands { .. } => BaseBuild {
            failed_index: None,
            failed_command: None,
            failed_end: None,
            output_tail: None,
            output_bytes: 0,
        },
        GateOutcome::Failed(base) | GateOutcome::EnvironmentFailure(base) => {
            let (_, shown) = build_gate::quoted_output(&base);
            BaseBuild {
                failed_index: Some(base.index as u64),
                failed_command: Some(base.command.clone()),
                failed_end: Some(base.end.to_string()),
                output_tail: Some(shown),
                output_bytes: base.output_bytes,
            }
        }
    })
}

/// The review body's section for a command that fails on the base branch
/// too: which command, and both output tails (escaped).
pub fn also_on_base_note(failure: &BuildFailure, base: &BaseFailure) -> String {
    let (head_summary, head_shown) = build_gate::quoted_output(failure);
    let base_tail = if base.output_tail.trim().is_empty() {
        "(no output)"
    } else {
        base.output_tail.as_str()
    };
    format!(
        "### Build fails on the base branch too\n\n\
         {command} ({origin}) {head_end} on this pull request, and {base_end} on the base \
         branch at {base_sha} as well, so the failure is not this pull request's doing and \
         the review went ahead. The review says whether this pull request makes it worse.\n\n\
         <details><summary>On this pull request: {head_summary}</summary>\n\n{head}\n\n</details>\n\n\
         <details><summary>On the base branch: the end of its output ({base_bytes} in all)</summary>\n\n{base_block}\n\n</details>",
        command = review_core::payload::inline_code(&failure.command),
        origin = build_gate::command_origin(failure),
        head_end = failure.end,
        base_end = base.end,
        base_sha =
            review_core::payload::inline_code(base.base_sha.get(..12).unwrap_or(&base.base_sha)),
        head = review_core::payload::code_block(&head_shown, Some("text")),
        base_bytes = if base.output_bytes == 1 {
            "1 byte".to_owned()
        } else {
            format!("{} bytes", base.output_bytes)
        },
        base_block = review_core::payload::code_block(base_tail, Some("text")),
    )
}

/// What the agent passes are told about a command that fails on the base
/// branch too, so they can say whether the pull request makes it worse.
pub fn also_on_base_for_agent(failure: &BuildFailure, base: &BaseFailure) -> String {
    let (_, head_shown) = build_gate::quoted_output(failure);
    let tail = |text: &str| {
        let start = text.ceil_char_boundary(text.len().saturating_sub(4096));
        text[start..].to_owned()
    };
    format!(
        "Build note from review-bot: the build command `{command}` fails on this pull request \
         ({head_end}) and on its base branch too ({base_end}), so the pull request is reviewed \
         anyway. Say in your review whether this pull request makes that failure worse (new \
         failing tests, new errors) or not. The end of its output on the pull request:\n\
         <head-output>\n{head}\n</head-output>\n\
         The end of its output on the base branch:\n<base-output>\n{base_output}\n</base-output>",
        command = failure.command.replace('`', "'"),
        head_end = failure.end,
        base_end = base.end,
        head = tail(&head_shown),
        base_output = tail(&base.output_tail),
    )
}
