//! The write flow (`bot-changes-needed`; seed 004's write half, DESIGN.md
//! "The flows → Write"): the bot fixes what its review found, builds and
//! tests the fix, commits and pushes it as its own identity, answers the
//! threads, and hands the pull request to CI (`bot-ci-pending`).
//!
//! 1. **Cycle limit.** The bot's reviews and its fix commits on the pull
//!    request are the cycles so far ([`cycles`]: every fix counts, whatever
//!    CI said); at `review.max_cycles` the label becomes
//!    `bot-human-intervention` and one comment says so. A person handing it
//!    back restarts the count.
//! 2. **Fork.** A pull request whose head lives in another repository (a
//!    fork, or a deleted one) cannot be pushed to with the bot's credential
//!    (an installation token or PAT scoped to the base repository): a
//!    comment says so and the label becomes `bot-human-intervention`,
//!    before any checkout or agent run.
//! 3. **Checkout and merge.** The head is checked out (`checkout`); the build
//!    and test commands are discovered now, from the pull request's own
//!    documents, so the agent cannot change what judges its fix. A dry-run
//!    merge of the base (`git merge-tree` in the mirror) finds conflicts; if
//!    there are any, the base is merged in the worktree (never rebased), the
//!    merge-conflict pass resolves them, the conflicted files are checked
//!    for markers, and the merge is committed. Markers left → an error
//!    comment, nothing pushed, the label kept.
//! 4. **Code-fix pass.** Claude Code edits the worktree with our MCP server
//!    serving the snapshot (threads with replied-flags from the store); its
//!    answer is enforced with `--json-schema`.
//! 5. **Snapshot, then build.** What the agent changed is staged in a private
//!    index and written as a tree *before* the build runs (`gitops`), so no
//!    build output is ever committed; a commit the agent made despite the
//!    prompt is kept as changes (its files are what counts) and committed
//!    as the bot. Then the build + test gate.
//! 6. **Commit and push** as `git.author_name`/`git.author_email`, with the
//!    credential for that one command, to the head branch only, as a
//!    compare-and-swap on the head the job started from: if anyone pushed
//!    meanwhile nothing is overwritten, the step reports it and leaves the
//!    label (the next step starts from the new head).
//! 7. **Replies and label.** The agent's replies are posted with `thread::`
//!    footers that follow the latest review and recorded in the store;
//!    the label becomes `bot-ci-pending`. Before the push, what is left to
//!    do is saved in the store (`pushed`): a run killed after the push is
//!    finished by the next step anywhere — a fresh work directory, another
//!    replica — which finds the plan by the pull request's new head, runs no
//!    agent, pushes nothing and posts nothing twice.
//!
//! No change, or a failed build → an error comment naming why, label kept.
//! Any other error → one error comment, label kept, the run recorded as
//! failed.

pub mod agent;
pub mod cycles;
pub mod gitops;
mod pushed;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use review_core::agent_requests::ReplyTarget;
use review_core::build_commands::Discovery;
use review_core::footer::{self, Footer, ReviewId, ThreadId};
use review_core::labels::Outcome;
use review_core::snapshot::{CommentLookup, PullRequestSnapshot};
use review_github::{GitHubError, PullRequest, RepositoryName};
use review_mcp::github_snapshot::{GitHubPullRequest, snapshot_from_github};
use review_store::{CommentId, JobKind, NewRun, StoreError};
use uuid::Uuid;

use crate::build_gate::{self, BuildGateError, GateOutcome};
use crate::checkout::{CheckoutError, CheckoutRequest};
use crate::ci::{BotComments, set_outcome_label};
use crate::command_sources::{self, RepositoryFile, base_repository_file};
use crate::git::GitCredential;
use crate::progress::Progress;
use crate::review::agent_pass::{PassError, write_private};
use crate::review::post::{ReplyOutcome, ReplyToPost};
use crate::review::{Reviewer, short_sha};

use agent::{AgentSetup, run_fix_pass, run_merge_pass};
use gitops::{MergeCheck, PushOutcome, WriteGit, WriteGitError, admin_directory};
use pushed::{PlannedReply, PushedPlan};

/// Said when the bot's login is unknown.
const NO_BOT_LOGIN: &str = "github.bot_login is not set: the bot's reviews cannot be told apart, \
                            so only its fix commits count toward the cycle limit";

/// The namespace of the write flow's deterministic ids (UUID v5).
const WRITE_NAMESPACE: Uuid = Uuid::from_u128(0x2b7e_4c11_90d3_4a8e_b6f2_1c5d_8e3a_7f02);

/// The write flow's settings (from `[review]` and `[git]`).
#[derive(Debug, Clone)]
pub struct WriteSettings {
    /// `review.max_cycles`: the cycle (review or CI failure, and its fix) at
    /// which a human takes over ([`cycles`]).
    pub max_cycles: u32,
    /// `git.author_name`: the bot's commit identity.
    pub author_name: String,
    /// `git.author_email`.
    pub author_email: String,
}

/// One write step.
#[derive(Debug, Clone)]
pub struct WriteRequest {
    /// The repository.
    pub repository: RepositoryName,
    /// The pull request as the step read it (labels, head, base, fork).
    pub pull_request: PullRequest,
    /// The settings.
    pub settings: WriteSettings,
}

/// How the write step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOutcome {
    /// The cycle limit was reached: `bot-human-intervention`.
    CycleLimitReached {
        /// The cycles found ([`cycles::Cycles::current`]).
        cycles: usize,
        /// The bot's reviews among them.
        reviews: usize,
        /// The bot's fix commits among them.
        fixes: usize,
    },
    /// The head is in a fork the bot cannot push to: `bot-human-intervention`.
    Fork {
        /// `owner/name` of the head repository, when it still exists.
        head_repository: Option<String>,
    },
    /// Fixed, built, committed and pushed: `bot-ci-pending`.
    Pushed,
    /// Someone pushed while the bot worked: nothing pushed, label kept.
    HeadMoved {
        /// What git or GitHub said.
        reason: String,
    },
    /// A person decided while the bot worked (closed the pull request,
    /// removed `bot-changes-needed`, or handed it to a human): nothing pushed,
    /// posted or relabelled (issue 25 item 3).
    Withdrawn {
        /// What the person did.
        reason: String,
    },
    /// Not started: the pull request reached its agent cost cap (handed to
    /// a human), or the day's cap is reached (waits for the next day).
    CostCapped {
        /// What happened, in one sentence.
        reason: String,
    },
    /// Nothing to push (no change, failed build, unresolved conflicts): an
    /// error comment, label kept.
    NotFixed {
        /// Why, in a few words.
        why: String,
    },
}

