//! A review at the developer's desk (`review-bot review --local`): the review
//! flow's gate, passes, prompts, guides and anchoring on a working tree's
//! changes, with no GitHub, no store and no credential but the model's.
//!
//! **Nothing is written to the developer's repository** — not the index, not
//! an object, not a ref, not a file. The flow:
//!
//! 1. Read the repository with git (hooks, fsmonitor, the untracked cache,
//!    external diff and optional locks off; the global and system config not
//!    read), so a `git diff HEAD` never refreshes the index's stat cache.
//! 2. The base: `--base REF`, else the merge base of `HEAD` and the default
//!    branch (`refs/remotes/origin/HEAD`, else `main`, else `master`).
//! 3. Copy the working tree — tracked files and untracked files that are not
//!    ignored; regular files copied, symbolic links recreated as links (never
//!    followed), submodules and special files skipped — into
//!    `WORK/local/ID/tree`. Its `.git` is a fresh repository whose
//!    `objects/info/alternates` names the developer's object directory: the
//!    developer's objects are read, never written (new objects land in the
//!    copy's own store). The copy's index starts as `HEAD`'s tree; the paths
//!    that differ from `HEAD` (committed or not, and the untracked files) are
//!    updated from the copy, and if anything differs the result is committed
//!    in the copy (`review-bot: working tree`, parent `HEAD`). The copy has two
//!    branches, `review-base` (the base) and `review-head` (checked out), and
//!    no remote: the agent sees the changes with
//!    `git diff refs/heads/review-base...HEAD` as it would a pull request's.
//! 4. The diff is `git diff review-base review-head` in the copy (base →
//!    working tree: untracked files are added files), computed before any of
//!    the tree's code runs; it is the snapshot's diff and what findings anchor
//!    against.
//! 5. The build + test gate and the two passes run in the copy (confined as
//!    configured; the developer's object directory is added read-only), then
//!    `compose` makes the findings document (schema v1.0).
//! 6. The review goes to the review panel when one listens (the agent's own
//!    `present_review` calls, then the merged result as one `replace`), else
//!    to `review.md` in the job directory. The copy is removed at the end; the
//!    job directory keeps the transcripts, the snapshot and the build logs.
//!
//! The findings document has no pull request: `pr_info.number` is 1 (the
//! schema asks for a number ≥ 1), `repo` is `local/DIRECTORY`, `head_sha` the
//! developer's `HEAD` (uncommitted changes come on top of it).

use std::collections::{BTreeSet, HashSet};
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use review_agent::claude::{ClaudeCode, ClaudeCodeSettings};
use review_agent::prompts::Prompts;
use review_core::build_commands::CommandSet;
use review_core::diff::PullRequestDiff;
use review_core::findings::Findings;
use review_core::footer::ReviewId;
use review_core::passes::Pass;
use review_core::snapshot::{PullRequestInfo, PullRequestSnapshot, SNAPSHOT_VERSION};
use review_mcp::panel::{Delivery, PROTOCOL, PanelMessage, PanelSettings};
use review_sandbox::{Containment, SandboxError};
use uuid::Uuid;

use crate::build_gate::{self, BuildGateError, BuildGateSettings, GateOutcome};
use crate::command_sources::{self, RepositoryFile};
use crate::local_git::{LocalGit, LocalGitError};
use crate::progress::Progress;
use crate::review::agent_pass::{
    PassError, PassOptions, PassSetup, pass_name, run_pass_with, write_private,
};
use crate::review::compose::{self, ReviewOutcome};
use crate::review::short_sha;

/// The copy's branch holding the base commit.
pub const BASE_BRANCH: &str = "review-base";

/// The copy's checked-out branch: the working tree's state.
pub const HEAD_BRANCH: &str = "review-head";

impl From<LocalGitError> for LocalError {
    fn from(error: LocalGitError) -> Self {
        match error {
            LocalGitError::Failed {
                command,
                status,
                stderr,
            } => Self::Git {
                command,
                status,
                stderr,
            },
            LocalGitError::Sandbox(error) => Self::Sandbox(error),
        }
    }
}

/// What the local flow needs besides the agent and the prompts.
#[derive(Debug, Clone)]
pub struct LocalSettings {
    /// The work directory: jobs go to `WORK/local/ID/`.
    pub work_dir: PathBuf,
    /// The `review-bot` executable that serves `mcp` to the agent.
    pub mcp_binary: PathBuf,
    /// How long one MCP tool call may take.
    pub mcp_tool_timeout: Duration,
    /// The build + test gate's settings.
    pub build_gate: BuildGateSettings,
    /// The operator's build and test commands for the repository
    /// (`review --local --repository OWNER/REPO`), before the working tree's
    /// `.review-bot.toml` and CLAUDE.md/README.md.
    pub build_commands: Option<CommandSet>,
    /// Each git command's limit.
    pub git_timeout: Duration,
    /// How git's processes are held together and killed.
    pub containment: Containment,
    /// The review panel's socket (`review_mcp::panel::default_socket_path()`);
    /// `None`: no panel, the review goes to `review.md` in the job directory.
    pub panel_socket: Option<PathBuf>,
    /// `review.verify`: run the verification pass on the passes' findings
    /// and withhold what it refutes ([`crate::review::verify`]).
    pub verify: bool,
    /// `review.min_confidence`: a finding the verifier confirms with less
    /// confidence than this is withheld too.
    pub min_confidence: u8,
}