/// The figures of a write step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteSummary {
    /// How it ended (`None` only before it was decided).
    pub outcome: Option<WriteOutcome>,
    /// The head commit the step started from.
    pub head_sha: String,
    /// The commit pushed.
    pub pushed_sha: Option<String>,
    /// True when the base branch was merged (conflicts resolved).
    pub merged: bool,
    /// Paths the fix changed.
    pub files_changed: usize,
    /// Threads the agent says it addressed.
    pub threads_addressed: usize,
    /// Replies posted.
    pub replies_posted: usize,
    /// The comment posted (cycle limit, fork, not fixed, error).
    pub comment_url: Option<String>,
    /// The bot label afterwards (`None`: unchanged).
    pub label: Option<String>,
    /// What the agent runs cost, in US dollars.
    pub agent_cost_usd: f64,
    /// Their turns.
    pub agent_turns: u32,
    /// Their wall time.
    pub agent_time: Duration,
    /// True when this step finished an earlier, killed step's push.
    pub resumed: bool,
}

/// A completed write step.
pub type WriteReport = WriteSummary;

impl WriteSummary {
    /// The one line `review-bot step` prints last.
    pub fn summary_line(&self, wall: Duration) -> String {
        let outcome = match &self.outcome {
            Some(WriteOutcome::CycleLimitReached {
                cycles,
                reviews,
                fixes,
            }) => {
                format!("cycle limit reached ({cycles} cycles: {reviews} reviews, {fixes} fixes)")
            }
            Some(WriteOutcome::Fork { head_repository }) => format!(
                "fork {} cannot be pushed to",
                head_repository.as_deref().unwrap_or("(deleted)")
            ),
            Some(WriteOutcome::Pushed) => format!(
                "pushed {}",
                self.pushed_sha.as_deref().map_or("", short_sha)
            ),
            Some(WriteOutcome::HeadMoved { reason }) => {
                format!("head moved, nothing pushed ({reason})")
            }
            Some(WriteOutcome::Withdrawn { reason }) => {
                format!("nothing pushed: {reason}")
            }
            Some(WriteOutcome::NotFixed { why }) => format!("not fixed: {why}"),
            Some(WriteOutcome::CostCapped { reason }) => format!("not started: {reason}"),
            None => "not fixed".to_owned(),
        };
        let mut parts = vec![outcome];
        if let Some(url) = &self.comment_url {
            parts.push(url.clone());
        }
        if self.merged {
            parts.push("base merged".to_owned());
        }
        parts.push(format!(
            "{} file{} changed",
            self.files_changed,
            if self.files_changed == 1 { "" } else { "s" }
        ));
        parts.push(format!(
            "{} repl{}",
            self.replies_posted,
            if self.replies_posted == 1 { "y" } else { "ies" }
        ));
        parts.push(format!(
            "label {}",
            self.label.as_deref().unwrap_or("unchanged")
        ));
        parts.push(format!(
            "agent ${:.2}, {}, {:.1} s",
            self.agent_cost_usd,
            crate::progress::turns(self.agent_turns),
            self.agent_time.as_secs_f64()
        ));
        parts.push(format!("wall {:.1} s", wall.as_secs_f64()));
        if self.resumed {
            parts.push("resumed".to_owned());
        }
        parts.join(" · ")
    }
}

/// Why a write step failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// GitHub failed (after retries).
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The checkout failed.
    #[error(transparent)]
    Checkout(#[from] CheckoutError),
    /// A git command of the write flow failed.
    #[error(transparent)]
    Git(#[from] WriteGitError),
    /// The build gate could not run.
    #[error(transparent)]
    BuildGate(#[from] BuildGateError),
    /// An agent run failed.
    #[error("the {pass} pass failed: {source}")]
    Pass {
        /// `merge-conflict` or `code-fix`.
        pass: &'static str,
        /// Why.
        source: PassError,
    },
    /// Something the flow prepares could not be made.
    #[error("{0}")]
    Prepare(String),
}

impl WriteError {
    /// What failed, in one sentence fit for the pull request.
    pub fn public_summary(&self) -> String {
        match self {
            Self::GitHub(error) => format!("a GitHub request failed: {error}"),
            Self::Store(_) => "the bot's database failed (details in the bot's log)".to_owned(),
            Self::Checkout(_) | Self::Git(_) => {
                "a git command failed (details in the bot's log)".to_owned()
            }
            Self::BuildGate(_) => {
                "the build and test commands could not be started (details in the bot's log)"
                    .to_owned()
            }
            Self::Pass { pass, source } => {
                format!("the {pass} pass failed: {}", source.public_summary())
            }
            Self::Prepare(_) => {
                "the fix could not be prepared (details in the bot's log)".to_owned()
            }
        }
    }
}

/// A failed write step.
#[derive(Debug)]
pub struct WriteFailure {
    /// What went wrong.
    pub error: WriteError,
    /// The error comment's page, when one was posted.
    pub reported: Option<String>,
    /// The figures so far.
    pub summary: WriteSummary,
}

impl std::fmt::Display for WriteFailure {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(formatter)
    }
}

/// A write step in progress.
struct Job<'a> {
    reviewer: &'a Reviewer,
    request: &'a WriteRequest,
    progress: &'a Progress,
    run_uuid: Uuid,
    run_directory: PathBuf,
    summary: WriteSummary,
    latest_review: Option<ReviewId>,
    /// The bot's status comment on the pull request (`status`) as the job
    /// read it, id and body, when it has one: failures update it instead of
    /// adding a comment each, and its attempt count goes on.
    status_comment: Option<(u64, String)>,
    /// The run in the store, once started: the agent passes are recorded
    /// under it (their cost counts toward the pull request's and the day's).
    run_id: Option<review_store::RunId>,
}