/// Everything the local flow talks to.
#[derive(Debug)]
pub struct LocalReviewer {
    /// The agent's settings (the flow adds the developer's object directory,
    /// and the panel's directory, to its confinement).
    pub claude: ClaudeCodeSettings,
    /// Prompts and guides.
    pub prompts: Prompts,
    /// The rest.
    pub settings: LocalSettings,
}

/// One local review.
#[derive(Debug, Clone)]
pub struct LocalRequest {
    /// A directory in the repository's working tree.
    pub path: PathBuf,
    /// The base (`--base REF`); `None`: the merge base with the default branch.
    pub base: Option<String>,
    /// The title the agent sees (`review-bot eval`'s case title); `None`:
    /// "Local changes in DIRECTORY against BASE".
    pub title: Option<String>,
    /// The description the agent sees; `None`: empty.
    pub body: Option<String>,
}

/// The commit the changes are measured from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Base {
    /// Its SHA.
    pub sha: String,
    /// How it was chosen, for people (`merge base of HEAD and origin/main`).
    pub description: String,
}

/// How long each part took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    /// Reading the repository, the copy, the diff.
    pub prepare: Duration,
    /// The build + test gate.
    pub gate: Duration,
    /// The agent passes, as the agent reports them.
    pub agent: Duration,
    /// The passes' wall time (the agent's plus starting it and reading its requests).
    pub passes: Duration,
    /// Merging, anchoring, presenting, removing the copy.
    pub finish: Duration,
}

/// How a local review ended.
#[derive(Debug, Clone, PartialEq)]
pub enum LocalOutcome {
    /// The working tree does not differ from the base.
    NoChanges,
    /// The build or the tests failed; no agent ran.
    BuildFailed {
        /// The failure as markdown (command, end, output tail).
        report: String,
    },
    /// The review.
    Reviewed {
        /// The findings document (schema v1.0).
        findings: Box<Findings>,
        /// Changes requested, or LGTM.
        verdict: ReviewOutcome,
        /// Per line comment, how it anchors on the diff (`inline`, `moved`,
        /// `outside_diff`, `not_in_pr`).
        placements: Vec<&'static str>,
    },
}

/// A finished local review.
#[derive(Debug, Clone)]
pub struct LocalReport {
    /// The working tree's top directory.
    pub repository: PathBuf,
    /// The base.
    pub base: Base,
    /// The developer's `HEAD`.
    pub head_sha: String,
    /// What came of it.
    pub outcome: LocalOutcome,
    /// The review as markdown (what the panel shows).
    pub markdown: String,
    /// Where the review went: a panel, or `review.md`; `Err` when a panel was
    /// reached but the exchange failed.
    pub delivery: Option<Result<Delivery, String>>,
    /// The job directory (transcripts, snapshot, build logs).
    pub job_directory: PathBuf,
    /// What the agent passes cost, in US dollars.
    pub agent_cost_usd: f64,
    /// Turns the agent passes took.
    pub agent_turns: u32,
    /// Where the time went.
    pub timings: Timings,
    /// The findings the verification pass withheld as unlikely, with its verdicts.
    pub withheld: Vec<(
        review_core::findings::LineComment,
        crate::review::verify::Verdict,
    )>,
}

/// Why a local review failed.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// Bad usage: not a git working tree, an unknown `--base`, no default branch.
    #[error("{0}")]
    Usage(String),
    /// A git command failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Git {
        /// The command.
        command: String,
        /// How it ended.
        status: String,
        /// The tail of its stderr.
        stderr: String,
    },
    /// A process could not be contained or started.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// A file of the job could not be read or written.
    #[error("could not {action} `{}`: {source}", path.display())]
    File {
        /// What we were doing.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The build gate could not run (not a failed build: that is an outcome).
    #[error(transparent)]
    BuildGate(#[from] BuildGateError),
    /// A pass failed.
    #[error("the {} pass failed: {source}", pass_name(*pass))]
    Pass {
        /// Which pass.
        pass: Pass,
        /// Why.
        source: PassError,
    },
    /// The diff did not parse, or the snapshot could not be written.
    #[error("{0}")]
    Prepare(String),
    /// The verification pass failed.
    #[error("the verification pass failed: {0}")]
    Verify(PassError),
}

impl LocalError {
    /// Whether the error is the caller's mistake (exit 2), not a failed run.
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::Usage(_))
    }
}

fn file_error(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> LocalError {
    let path = path.to_owned();
    move |source| LocalError::File {
        action,
        path,
        source,
    }
}

/// `-z` output as paths.
fn split_paths(bytes: &[u8]) -> BTreeSet<Vec<u8>> {
    bytes
        .split(|byte| *byte == 0)
        .filter(|path| !path.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// The developer's repository, as read once at the start.
struct Repository {
    top: PathBuf,
    objects: PathBuf,
    object_format: String,
    head: String,
}

/// What the copy holds.
#[derive(Debug, Default)]
struct Copied {
    files: usize,
    links: usize,
    bytes: u64,
}

/// Everything the copy's preparation produced.
struct Prepared {
    repository: Repository,
    base: Base,
    head: String,
    diff_text: String,
    diff: PullRequestDiff,
    readable: Vec<PathBuf>,
}

impl LocalReviewer {
    /// Reviews the working tree at `request.path` (see the module documentation).
    pub async fn review(
        &self,
        request: &LocalRequest,
        progress: &Progress,
    ) -> Result<LocalReport, LocalError> {
        let started = Instant::now();
        let review_id = ReviewId(Uuid::new_v4());
        let job_directory = self
            .settings
            .work_dir
            .join("local")
            .join(review_id.to_string());
        create_private_directories(&job_directory)?;
        let git_home = job_directory.join("git-home");
        create_private_directories(&git_home)?;
        let tree = job_directory.join("tree");
        let git = LocalGit::for_local_review(
            git_home.clone(),
            self.settings.git_timeout,
            self.settings.containment.clone(),
        );
        let result = self
            .review_in(
                request,
                progress,
                &git,
                review_id,
                &job_directory,
                &tree,
                started,
            )
            .await;
        let removed = remove_directory(tree.clone())
            .await
            .and(remove_directory(git_home).await);
        if let Err(error) = removed {
            tracing::warn!(%error, tree = %tree.display(), "could not remove the copy of the working tree");
        }
        let mut report = result?;
        report.timings.finish = started
            .elapsed()
            .saturating_sub(report.timings.prepare + report.timings.gate + report.timings.passes);
        Ok(report)
    }

    // One linear flow (snapshot, gate, passes, merge, present) reads better whole.
    #[allow(clippy::too_many_arguments, clippy::too_many_lines)]
    async fn review_in(
        &self,
        request: &LocalRequest,
        progress: &Progress,
        git: &LocalGit,
        review_id: ReviewId,
        job_directory: &Path,
        tree: &Path,
        started: Instant,
    ) -> Result<LocalReport, LocalError> {
        let prepared = self.prepare(request, progress, git, tree).await?;
        let timings = Timings {
            prepare: started.elapsed(),
            ..Timings::default()
        };
        let Prepared {
            repository,
            base,
            head,
            diff_text,
            diff,
            readable,
        } = prepared;
        let name = repository.top.file_name().map_or_else(
            || "repository".to_owned(),
            |name| name.to_string_lossy().into_owned(),
        );
        let name: String = name
            .chars()
            .map(|character| {
                if character.is_whitespace() || character == '/' {
                    '-'
                } else {
                    character
                }
            })
            .collect();
        let mut report = LocalReport {
            repository: repository.top.clone(),
            base: base.clone(),
            head_sha: repository.head.clone(),
            outcome: LocalOutcome::NoChanges,
            markdown: String::new(),
            delivery: None,
            job_directory: job_directory.to_owned(),
            agent_cost_usd: 0.0,
            agent_turns: 0,
            withheld: Vec::new(),
            timings,
        };
        if diff.is_empty() {
            progress.note(format!(
                "the working tree does not differ from {}",
                base.description
            ));
            return Ok(report);
        }

        let snapshot = PullRequestSnapshot {
            version: SNAPSHOT_VERSION,
            repository: format!("local/{name}"),
            bot_login: None,
            pull_request: PullRequestInfo {
                number: 1,
                title: request.title.clone().unwrap_or_else(|| {
                    format!("Local changes in {name} against {}", base.description)
                }),
                body: request.body.clone().unwrap_or_default(),
                author: String::new(),
                base_ref: BASE_BRANCH.to_owned(),
                head_ref: HEAD_BRANCH.to_owned(),
                base_sha: base.sha.clone(),
                head_sha: head.clone(),
            },
            diff: diff_text,
            files: Vec::new(),
            files_truncated: false,
            review_threads: Vec::new(),
            issue_comments: Vec::new(),
        };
        let snapshot_path = job_directory.join("snapshot.json");
        write_private(&snapshot_path, &snapshot.to_json())
            .map_err(|error| LocalError::Prepare(error.to_string()))?;

        // The gate.
        let gate_started = Instant::now();
        let step = progress.step("build and test");
        let mut gate_settings = self.settings.build_gate.clone();
        if let Some(confinement) = gate_settings.confinement.take() {
            gate_settings.confinement =
                Some(confinement.with_readable_paths(readable.iter().cloned()));
        }
        // The operator's commands (for `--repository`), else the working
        // tree's own `.review-bot.toml` (the developer's own code, so their
        // edits to it count), else the documents.
        let mut notes = Vec::new();
        let file = match &self.settings.build_commands {
            Some(_) => RepositoryFile::Absent,
            None => {
                command_sources::read_in_directory(tree).map_err(|source| LocalError::File {
                    action: "read",
                    path: tree.join(review_core::build_commands::REPOSITORY_FILE),
                    source,
                })?
            }
        };
        if let Some(problem) = file.problem() {
            progress.note(format!("{problem}; using the next source"));
            notes.push(format!(
                "_`.review-bot.toml` cannot be used ({}); the next source was used._",
                review_core::payload::inline_code(problem)
            ));
        }
        let explicit = command_sources::explicit(self.settings.build_commands.as_ref(), &file);
        let gate = match build_gate::discover(
            tree,
            explicit
                .as_ref()
                .map(|(source, commands)| (source.clone(), commands)),
        )
        .await
        {
            Err(error) => Err(error),
            Ok(review_core::build_commands::Discovery::NothingFound { searched }) => {
                Ok(GateOutcome::NoCommands { searched })
            }
            Ok(review_core::build_commands::Discovery::Found(found)) => {
                build_gate::run_commands(&gate_settings, tree, job_directory, &found).await
            }
        };
        match gate {
            Err(error) => {
                step.failed(error.to_string());
                return Err(error.into());
            }
            Ok(GateOutcome::Failed(failure) | GateOutcome::EnvironmentFailure(failure)) => {
                step.failed(format!(
                    "`{}` ({}) {}",
                    failure.command,
                    build_gate::command_origin(&failure),
                    failure.missing.as_deref().map_or_else(
                        || failure.end.to_string(),
                        |missing| format!("could not start: {missing}")
                    )
                ));
                report.timings.gate = gate_started.elapsed();
                let failure_report = build_gate::failure_comment(&failure);
                report.markdown = format!(
                    "# Local review of {name}\n\nAgainst {}.\n\n{failure_report}\n",
                    base.description
                );
                report.outcome = LocalOutcome::BuildFailed {
                    report: failure_report,
                };
                report.delivery = Some(
                    self.present(&report.markdown, &repository.top, job_directory)
                        .await,
                );
                return Ok(report);
            }
            Ok(GateOutcome::Passed { commands, source }) => {
                step.done(format!(
                    "{} command{} from {} passed",
                    commands.len(),
                    if commands.len() == 1 { "" } else { "s" },
                    source.name()
                ));
                let listed: Vec<String> = commands
                    .iter()
                    .map(|command| review_core::payload::inline_code(command))
                    .collect();
                notes.push(format!("_Build and tests passed: {}._", listed.join(", ")));
            }
            Ok(GateOutcome::NoCommands { searched }) => {
                step.done("no commands documented; skipped");
                notes.push(format!(
                    "_No build or test commands are documented (looked in {}), so the build and \
                     test gate was skipped._",
                    searched.join(", ")
                ));
            }
        }
        report.timings.gate = gate_started.elapsed();
        notes.extend(not_reviewed_note(&diff));

        // The passes.
        let passes_started = Instant::now();
        let panel_socket = self
            .settings
            .panel_socket
            .as_deref()
            .filter(|socket| panel_listens(socket));
        let mut claude_settings = self.claude.clone();
        if let Some(confinement) = claude_settings.confinement.take() {
            let mut confinement = confinement.with_readable_paths(readable.iter().cloned());
            if let Some(directory) = panel_socket.and_then(Path::parent) {
                confinement = confinement.with_readable(directory);
            }
            claude_settings.confinement = Some(confinement);
        }
        let model = claude_settings.model.clone();
        let claude = ClaudeCode::new(claude_settings);
        let paths: Vec<&str> = diff.files().iter().map(|file| file.path.as_str()).collect();
        let detection = review_core::platform::detect(paths);
        let setup = PassSetup {
            claude: &claude,
            prompts: &self.prompts,
            guides: &detection.guides,
            mcp_binary: &self.settings.mcp_binary,
            mcp_tool_timeout: self.settings.mcp_tool_timeout,
            snapshot_path: &snapshot_path,
            worktree: tree,
            run_directory: job_directory,
            review_id,
            repository: &snapshot.repository,
            number: snapshot.pull_request.number,
            title: &snapshot.pull_request.title,
            build_note: None,
            re_review: None,
        };
        let options = PassOptions {
            panel_socket,
            base_ref: Some(BASE_BRANCH),
        };
        let mut passes = Vec::new();
        for pass in [Pass::Architecture, Pass::Detailed] {
            let step = progress.step(match pass {
                Pass::Architecture => "architecture pass",
                Pass::Detailed => "detailed pass",
            });
            match run_pass_with(&setup, pass, &options).await {
                Ok(result) => {
                    report.agent_cost_usd += result.run.total_cost_usd;
                    report.agent_turns += result.run.num_turns;
                    report.timings.agent += result.run.duration;
                    step.done(format!(
                        "{} request{}, {}, ${:.2}, {:.1} s",
                        result.requests.len(),
                        if result.requests.len() == 1 { "" } else { "s" },
                        crate::progress::turns(result.run.num_turns),
                        result.run.total_cost_usd,
                        result.run.duration.as_secs_f64(),
                    ));
                    passes.push((pass, result.requests));
                }
                Err(error) => {
                    step.failed(error.to_string());
                    return Err(LocalError::Pass {
                        pass,
                        source: error,
                    });
                }
            }
        }
        report.timings.passes = passes_started.elapsed();

        // Merge and anchor.
        let step = progress.step("merge and anchor");
        let composed = compose::compose(&compose::ComposeInput {
            review_id,
            snapshot: &snapshot,
            diff: &diff,
            passes: &passes,
            already_posted: &|_, _, _| false,
            notes,
            reviewed_at: chrono::Utc::now().to_rfc3339(),
            reviewer: format!("claude-code/{model}"),
            // A local review shows every finding: nothing is posted, so no cap.
            noise: review_core::findings::noise::NoiseControl {
                max_inline_comments: u32::MAX,
                ..review_core::findings::noise::NoiseControl::default()
            },
            threads: &[],
            resolved_earlier: &BTreeSet::new(),
            scope: None,
        });
        let mut findings = composed.findings;
        let duplicates = composed.duplicates;
        let step = if self.settings.verify && !findings.line_comments.is_empty() {
            step.done(format!(
                "{} finding{}, {duplicates} duplicate{} dropped",
                findings.line_comments.len(),
                if findings.line_comments.len() == 1 {
                    ""
                } else {
                    "s"
                },
                if duplicates == 1 { "" } else { "s" },
            ));
            let verify_step = progress.step("verification pass");
            let started = Instant::now();
            let comments = std::mem::take(&mut findings.line_comments);
            match crate::review::verify::verify(
                &claude,
                tree,
                job_directory,
                &snapshot.diff,
                BASE_BRANCH,
                &comments,
                self.settings.min_confidence,
            )
            .await
            {
                Ok(verification) => {
                    report.agent_cost_usd += verification.spend.cost_usd;
                    report.agent_turns += verification.spend.turns;
                    report.timings.agent += verification.spend.duration;
                    report.timings.passes += started.elapsed();
                    verify_step.done(format!(
                        "{} kept, {} withheld as unlikely, ${:.2}",
                        verification.kept.len(),
                        verification.withheld.len(),
                        verification.spend.cost_usd
                    ));
                    findings.line_comments = verification.kept;
                    findings.review_summary.confidence_breakdown =
                        compose::breakdown(&findings.line_comments);
                    report.withheld = verification.withheld;
                }
                Err(error) => {
                    verify_step.failed(error.to_string());
                    return Err(LocalError::Verify(error));
                }
            }
            progress.step("anchor")
        } else {
            step
        };
        let placements: Vec<&'static str> = findings
            .line_comments
            .iter()
            .map(|comment| review_core::anchor::anchor(&diff, &comment.location()).name())
            .collect();
        step.done(format!(
            "{} finding{}, {} duplicate{} dropped",
            findings.line_comments.len(),
            if findings.line_comments.len() == 1 {
                ""
            } else {
                "s"
            },
            duplicates,
            if duplicates == 1 { "" } else { "s" },
        ));
        report.markdown = review_markdown(&name, &base, &findings, &placements);
        if let Some(note) = crate::review::verify::withheld_note(report.withheld.len()) {
            let _ = write!(report.markdown, "\n{note}\n");
        }
        report.delivery = Some(
            self.present(&report.markdown, &repository.top, job_directory)
                .await,
        );
        report.outcome = LocalOutcome::Reviewed {
            findings: Box::new(findings),
            verdict: composed.outcome,
            placements,
        };
        Ok(report)
    }

    /// Steps 1–4: the repository, the base, the copy, the diff.
    async fn prepare(
        &self,
        request: &LocalRequest,
        progress: &Progress,
        git: &LocalGit,
        tree: &Path,
    ) -> Result<Prepared, LocalError> {
        let step = progress.step("repository");
        let repository = match read_repository(git, &request.path).await {
            Ok(repository) => repository,
            Err(error) => {
                step.failed(error.to_string());
                return Err(error);
            }
        };
        step.done(format!(
            "{} at {}",
            repository.top.display(),
            short_sha(&repository.head)
        ));

        let step = progress.step("base");
        let base = match choose_base(git, &repository, request.base.as_deref()).await {
            Ok(base) => base,
            Err(error) => {
                step.failed(error.to_string());
                return Err(error);
            }
        };
        step.done(base.description.clone());

        let step = progress.step("copy the working tree");
        match copy_working_tree(git, &repository, &base.sha, tree).await {
            Ok((head, copied, changed)) => {
                step.done(format!(
                    "{} files, {} links, {:.1} MB; {changed} path{} differ from HEAD",
                    copied.files,
                    copied.links,
                    f64::from(u32::try_from(copied.bytes >> 10).unwrap_or(u32::MAX)) / 1024.0,
                    if changed == 1 { "" } else { "s" },
                ));
                let step = progress.step("diff");
                let diff_text = match git
                    .run(
                        tree,
                        &[
                            "diff",
                            "--no-ext-diff",
                            "--no-textconv",
                            "--no-color",
                            "-M",
                            "--src-prefix=a/",
                            "--dst-prefix=b/",
                            BASE_BRANCH,
                            HEAD_BRANCH,
                            "--",
                        ],
                    )
                    .await
                {
                    Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    Err(error) => {
                        step.failed(error.to_string());
                        return Err(error.into());
                    }
                };
                let diff = match PullRequestDiff::parse(&diff_text) {
                    Ok(diff) => diff,
                    Err(error) => {
                        step.failed(error.to_string());
                        return Err(LocalError::Prepare(format!(
                            "git's diff of the working tree does not parse: {error}"
                        )));
                    }
                };
                step.done(format!(
                    "{} file{} changed against {}",
                    diff.len(),
                    if diff.len() == 1 { "" } else { "s" },
                    short_sha(&base.sha)
                ));
                let readable = readable_object_directories(&repository.objects);
                Ok(Prepared {
                    repository,
                    base,
                    head,
                    diff_text,
                    diff,
                    readable,
                })
            }
            Err(error) => {
                step.failed(error.to_string());
                Err(error)
            }
        }
    }

    /// Sends the review to the panel (one `replace`), else to `review.md`.
    async fn present(
        &self,
        markdown: &str,
        top: &Path,
        job_directory: &Path,
    ) -> Result<Delivery, String> {
        let settings = PanelSettings::new(
            self.settings.panel_socket.clone(),
            Some(job_directory.to_owned()),
        );
        let base_uri = top.display().to_string();
        settings
            .deliver(&PanelMessage {
                protocol: PROTOCOL,
                kind: "present_review",
                mode: "replace",
                section: None,
                base_uri: &base_uri,
                content: markdown,
                document: markdown,
            })
            .await
            .map_err(|error| error.to_string())
    }
}

/// Whether a panel may listen on `socket`: a socket file in a directory that
/// is ours and private (`review_mcp::panel::check_socket_directory`).
fn panel_listens(socket: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt as _;
    socket
        .parent()
        .is_some_and(|directory| review_mcp::panel::check_socket_directory(directory).is_ok())
        && std::fs::symlink_metadata(socket).is_ok_and(|metadata| metadata.file_type().is_socket())
}

async fn read_repository(git: &LocalGit, path: &Path) -> Result<Repository, LocalError> {
    let usage = |reason: String| LocalError::Usage(reason);
    if !path.is_dir() {
        return Err(usage(format!("{} is not a directory", path.display())));
    }
    let args: Vec<&OsStr> = [
        "rev-parse",
        "--path-format=absolute",
        "--show-toplevel",
        "--git-path",
        "objects",
        "--show-object-format",
    ]
    .iter()
    .map(OsStr::new)
    .collect();
    let run = git.run_raw(path, &args, None, &[]).await?;
    if run.code != Some(0) {
        return Err(usage(format!(
            "{} is not in a git working tree: {}",
            path.display(),
            run.stderr
        )));
    }
    let text = String::from_utf8_lossy(&run.stdout).into_owned();
    let mut lines = text.lines();
    let (Some(top), Some(objects), Some(format)) = (lines.next(), lines.next(), lines.next())
    else {
        return Err(usage(format!(
            "{} is not in a git working tree",
            path.display()
        )));
    };
    let top = PathBuf::from(top);
    let head = git.commit(&top, "HEAD").await?.ok_or_else(|| {
        usage(format!(
            "{} has no commit yet: commit something first, or there is no base to compare with",
            top.display()
        ))
    })?;
    Ok(Repository {
        objects: PathBuf::from(objects),
        object_format: format.to_owned(),
        top,
        head,
    })
}

async fn choose_base(
    git: &LocalGit,
    repository: &Repository,
    requested: Option<&str>,
) -> Result<Base, LocalError> {
    let top = &repository.top;
    if let Some(revision) = requested {
        let revision = revision.trim();
        if revision.is_empty() || revision.starts_with('-') {
            return Err(LocalError::Usage(format!(
                "--base {revision:?} is not a revision"
            )));
        }
        let sha = git.commit(top, revision).await?.ok_or_else(|| {
            LocalError::Usage(format!(
                "--base {revision}: no commit of that name in {}",
                top.display()
            ))
        })?;
        return Ok(Base {
            description: format!("{revision} ({})", short_sha(&sha)),
            sha,
        });
    }
    let origin_head = {
        let args: Vec<&OsStr> = ["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"]
            .iter()
            .map(OsStr::new)
            .collect();
        let run = git.run_raw(top, &args, None, &[]).await?;
        (run.code == Some(0))
            .then(|| String::from_utf8_lossy(&run.stdout).trim().to_owned())
            .filter(|name| !name.is_empty())
    };
    let candidates = origin_head
        .into_iter()
        .chain(["refs/heads/main".to_owned(), "refs/heads/master".to_owned()]);
    let mut branch = None;
    for candidate in candidates {
        if let Some(sha) = git.commit(top, &candidate).await? {
            branch = Some((candidate, sha));
            break;
        }
    }
    let Some((branch, branch_sha)) = branch else {
        return Err(LocalError::Usage(format!(
            "no default branch in {}: neither refs/remotes/origin/HEAD, main nor master \
             exists; name the base with --base REF",
            top.display()
        )));
    };
    let short_name = branch
        .strip_prefix("refs/remotes/")
        .or_else(|| branch.strip_prefix("refs/heads/"))
        .unwrap_or(&branch)
        .to_owned();
    let merge_base = ["merge-base", repository.head.as_str(), branch_sha.as_str()];
    let args: Vec<&OsStr> = merge_base.iter().map(OsStr::new).collect();
    let run = git.run_raw(top, &args, None, &[]).await?;
    let sha = String::from_utf8_lossy(&run.stdout).trim().to_owned();
    if run.code != Some(0) || sha.is_empty() {
        return Err(LocalError::Usage(format!(
            "HEAD and {short_name} have no common history; name the base with --base REF"
        )));
    }
    Ok(Base {
        description: format!(
            "the merge base of HEAD and {short_name} ({})",
            short_sha(&sha)
        ),
        sha,
    })
}

/// Copies the working tree and builds the copy's repository; returns the
/// copy's head commit, what was copied, and how many paths differ from `HEAD`.
#[allow(clippy::too_many_lines)] // One linear sequence of git steps.
async fn copy_working_tree(
    git: &LocalGit,
    repository: &Repository,
    base: &str,
    tree: &Path,
) -> Result<(String, Copied, usize), LocalError> {
    let top = &repository.top;
    let (tracked, untracked, changed) = tokio::try_join!(
        git.run(top, &["ls-files", "-z", "--cached"]),
        git.run(top, &["ls-files", "-z", "--others", "--exclude-standard"]),
        git.run(
            top,
            &[
                "diff",
                "--name-only",
                "-z",
                "--no-renames",
                "--no-ext-diff",
                "HEAD",
                "--"
            ]
        ),
    )?;
    let untracked = split_paths(&untracked);
    let mut listed = split_paths(&tracked);
    listed.extend(untracked.iter().cloned());
    let mut changed = split_paths(&changed);
    changed.extend(untracked);

    // The copy's repository first (git init wants to make the directory).
    let format_option = format!("--object-format={}", repository.object_format);
    let parent = tree.parent().unwrap_or(Path::new("/"));
    let tree_argument = tree.display().to_string();
    git.run(
        parent,
        &[
            "init",
            "--quiet",
            "--template=",
            format_option.as_str(),
            tree_argument.as_str(),
        ],
    )
    .await?;
    let alternates = tree.join(".git/objects/info/alternates");
    std::fs::create_dir_all(tree.join(".git/objects/info"))
        .map_err(file_error("create", &alternates))?;
    let mut line = repository.objects.as_os_str().as_bytes().to_vec();
    line.push(b'\n');
    std::fs::write(&alternates, line).map_err(file_error("write", &alternates))?;

    let source = top.clone();
    let destination = tree.to_owned();
    let copy_list = listed.clone();
    let copied = tokio::task::spawn_blocking(move || copy_files(&source, &destination, &copy_list))
        .await
        .map_err(|error| LocalError::Prepare(format!("the copy stopped: {error}")))??;

    // The index: HEAD's tree, then every path that differs, as copied
    // (submodules, which are directories, keep HEAD's commit).
    git.run(tree, &["read-tree", repository.head.as_str()])
        .await?;
    let updates: Vec<&Vec<u8>> = changed
        .iter()
        .filter(|path| {
            !std::fs::symlink_metadata(top.join(OsStr::from_bytes(path)))
                .is_ok_and(|metadata| metadata.is_dir())
        })
        .collect();
    let mut head = repository.head.clone();
    if !updates.is_empty() {
        let mut input = Vec::new();
        for path in &updates {
            input.extend_from_slice(path);
            input.push(0);
        }
        git.run_with(
            tree,
            &["update-index", "--add", "--remove", "-z", "--stdin"],
            Some(input),
            &[],
        )
        .await?;
        let written = git.line(tree, &["write-tree"]).await?;
        let head_tree = format!("{}^{{tree}}", repository.head);
        let head_tree = git.line(tree, &["rev-parse", head_tree.as_str()]).await?;
        if written != head_tree {
            let identity = [
                ("GIT_AUTHOR_NAME", OsStr::new("review-bot")),
                ("GIT_AUTHOR_EMAIL", OsStr::new("review-bot@localhost")),
                ("GIT_COMMITTER_NAME", OsStr::new("review-bot")),
                ("GIT_COMMITTER_EMAIL", OsStr::new("review-bot@localhost")),
            ];
            let output = git
                .run_with(
                    tree,
                    &[
                        "commit-tree",
                        written.as_str(),
                        "-p",
                        repository.head.as_str(),
                        "-m",
                        "review-bot: working tree (uncommitted and untracked changes)",
                    ],
                    None,
                    &identity,
                )
                .await?;
            String::from_utf8_lossy(&output)
                .trim()
                .clone_into(&mut head);
        }
    }
    let base_ref = format!("refs/heads/{BASE_BRANCH}");
    let head_ref = format!("refs/heads/{HEAD_BRANCH}");
    git.run(tree, &["update-ref", base_ref.as_str(), base])
        .await?;
    git.run(tree, &["update-ref", head_ref.as_str(), head.as_str()])
        .await?;
    git.run(tree, &["symbolic-ref", "HEAD", head_ref.as_str()])
        .await?;
    Ok((head, copied, updates.len()))
}

/// Copies `paths` from `source` to `destination`: regular files (with their
/// permissions), then symbolic links (as links). Directories (submodules),
/// missing paths (deleted in the working tree) and special files are skipped.
/// Nothing is written through a link: every directory on the way is checked
/// to be a real one, and links come last.
fn copy_files(
    source: &Path,
    destination: &Path,
    paths: &BTreeSet<Vec<u8>>,
) -> Result<Copied, LocalError> {
    let mut copied = Copied::default();
    let mut directories: HashSet<PathBuf> = HashSet::new();
    directories.insert(destination.to_owned());
    let mut links = Vec::new();
    for path in paths {
        let relative = Path::new(OsStr::from_bytes(path));
        if relative.is_absolute()
            || relative
                .components()
                .any(|component| !matches!(component, std::path::Component::Normal(_)))
        {
            continue;
        }
        let from = source.join(relative);
        let Ok(metadata) = std::fs::symlink_metadata(&from) else {
            continue;
        };
        let to = destination.join(relative);
        if metadata.file_type().is_symlink() {
            links.push((from, to));
        } else if metadata.is_file() {
            ensure_directories(destination, relative, &mut directories)?;
            copied.bytes += std::fs::copy(&from, &to).map_err(file_error("copy", &from))?;
            copied.files += 1;
        }
    }
    for (from, to) in links {
        let relative = to.strip_prefix(destination).unwrap_or(&to).to_owned();
        ensure_directories(destination, &relative, &mut directories)?;
        let target = std::fs::read_link(&from).map_err(file_error("read the link", &from))?;
        std::os::unix::fs::symlink(&target, &to).map_err(file_error("make the link", &to))?;
        copied.links += 1;
    }
    Ok(copied)
}

/// Makes the directories above `relative` under `root`, refusing any that
/// exists as something else (a link).
fn ensure_directories(
    root: &Path,
    relative: &Path,
    known: &mut HashSet<PathBuf>,
) -> Result<(), LocalError> {
    let Some(parent) = relative.parent() else {
        return Ok(());
    };
    let mut current = root.to_owned();
    for component in parent.components() {
        current.push(component);
        if known.contains(&current) {
            continue;
        }
        match std::fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => {
                return Err(LocalError::Prepare(format!(
                    "{} in the copy is not a directory",
                    current.display()
                )));
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(&current).map_err(file_error("create", &current))?;
            }
            Err(error) => return Err(file_error("inspect", &current)(error)),
        }
        known.insert(current.clone());
    }
    Ok(())
}

/// The developer's object directory and the ones its `info/alternates`
/// names: what the copy's git reads, so what the confinement must show.
fn readable_object_directories(objects: &Path) -> Vec<PathBuf> {
    let mut directories = vec![objects.to_owned()];
    if let Ok(text) = std::fs::read_to_string(objects.join("info/alternates")) {
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let path = objects.join(line);
            if let Ok(path) = path.canonicalize() {
                directories.push(path);
            }
        }
    }
    directories
}

async fn remove_directory(path: PathBuf) -> Result<(), std::io::Error> {
    tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    })
    .await
    .unwrap_or_else(|error| Err(std::io::Error::other(error)))
}