impl Reviewer {
    /// Runs the write flow once (see the module documentation).
    pub async fn write(
        &self,
        request: &WriteRequest,
        progress: &Progress,
    ) -> Result<WriteReport, WriteFailure> {
        let run_uuid = Uuid::new_v4();
        let repository = &request.repository;
        let mut job = Job {
            reviewer: self,
            request,
            progress,
            run_uuid,
            run_directory: self
                .settings
                .work_dir
                .join("runs")
                .join(&repository.owner)
                .join(&repository.name)
                .join(format!("write-{run_uuid}")),
            summary: WriteSummary {
                head_sha: request.pull_request.head_sha.clone(),
                ..WriteSummary::default()
            },
            latest_review: None,
            status_comment: None,
            run_id: None,
        };
        // Held until the job ends: pruning leaves the run directory alone.
        // (Could it not be made, `start_run` says so.)
        let _run_lock = crate::runs::RunLock::acquire(&job.run_directory).ok();
        let span = tracing::info_span!(
            "write",
            repository = %repository,
            pull_request = request.pull_request.number,
            head_sha = %request.pull_request.head_sha,
            run = %run_uuid,
        );
        Box::pin(tracing::Instrument::instrument(job.run(), span)).await
    }
}

impl Job<'_> {
    fn number(&self) -> u64 {
        self.request.pull_request.number
    }

    async fn run(&mut self) -> Result<WriteReport, WriteFailure> {
        if let Some(resumed) = self.resume_pushed().await {
            return resumed;
        }

        if let Some(held) = self.cost_gate().await {
            return held;
        }

        let step = self.progress.step("cycles");
        let github = &self.reviewer.github;
        let repository = &self.request.repository;
        let number = self.number();
        let lists = tokio::try_join!(
            github.list_reviews(repository, number),
            github.list_review_comments(repository, number),
            github.list_issue_comments(repository, number),
            github.list_pull_request_commits(repository, number),
        );
        let (reviews, review_comments, issue_comments, commits) = match lists {
            Ok(lists) => lists,
            Err(error) => {
                step.failed(error.to_string());
                return Err(self.fail(error.into(), None).await);
            }
        };
        let bot_login = self.reviewer.settings.bot_login.clone();
        let bot = BotComments::from_lists(
            bot_login.as_deref(),
            &reviews,
            &review_comments,
            &issue_comments,
        );
        self.latest_review = bot.latest_review;
        self.status_comment = crate::status::find(
            &issue_comments,
            bot_login.as_deref(),
            crate::status::thread_id(repository, number),
        )
        .map(|comment| (comment.id, comment.body.clone()));
        let max = self.request.settings.max_cycles as usize;
        if bot_login.is_none() {
            self.progress.note(NO_BOT_LOGIN);
        }
        let found = cycles::count(
            bot_login.as_deref(),
            &reviews,
            &review_comments,
            &issue_comments,
            &commits,
        );
        let current = found.current();
        let detail = found.describe(max);
        if current >= max {
            step.done(format!("{detail}: limit reached"));
            return self
                .hand_to_human(
                    &bot,
                    WriteOutcome::CycleLimitReached {
                        cycles: current,
                        reviews: found.reviews,
                        fixes: found.fixes,
                    },
                )
                .await;
        }
        step.done(detail);

        let pull = &self.request.pull_request;
        let fork = pull.head_repository.is_none()
            || pull.head_repository != pull.base_repository
            || pull.base_repository.is_none();
        if fork {
            return self
                .hand_to_human(
                    &bot,
                    WriteOutcome::Fork {
                        head_repository: pull.head_repository.clone(),
                    },
                )
                .await;
        }

        let run_id = match self.start_run().await {
            Ok(run_id) => run_id,
            Err(error) => return Err(self.fail(error, None).await),
        };
        self.run_id = Some(run_id);
        match self.fix(&review_comments, &issue_comments).await {
            Ok(()) => {
                let outcome = match &self.summary.outcome {
                    Some(WriteOutcome::Pushed) => "pushed",
                    Some(WriteOutcome::HeadMoved { .. }) => "head-moved",
                    Some(WriteOutcome::Withdrawn { .. }) => "withdrawn",
                    _ => "not-fixed",
                };
                if let Err(error) = self.reviewer.store.finish_run(run_id, outcome).await {
                    tracing::warn!(%error, "could not record the write run as finished");
                }
                Ok(self.summary.clone())
            }
            Err(error) => Err(self.fail(error, Some(run_id)).await),
        }
    }

    /// The cost caps, before anything else is read ([`crate::cost`]; the
    /// store answers): `Some` when the fix is not started.
    async fn cost_gate(&mut self) -> Option<Result<WriteReport, WriteFailure>> {
        let held = crate::cost::check_before_agent(
            &crate::cost::CapContext {
                store: &self.reviewer.store,
                target: crate::daemon::attempts::HandOverContext {
                    github: &self.reviewer.github,
                    repository: &self.request.repository,
                    pull_request: &self.request.pull_request,
                    job: review_core::labels::Job::Write,
                    bot_login: self.reviewer.settings.bot_login.as_deref(),
                    progress: self.progress,
                },
            },
            &self.reviewer.settings.cost_caps,
            false,
        )
        .await;
        match held {
            Ok(None) => None,
            Ok(Some(held)) => {
                if let crate::cost::Held::HandedOver { comment_url, .. } = &held {
                    self.summary.comment_url = Some(comment_url.clone());
                    self.summary.label = Some(
                        review_core::labels::Label::BotHumanIntervention
                            .name()
                            .to_owned(),
                    );
                }
                self.summary.outcome = Some(WriteOutcome::CostCapped {
                    reason: held.describe(),
                });
                Some(Ok(self.summary.clone()))
            }
            Err(crate::cost::CapError::Store(error)) => {
                Some(Err(self.fail(error.into(), None).await))
            }
            Err(crate::cost::CapError::GitHub(error)) => {
                Some(Err(self.fail(error.into(), None).await))
            }
        }
    }

    /// A step killed after its push left a plan under the new head, in the
    /// store (so a fresh work directory or another replica finds it): it is
    /// finished, and nothing else runs. `None` when there is none (the pull
    /// request's plans for other commits, pushes that never happened, are
    /// dropped).
    async fn resume_pushed(&mut self) -> Option<Result<WriteReport, WriteFailure>> {
        let request = self.request;
        let repository_name = request.repository.to_string();
        let head_sha = &request.pull_request.head_sha;
        let plan = match PushedPlan::load(
            &self.reviewer.store,
            &repository_name,
            self.number(),
            head_sha,
        )
        .await
        {
            Ok(plan) => plan,
            Err(error) => return Some(Err(self.fail(error.into(), None).await)),
        };
        if plan.is_none() {
            PushedPlan::remove_stale(
                &self.reviewer.store,
                &repository_name,
                self.number(),
                head_sha,
            )
            .await;
        }
        if let Some(plan) = plan {
            self.progress
                .note("this head is the bot's own push of a killed step; finishing it");
            self.summary.resumed = true;
            self.summary.pushed_sha = Some(plan.pushed_sha.clone());
            return Some(match self.finish_pushed(&plan, true).await {
                Ok(()) => Ok(self.summary.clone()),
                Err(error) => Err(self.fail(error, None).await),
            });
        }
        None
    }

    async fn start_run(&self) -> Result<review_store::RunId, WriteError> {
        std::fs::create_dir_all(&self.run_directory).map_err(|error| {
            WriteError::Prepare(format!(
                "could not create the run directory {}: {error}",
                self.run_directory.display()
            ))
        })?;
        let key = format!(
            "{}#{}:write:{}",
            self.request.repository,
            self.number(),
            self.run_uuid
        );
        let repository = self.request.repository.to_string();
        Ok(self
            .reviewer
            .store
            .start_run(&NewRun {
                key: &key,
                review_id: None,
                repository: &repository,
                pull_request: self.number(),
                head_sha: &self.request.pull_request.head_sha,
                kind: JobKind::Write,
            })
            .await?)
    }

    /// Cycle limit or fork: one comment (once), `bot-human-intervention`.
    async fn hand_to_human(
        &mut self,
        bot: &BotComments,
        outcome: WriteOutcome,
    ) -> Result<WriteReport, WriteFailure> {
        let repository = &self.request.repository;
        let number = self.number();
        let (key, text) = match &outcome {
            WriteOutcome::CycleLimitReached {
                cycles,
                reviews,
                fixes,
            } => (
                // One per head: a rerun on the same head (its label change
                // failed) finds it; a later limit after more fixes is another.
                format!(
                    "cycle-limit:{repository}#{number}:{}",
                    self.request.pull_request.head_sha
                ),
                format!(
                    "### ✋ review-bot stops here: {cycles} review cycles\n\n\
                     The bot has been round the review → fix loop on this pull request {cycles} \
                     times ({reviews} review{}, {fixes} fix{} pushed; a fix after a CI failure \
                     counts as a cycle of its own) and the limit is {} (`review.max_cycles`), so \
                     it will not fix it again on its own: the loop cannot go on forever. A person \
                     should look at the open threads and the CI results. To hand it back to the \
                     bot, replace `bot-human-intervention` with `bot-review-needed` (a new \
                     review) or `bot-changes-needed` (a fix of what is open); the count then \
                     starts again from that hand-back.\n\n{}",
                    if *reviews == 1 { "" } else { "s" },
                    if *fixes == 1 { "" } else { "es" },
                    self.request.settings.max_cycles,
                    cycles::CYCLE_LIMIT_MARKER,
                ),
            ),
            WriteOutcome::Fork { head_repository } => (
                format!(
                    "fork:{repository}#{number}:{}",
                    self.request.pull_request.head_sha
                ),
                format!(
                    "### ✋ review-bot cannot push to this pull request\n\n\
                     Its branch lives in {}, not in {}, and the bot's credential can push only \
                     to {}. Nothing was changed. Someone with access to the branch should address \
                     the review; then label the pull request `bot-review-needed` for the bot to \
                     review it again.",
                    head_repository.as_deref().map_or_else(
                        || "a repository that no longer exists".to_owned(),
                        review_core::payload::inline_code
                    ),
                    review_core::payload::inline_code(&repository.to_string()),
                    review_core::payload::inline_code(&repository.to_string()),
                ),
            ),
            _ => unreachable!("only the cycle limit and forks go to a human here"),
        };
        // Both hand the pull request to a human: `bot-human-intervention`.
        // At the cycle limit the label comes first: the marked comment then
        // proves the label was set, so a trigger label found after it is a
        // person's hand-back ([`cycles`]). A fork's comment comes first: a
        // rerun after a failed label change finds it by its thread id.
        let label_first = matches!(outcome, WriteOutcome::CycleLimitReached { .. });
        self.summary.outcome = Some(outcome);
        if label_first {
            self.set_human_label().await?;
        }
        let thread = ThreadId(Uuid::new_v5(&WRITE_NAMESPACE, key.as_bytes()));
        let step = self.progress.step("comment");
        let result = async {
            let url = if let Some(url) = bot.comment_with_thread(thread) {
                self.summary.comment_url = Some(url.clone());
                format!("already posted: {url}")
            } else {
                let body = review_core::payload::with_footer(
                    &text,
                    &Footer::after_review(self.latest_review, thread).render(),
                );
                let posted = self
                    .reviewer
                    .github
                    .create_issue_comment(repository, number, &body, Some(thread))
                    .await?;
                self.summary.comment_url = Some(posted.item.html_url.clone());
                posted.item.html_url
            };
            Ok::<_, GitHubError>(url)
        }
        .await;
        match result {
            Ok(url) => step.done(url),
            Err(error) => {
                step.failed(error.to_string());
                return Err(self.fail(error.into(), None).await);
            }
        }
        if !label_first {
            self.set_human_label().await?;
        }
        Ok(self.summary.clone())
    }

    /// Labels the pull request `bot-human-intervention`.
    async fn set_human_label(&mut self) -> Result<(), WriteFailure> {
        match set_outcome_label(
            &self.reviewer.github,
            &self.request.repository,
            &self.request.pull_request,
            Outcome::CycleLimitReached,
            self.progress,
        )
        .await
        {
            Ok(label) => {
                self.summary.label = label;
                Ok(())
            }
            Err(error) => Err(self.fail(error.into(), None).await),
        }
    }

    /// Steps 3–7.
    async fn fix(
        &mut self,
        review_comments: &[review_github::ReviewComment],
        issue_comments: &[review_github::IssueComment],
    ) -> Result<(), WriteError> {
        let reviewer = self.reviewer;
        let repository = &self.request.repository;
        let number = self.number();
        let pull = &self.request.pull_request;

        let step = self.progress.step("snapshot");
        let snapshot = match self.snapshot(review_comments, issue_comments).await {
            Ok(snapshot) => snapshot,
            Err(error) => {
                step.failed(error.to_string());
                return Err(error);
            }
        };
        let snapshot_path = self.run_directory.join("snapshot.json");
        write_private(&snapshot_path, &snapshot.to_json())
            .map_err(|error| WriteError::Prepare(error.to_string()))?;
        step.done(format!(
            "{} threads, {} conversation comments",
            snapshot.review_threads.len(),
            snapshot.issue_comments.len()
        ));
        let paths: Vec<String> = snapshot
            .parsed_diff()
            .map(|diff| diff.files().iter().map(|file| file.path.clone()).collect())
            .unwrap_or_default();
        let detection = review_core::platform::detect(paths.iter().map(String::as_str));

        let step = self.progress.step("checkout");
        let token = match reviewer.github.git_token(repository).await {
            Ok(token) => token,
            Err(error) => {
                step.failed(error.to_string());
                return Err(error.into());
            }
        };
        let credential = GitCredential::new(token);
        let clone_url = pull
            .base_clone_url
            .clone()
            .unwrap_or_else(|| format!("https://github.com/{repository}.git"));
        let worktree = match reviewer
            .checkouts
            .checkout(&CheckoutRequest {
                repository: repository.to_string(),
                clone_url: clone_url.clone(),
                number,
                base_ref: pull.base_branch.clone(),
                head_sha: pull.head_sha.clone(),
                credential: Some(credential.clone()),
            })
            .await
        {
            Ok(worktree) => worktree,
            Err(error) => {
                step.failed(error.to_string());
                return Err(error.into());
            }
        };
        step.done(short_sha(worktree.head_sha()));
        let result = self
            .fix_in(
                worktree.path(),
                worktree.mirror(),
                &snapshot,
                &snapshot_path,
                &detection.guides,
                &clone_url,
                &credential,
            )
            .await;
        if let Err(error) = worktree.remove().await {
            tracing::warn!(%error, "could not remove the worktree; the next prune removes it");
        }
        result
    }

    #[allow(clippy::too_many_arguments, clippy::too_many_lines)]
    async fn fix_in(
        &mut self,
        worktree: &Path,
        mirror: &Path,
        snapshot: &PullRequestSnapshot,
        snapshot_path: &Path,
        guides: &[&str],
        clone_url: &str,
        credential: &GitCredential,
    ) -> Result<(), WriteError> {
        let reviewer = self.reviewer;
        let pull = &self.request.pull_request;
        let settings = &self.request.settings;
        // Before anything runs in the worktree.
        let admin = admin_directory(mirror, worktree)?;
        // Where the commands come from: the operator's, the base commit's
        // `.review-bot.toml` (a problem with it is the review flow's to report),
        // else the documents.
        let repository_name = self.request.repository.to_string();
        let operator = reviewer
            .settings
            .build_commands
            .for_repository(&repository_name);
        let file = if operator.is_some() {
            RepositoryFile::Absent
        } else {
            base_repository_file(
                reviewer.checkouts.git(),
                mirror,
                &snapshot.pull_request.base_sha,
                &pull.base_branch,
            )
            .await?
        };
        if let Some(problem) = file.problem() {
            tracing::warn!(repository = %repository_name, %problem, "the base branch's .review-bot.toml cannot be used; using the next source");
        }
        let explicit = command_sources::explicit(operator, &file);
        let commands = match build_gate::discover(
            worktree,
            explicit
                .as_ref()
                .map(|(source, commands)| (source.clone(), commands)),
        )
        .await?
        {
            Discovery::Found(found) => Some(found),
            Discovery::NothingFound { .. } => None,
        };
        let index = self.run_directory.join("index");
        let git = WriteGit::new(
            &reviewer.checkouts,
            mirror,
            worktree,
            &index,
            (&settings.author_name, &settings.author_email),
        );
        if !git.valid_branch(&pull.head_branch).await? {
            return Err(WriteError::Prepare(format!(
                "the pull request's branch {:?} is not a branch name the bot will push to",
                pull.head_branch
            )));
        }
        let head = pull.head_sha.clone();
        let base = git
            .resolve(&format!("refs/heads/{}", pull.base_branch))
            .await?;
        let run_directory = self.run_directory.clone();
        let setup = AgentSetup {
            claude: &reviewer.claude,
            prompts: &reviewer.prompts,
            mcp_binary: &reviewer.settings.mcp_binary,
            mcp_tool_timeout: reviewer.settings.mcp_tool_timeout,
            worktree,
            run_directory: &run_directory,
            repository: &snapshot.repository,
            number: self.number(),
            title: &snapshot.pull_request.title,
        };

        // Merge conflicts.
        let step = self.progress.step("merge base");
        let mut parent = head.clone();
        match git.check_merge(&head, &base).await? {
            MergeCheck::UpToDate => step.done("up to date"),
            MergeCheck::Clean => step.done("merges cleanly; not merged"),
            MergeCheck::Conflicts { tree, paths } => {
                step.done(format!("{} conflicted file(s); merging", paths.len()));
                git.start_merge(&admin, &base).await?;
                let step = self.progress.step("merge-conflict pass");
                match run_merge_pass(&setup, &pull.base_branch, &paths).await {
                    Ok(run) => {
                        self.add_agent("merge-conflict", &run).await;
                        step.done(format!(
                            "{}, ${:.2}, {:.1} s",
                            crate::progress::turns(run.num_turns),
                            run.total_cost_usd,
                            run.duration.as_secs_f64()
                        ));
                    }
                    Err(error) => {
                        if let Some(run) = error.agent_run() {
                            self.add_agent("merge-conflict", run).await;
                        }
                        step.failed(error.to_string());
                        return Err(WriteError::Pass {
                            pass: "merge-conflict",
                            source: error,
                        });
                    }
                }
                let step = self.progress.step("commit the merge");
                let merged_tree = git.stage_paths(&tree, &paths).await?;
                let mut unresolved = Vec::new();
                for path in &paths {
                    if self
                        .still_conflicted(&git, worktree, path, &head, &base)
                        .await?
                    {
                        unresolved.push(path.clone());
                    }
                }
                if !unresolved.is_empty() {
                    step.failed(format!("{} file(s) still conflicted", unresolved.len()));
                    let list: Vec<String> = unresolved
                        .iter()
                        .map(|path| format!("- {}", review_core::payload::inline_code(path)))
                        .collect();
                    return self
                        .not_fixed(
                            "merge conflicts left unresolved",
                            &format!(
                                "### ⚠️ review-bot could not resolve the merge conflicts\n\n\
                                 Merging {} into this branch conflicts, and these files still \
                                 have conflict markers after the bot's attempt:\n\n{}\n\n\
                                 Nothing was pushed. Please merge {} by hand; the bot tries again \
                                 on its next step while the label stays `bot-changes-needed`.",
                                review_core::payload::inline_code(&pull.base_branch),
                                list.join("\n"),
                                review_core::payload::inline_code(&pull.base_branch),
                            ),
                        )
                        .await;
                }
                let message = self.run_directory.join("merge-message.txt");
                write_private(
                    &message,
                    &format!(
                        "Merge branch '{}' into {}\n\nConflicts resolved by review-bot in: {}\n",
                        pull.base_branch,
                        pull.head_branch,
                        paths.join(", ")
                    ),
                )
                .map_err(|error| WriteError::Prepare(error.to_string()))?;
                parent = git.commit(&merged_tree, &[&head, &base], &message).await?;
                self.summary.merged = true;
                step.done(short_sha(&parent).to_owned());
            }
        }

        // The code-fix pass.
        let step = self.progress.step("code-fix pass");
        let fix = match run_fix_pass(&setup, snapshot_path, guides).await {
            Ok(fix) => {
                self.add_agent("code-fix", &fix.run).await;
                step.done(format!(
                    "{} thread(s) addressed, {} repl{}, {}{}, ${:.2}, {:.1} s",
                    fix.report.threads_addressed.len(),
                    fix.replies.len(),
                    if fix.replies.len() == 1 { "y" } else { "ies" },
                    if fix.structured {
                        ""
                    } else {
                        "unstructured answer, "
                    },
                    crate::progress::turns(fix.run.num_turns),
                    fix.run.total_cost_usd,
                    fix.run.duration.as_secs_f64()
                ));
                fix
            }
            Err(error) => {
                if let Some(run) = error.agent_run() {
                    self.add_agent("code-fix", run).await;
                }
                step.failed(error.to_string());
                return Err(WriteError::Pass {
                    pass: "code-fix",
                    source: error,
                });
            }
        };
        self.summary.threads_addressed = fix.report.threads_addressed.len();

        // What changed, fixed before the build runs.
        let step = self.progress.step("changes");
        let (tree, changed) = git.snapshot(&parent).await?;
        self.summary.files_changed = changed.len();
        if changed.is_empty() && !self.summary.merged {
            step.failed("the agent changed nothing");
            let summary = footer::defuse(fix.report.summary.trim()).into_owned();
            return self
                .not_fixed(
                    "the agent changed nothing",
                    &format!(
                        "### ⚠️ review-bot made no change\n\n\
                         The bot's fix attempt on {} ended without changing any file, so \
                         nothing was pushed. It will try again on its next step while the label \
                         stays `bot-changes-needed`.{}",
                        review_core::payload::inline_code(short_sha(&pull.head_sha)),
                        if summary.is_empty() {
                            String::new()
                        } else {
                            format!(
                                "\n\n<details><summary>What the agent said</summary>\n\n{}\n\n</details>",
                                review_core::payload::code_block(&summary, None)
                            )
                        }
                    ),
                )
                .await;
        }
        step.done(format!(
            "{} file(s): {}",
            changed.len(),
            changed
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));

        // The build + test gate, with the commands found before the agent ran.
        let step = self.progress.step("build and test");
        match &commands {
            None => step.done("no commands documented; skipped"),
            Some(commands) => {
                let gate_settings = reviewer
                    .settings
                    .build_gate
                    .for_repository(&self.request.repository.to_string());
                let gate = build_gate::run_commands(
                    &gate_settings,
                    worktree,
                    &self.run_directory,
                    commands,
                )
                .await;
                match gate {
                    Ok(GateOutcome::Failed(failure)) => {
                        step.failed(format!(
                            "`{}` ({}) {}",
                            failure.command,
                            build_gate::command_origin(&failure),
                            failure.end
                        ));
                        // A command that fails on the base branch as well does
                        // not block the push: the fix is not what broke it.
                        let step = self.progress.step("base branch");
                        let rerun = crate::base_build::BaseRerun {
                            settings: &gate_settings,
                            checkouts: &reviewer.checkouts,
                            store: &reviewer.store,
                            checkout: CheckoutRequest {
                                repository: self.request.repository.to_string(),
                                clone_url: clone_url.to_owned(),
                                number: self.number(),
                                base_ref: pull.base_branch.clone(),
                                head_sha: base.clone(),
                                credential: Some(credential.clone()),
                            },
                            run_directory: &self.run_directory.join("base"),
                        };
                        let blame = crate::base_build::blame(&rerun, &failure).await;
                        if let Ok(crate::base_build::Blame::AlsoOnBase(_)) = &blame {
                            step.done(format!(
                                "`{}` fails on the base branch too; not blocking the push",
                                failure.command
                            ));
                        } else {
                            match &blame {
                                Err(error) => step.failed(error.to_string()),
                                Ok(_) => step.done("the base branch does not fail this way"),
                            }
                            return self
                                .not_fixed(
                                    "the build or tests failed after the fix",
                                    &format!(
                                        "### ⚠️ review-bot's fix did not pass the build\n\n\
                                         Nothing was pushed; the bot tries again on its next step \
                                         while the label stays `bot-changes-needed`.\n\n{}",
                                        build_gate::failure_comment(&failure)
                                    ),
                                )
                                .await;
                        }
                    }
                    Ok(GateOutcome::EnvironmentFailure(failure)) => {
                        let missing = failure.missing.clone().unwrap_or_default();
                        step.failed(format!("`{}` could not start: {missing}", failure.command));
                        tracing::error!(
                            repository = %self.request.repository,
                            command = %failure.command,
                            missing = %missing,
                            "the bot cannot build this repository: a build command could not start"
                        );
                        metrics::counter!(
                            "review_bot_environment_failures_total",
                            "repository" => self.request.repository.to_string()
                        )
                        .increment(1);
                        return self
                            .not_fixed(
                                "the bot cannot build this repository",
                                &format!(
                                    "### ⚠️ review-bot cannot build this repository\n\n\
                                     Nothing was pushed: {} ({}) could not start on the bot's \
                                     machine ({missing}). This is not the pull request's doing; \
                                     the bot's operator has been told.",
                                    review_core::payload::inline_code(&failure.command),
                                    build_gate::command_origin(&failure),
                                ),
                            )
                            .await;
                    }
                    Ok(GateOutcome::Passed { commands, source }) => {
                        step.done(format!(
                            "{} command(s) from {} passed",
                            commands.len(),
                            source.name()
                        ));
                    }
                    Ok(GateOutcome::NoCommands { .. }) => step.done("no commands; skipped"),
                    Err(error) => {
                        step.failed(error.to_string());
                        return Err(error.into());
                    }
                }
            }
        }

        // Commit.
        let step = self.progress.step("commit");
        let commit = if changed.is_empty() {
            parent.clone()
        } else {
            let message = self.run_directory.join("commit-message.txt");
            write_private(
                &message,
                &commit_message(&fix.report.summary, self.run_uuid),
            )
            .map_err(|error| WriteError::Prepare(error.to_string()))?;
            git.commit(&tree, &[&parent], &message).await?
        };
        step.done(short_sha(&commit).to_owned());

        // The plan of what follows the push, saved before it.
        let replies = self.planned_replies(snapshot, &fix.replies, &commit);
        let plan = PushedPlan {
            version: pushed::PLAN_VERSION,
            repository: self.request.repository.to_string(),
            pull_request: self.number(),
            pushed_sha: commit.clone(),
            replies,
        };

        // Push, unless someone pushed meanwhile.
        let step = self.progress.step("push");
        let now = reviewer
            .github
            .get_pull_request(&self.request.repository, self.number())
            .await?;
        if now.head_sha != pull.head_sha {
            step.failed(format!("the head moved to {}", short_sha(&now.head_sha)));
            self.summary.outcome = Some(WriteOutcome::HeadMoved {
                reason: format!(
                    "the branch moved to {} while the bot worked",
                    short_sha(&now.head_sha)
                ),
            });
            return Ok(());
        }
        if let Some(reason) = crate::decided::person_decided(
            pull,
            &now,
            review_core::labels::Label::BotChangesNeeded,
            "while the bot worked",
        ) {
            step.failed(reason.clone());
            self.progress.note(format!("nothing was pushed: {reason}"));
            self.summary.outcome = Some(WriteOutcome::Withdrawn { reason });
            return Ok(());
        }
        plan.save(&reviewer.store).await?;
        match git
            .push(
                clone_url,
                &pull.head_branch,
                &pull.head_sha,
                &commit,
                Some(credential),
            )
            .await?
        {
            PushOutcome::Pushed => {
                step.done(format!("{} → {}", short_sha(&commit), pull.head_branch));
            }
            PushOutcome::HeadMoved { reason } => {
                plan.remove(&reviewer.store).await;
                step.failed(format!("refused: {reason}"));
                self.summary.outcome = Some(WriteOutcome::HeadMoved { reason });
                return Ok(());
            }
        }
        self.summary.pushed_sha = Some(commit);
        self.finish_pushed(&plan, false).await
    }

    /// Whether `path` still has conflict markers that neither side had.
    async fn still_conflicted(
        &self,
        git: &WriteGit<'_>,
        worktree: &Path,
        path: &str,
        head: &str,
        base: &str,
    ) -> Result<bool, WriteError> {
        let file = worktree.join(path);
        let Ok(metadata) = std::fs::symlink_metadata(&file) else {
            return Ok(false);
        };
        if !metadata.is_file() {
            return Ok(false);
        }
        let bytes = std::fs::read(&file).map_err(|error| {
            WriteError::Prepare(format!("could not read {}: {error}", file.display()))
        })?;
        let text = String::from_utf8_lossy(&bytes);
        if !gitops::has_conflict_markers(&text) {
            return Ok(false);
        }
        for side in [head, base] {
            if git
                .blob(side, path)
                .await?
                .is_some_and(|text| gitops::has_conflict_markers(&text))
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The replies to post for the agent's reply requests.
    fn planned_replies(
        &self,
        snapshot: &PullRequestSnapshot,
        requests: &[review_core::agent_requests::ReplyRequest],
        commit: &str,
    ) -> Vec<PlannedReply> {
        let namespace = Uuid::new_v5(
            &WRITE_NAMESPACE,
            format!(
                "push:{}#{}@{commit}",
                self.request.repository,
                self.number()
            )
            .as_bytes(),
        );
        let mut seen = HashSet::new();
        let mut replies = Vec::new();
        for request in requests {
            if !seen.insert(request.comment_id) {
                continue;
            }
            let thread = Uuid::new_v5(
                &namespace,
                format!("reply:{}", request.comment_id).as_bytes(),
            );
            let footer = Footer::after_review(self.latest_review, ThreadId(thread)).render();
            let message = footer::defuse(request.message.trim()).into_owned();
            let (target, content) = match snapshot.find_comment(request.comment_id) {
                Some(CommentLookup::ThreadRoot(_)) => (ReplyTarget::ReviewComment, message),
                Some(CommentLookup::Issue(comment)) => (
                    ReplyTarget::IssueComment,
                    review_mcp::live::quote_reply(
                        &comment.user,
                        &footer::defuse(&comment.body),
                        &message,
                    ),
                ),
                _ => continue,
            };
            replies.push(PlannedReply {
                comment_id: request.comment_id,
                target,
                body: review_core::payload::with_footer(&content, &footer),
                thread_id: thread,
            });
        }
        replies
    }

    /// After the push: the replies (each once) and `bot-ci-pending`.
    async fn finish_pushed(&mut self, plan: &PushedPlan, resumed: bool) -> Result<(), WriteError> {
        let github = &self.reviewer.github;
        let store = &self.reviewer.store;
        let repository = &self.request.repository;
        let repository_name = repository.to_string();
        let number = self.number();
        if !plan.replies.is_empty() {
            let step = self.progress.step("post the replies");
            let already: HashSet<Uuid> = if resumed {
                let (review_comments, issue_comments) = tokio::try_join!(
                    github.list_review_comments(repository, number),
                    github.list_issue_comments(repository, number),
                )?;
                review_comments
                    .iter()
                    .map(|comment| comment.body.as_str())
                    .chain(issue_comments.iter().map(|comment| comment.body.as_str()))
                    .filter_map(|body| footer::own_footer(body).thread)
                    .map(|thread| thread.0)
                    .collect()
            } else {
                HashSet::new()
            };
            let mut posted = 0;
            for reply in &plan.replies {
                if !already.contains(&reply.thread_id) {
                    let to_post = ReplyToPost {
                        comment_id: reply.comment_id,
                        target: reply.target,
                        body: &reply.body,
                        thread_id: reply.thread_id,
                    };
                    match crate::review::post::post_planned_reply(
                        github, repository, number, to_post,
                    )
                    .await
                    {
                        Ok(ReplyOutcome::Posted) => posted += 1,
                        Ok(ReplyOutcome::AlreadyThere) => {}
                        Ok(ReplyOutcome::CommentGone) => continue,
                        Err(error) => {
                            step.failed(error.to_string());
                            return Err(error.into());
                        }
                    }
                }
                store
                    .mark_comment_replied(CommentId(reply.comment_id), number, &repository_name)
                    .await?;
            }
            self.summary.replies_posted = posted;
            step.done(format!("{posted} posted"));
        }
        let mut pull = self.request.pull_request.clone();
        if resumed {
            pull = github.get_pull_request(repository, number).await?;
        }
        self.summary.label =
            set_outcome_label(github, repository, &pull, Outcome::Pushed, self.progress).await?;
        self.summary.outcome = Some(WriteOutcome::Pushed);
        plan.remove(store).await;
        Ok(())
    }

    /// Writes `text` (a heading paragraph, then the rest) as the pull
    /// request's status comment (`status`), with the attempt line after the
    /// heading: an edit of the bot's status comment when there is one, else
    /// a new one. Returns its page.
    async fn publish_status(&mut self, text: &str) -> Result<String, GitHubError> {
        let previous = self.status_comment.as_ref().map(|(_, body)| body.as_str());
        let attempt = crate::status::next_attempt(previous, &self.request.pull_request.head_sha);
        let mut text =
            crate::status::with_attempt_line(text, attempt, &self.request.pull_request.head_sha);
        // What this attempt's agent passes cost (issue 28 item 5).
        if self.summary.agent_turns > 0 || self.summary.agent_cost_usd > 0.0 {
            text = crate::cost::with_cost_line(
                &text,
                &format!(
                    "Agent: {}, {} turn{}, {} this attempt.",
                    crate::cost::dollars(self.summary.agent_cost_usd),
                    self.summary.agent_turns,
                    if self.summary.agent_turns == 1 {
                        ""
                    } else {
                        "s"
                    },
                    crate::cost::short_duration(self.summary.agent_time),
                ),
            );
        }
        let comment = crate::status::publish(
            &self.reviewer.github,
            &self.request.repository,
            self.number(),
            self.status_comment.as_ref().map(|(id, _)| *id),
            self.latest_review,
            &text,
        )
        .await?;
        let url = comment.html_url.clone();
        self.status_comment = Some((comment.id, comment.body));
        Ok(url)
    }

    /// No change, failed build, conflicts left: the status comment says so,
    /// label kept.
    async fn not_fixed(&mut self, why: &str, text: &str) -> Result<(), WriteError> {
        let step = self.progress.step("status comment");
        let url = self.publish_status(text).await?;
        step.done(url.clone());
        self.summary.comment_url = Some(url);
        self.summary.outcome = Some(WriteOutcome::NotFixed {
            why: why.to_owned(),
        });
        Ok(())
    }

    /// Adds up an agent pass and records it in the store under the run, so
    /// its cost counts toward the pull request's and the day's
    /// ([`crate::cost`]).
    async fn add_agent(&mut self, pass: &str, run: &review_agent::claude::AgentRun) {
        self.summary.agent_cost_usd += run.total_cost_usd;
        self.summary.agent_turns += run.num_turns;
        self.summary.agent_time += run.duration;
        let Some(run_id) = self.run_id else {
            return;
        };
        let recorded = self
            .reviewer
            .store
            .record_agent_pass(
                run_id,
                &review_store::AgentPass {
                    name: pass.to_owned(),
                    transcript_path: Some(
                        self.run_directory
                            .join(if pass == "code-fix" {
                                "fix.json"
                            } else {
                                "merge.json"
                            })
                            .display()
                            .to_string(),
                    ),
                    session_id: run.session_id.clone(),
                    turns: Some(run.num_turns),
                    cost_usd: Some(run.total_cost_usd),
                    duration: Some(run.duration),
                },
            )
            .await;
        if let Err(error) = recorded {
            tracing::warn!(%error, pass, "could not record the agent pass in the store");
        }
    }

    /// What the agent may read: the diff and the threads with replied-flags.
    async fn snapshot(
        &self,
        review_comments: &[review_github::ReviewComment],
        issue_comments: &[review_github::IssueComment],
    ) -> Result<PullRequestSnapshot, WriteError> {
        let repository = &self.request.repository;
        let number = self.number();
        let diff = self
            .reviewer
            .github
            .get_pull_request_diff(repository, number)
            .await?;
        let replied: HashSet<u64> = self
            .reviewer
            .store
            .replied_comment_ids(number, &repository.to_string())
            .await?
            .into_iter()
            .map(|id| id.0)
            .collect();
        Ok(snapshot_from_github(GitHubPullRequest {
            repository,
            pull_request: &self.request.pull_request,
            diff: &diff,
            review_comments,
            issue_comments,
            replied: &replied,
            bot_login: self.reviewer.settings.bot_login.as_deref(),
        }))
    }

    /// Reports `error` in one comment (label kept), records the run failed.
    async fn fail(
        &mut self,
        error: WriteError,
        run_id: Option<review_store::RunId>,
    ) -> WriteFailure {
        tracing::error!(error = %error, "the write step failed");
        let text = format!(
            "### ⚠️ review-bot could not fix this pull request\n\n\
             **What failed:** {}\n\n\
             {}The label stays `bot-changes-needed`, so the bot tries again on its next step; \
             `review-bot step {}#{}` runs it by hand. The bot's log has the details under run \
             `{}`.",
            footer::defuse(&error.public_summary()),
            if self.summary.pushed_sha.is_some() {
                "The fix was pushed; replies or the label may be missing. "
            } else {
                "Nothing was pushed. "
            },
            self.request.repository,
            self.number(),
            self.run_uuid,
        );
        let reported = match self.publish_status(&text).await {
            Ok(url) => Some(url),
            Err(post_error) => {
                tracing::error!(error = %post_error, "could not report the failure on the pull request");
                None
            }
        };
        if let Some(run_id) = run_id
            && let Err(store_error) = self.reviewer.store.finish_run(run_id, "failed").await
        {
            tracing::warn!(error = %store_error, "could not record the write run as failed");
        }
        WriteFailure {
            error,
            reported,
            summary: self.summary.clone(),
        }
    }
}

/// The fix commit's message: a subject, then the agent's summary (plain
/// text, bounded).
fn commit_message(summary: &str, run: Uuid) -> String {
    let cleaned: String = summary
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .take(4_000)
        .collect();
    let cleaned = cleaned.trim();
    let trailer = format!("{}: {run}", cycles::FIX_TRAILER);
    if cleaned.is_empty() {
        format!("Address review comments\n\n{trailer}\n")
    } else {
        format!("Address review comments\n\n{cleaned}\n\n{trailer}\n")
    }
}