fn create_private_directories(path: &Path) -> Result<(), LocalError> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(file_error("create", path))
}

/// The note naming files the review could not read (binary files).
fn not_reviewed_note(diff: &PullRequestDiff) -> Option<String> {
    let lines: Vec<String> = diff
        .files()
        .iter()
        .filter(|file| file.binary || file.content_omitted)
        .map(|file| {
            format!(
                "- {}: binary file",
                review_core::payload::inline_code(&file.path)
            )
        })
        .collect();
    (!lines.is_empty()).then(|| {
        format!(
            "### Not reviewed\n\nThese files have no diff the review could read:\n\n{}",
            lines.join("\n")
        )
    })
}

/// The review as markdown for the panel: a table of the findings with file
/// references (`path#Lline`, resolved against the repository), each finding
/// in full, then the overview.
pub fn review_markdown(
    name: &str,
    base: &Base,
    findings: &Findings,
    placements: &[&str],
) -> String {
    let mut text = format!(
        "# Local review of {}\n\nThe working tree against {}.\n\n",
        cell(name),
        base.description
    );
    if findings.line_comments.is_empty() {
        text.push_str("No findings.\n\n");
    } else {
        text.push_str("## Findings\n\n| | Where | Finding | Confidence |\n|---|---|---|---|\n");
        for comment in &findings.line_comments {
            let _ = writeln!(
                text,
                "| {} | [{}:{}]({}#L{}) | {} | {} {} |",
                comment.severity.emoji(),
                cell(&comment.file),
                comment.line,
                link_target(&comment.file),
                comment.line,
                cell(&comment.title),
                comment.confidence_level.emoji(),
                comment.confidence,
            );
        }
        text.push('\n');
        for (comment, placement) in findings.line_comments.iter().zip(placements) {
            let _ = write!(
                text,
                "### {} {}\n\n[{}:{}]({}#L{}) · {} · confidence {} ({}){}\n\n{}\n\n",
                comment.severity.emoji(),
                cell(&comment.title),
                cell(&comment.file),
                comment.line,
                link_target(&comment.file),
                comment.line,
                comment.severity,
                comment.confidence,
                comment.confidence_level,
                if placement.starts_with("inline") || *placement == "moved" {
                    ""
                } else {
                    " · outside the diff"
                },
                comment.description.trim(),
            );
            if let Some(suggestion) = comment
                .suggestion
                .as_deref()
                .filter(|text| !text.trim().is_empty())
            {
                let _ = write!(text, "**Suggestion:** {}\n\n", suggestion.trim());
            }
        }
    }
    let overview = findings.review_summary.overview.trim();
    if !overview.is_empty() {
        let _ = write!(text, "## Overview\n\n{overview}\n");
    }
    text
}

/// Text fit for a table cell or a heading: one line, no `|`.
fn cell(text: &str) -> String {
    review_core::payload::single_line(text).replace('|', "\\|")
}

/// A path as a markdown link target (spaces and parentheses escaped).
fn link_target(path: &str) -> String {
    path.replace('%', "%25")
        .replace(' ', "%20")
        .replace('(', "%28")
        .replace(')', "%29")
}
