//! The review flow (seed 004's review half; DESIGN.md "The flows → Review"):
//! one pull request, once, exactly as the daemon will run it per poll.
//!
//! 1. Read the pull request; a head that already has a completed review in
//!    the store is not reviewed again (unless forced) — except when the
//!    request comes from the trigger label ([`ReviewRequest::from_label`]):
//!    the completed review changed the label before it was recorded, so the
//!    label back on the same head is a person's hand-back, and the head gets
//!    a new review that says it was asked for again and repeats no finding
//!    already posted. An unfinished run of the same head (the bot stopped
//!    between posting and its label) is resumed under its review id and
//!    finished, never reviewed again.
//! 2. Snapshot what the agent may read (metadata, diff, threads with
//!    replied-flags) into the run directory.
//! 3. Check out the head (`checkout`), run the build + test gate
//!    (`build_gate`). A failure is rerun on the base commit (`base_build`):
//!    failing there too, it is not the pull request's doing and the review
//!    goes ahead (the body and the passes are told); otherwise it plans one
//!    failure comment and no agent run. A command that cannot start is
//!    [`ReviewError::Environment`]: the operator's, not posted.
//! 4. Two passes (architecture, detailed), each a Claude Code run with our MCP
//!    server (`agent_pass`); merge, anchor and drop repeated findings
//!    (`compose`). With `review.verify`, the verification pass (`verify`)
//!    re-examines the findings and the review is composed again without
//!    those it withholds (recorded in the plan, counted in
//!    `review_bot_findings_withheld_total`, said in the body); a verifier
//!    that fails is logged as an error and the findings go out unverified,
//!    the body saying so.
//! 5. Save the plan (`plan`) — then, and only then, write to GitHub (`post`):
//!    one review, the replies, the fingerprints, the labels.
//!
//! Every error after the pull request is known is reported on it in one
//! comment (what failed, how to retry), the run is recorded as failed, and
//! nothing partial is posted: the review goes out whole or not at all.

pub mod agent_pass;
pub mod compose;
pub mod incremental;
pub mod plan;
pub mod post;
pub mod verify;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use review_agent::claude::ClaudeCode;
use review_agent::prompts::Prompts;
use review_core::build_commands::Discovery;
use review_core::diff::PullRequestDiff as DiffModel;
use review_core::footer::{self, Footer, ReviewId, ThreadId};
use review_core::passes::Pass;
use review_core::snapshot::PullRequestSnapshot;
use review_github::{GitHubClient, GitHubError, PullRequest, PullRequestState, RepositoryName};
use review_mcp::github_snapshot::{GitHubPullRequest, snapshot_from_github};
use review_store::{JobKind, NewRun, Store, StoreError};
use uuid::Uuid;

use crate::base_build::{self, Blame};
use crate::build_gate::{self, BuildGateError, BuildGateSettings, GateOutcome};
use crate::checkout::{CheckoutError, CheckoutRequest, Checkouts};
use crate::command_sources::{self, OperatorCommands, RepositoryFile};
use crate::git::GitCredential;
use crate::progress::Progress;

pub use compose::{ReviewOutcome, is_resolved};
pub use plan::{PlannedAction, ReviewPlan};

use agent_pass::{PassError, PassSetup, pass_name, run_pass, write_private};

/// What the review flow needs besides its clients.
#[derive(Debug, Clone)]
pub struct ReviewSettings {
    /// The work directory: mirrors, worktrees, and run directories under `runs/`.
    pub work_dir: PathBuf,
    /// The `review-bot` executable that serves `mcp` to the agent.
    pub mcp_binary: PathBuf,
    /// How long one MCP tool call may take.
    pub mcp_tool_timeout: Duration,
    /// The build + test gate's settings.
    pub build_gate: BuildGateSettings,
    /// The operator's build and test commands per repository (before the
    /// base branch's `.review-bot.toml` and CLAUDE.md/README.md).
    pub build_commands: OperatorCommands,
    /// The login the bot posts as; only its comments' `thread::` ids are trusted.
    pub bot_login: Option<String>,
    /// How old run directories are pruned (at the start of every review).
    pub runs_pruning: crate::runs::Pruning,
    /// The operator's noise control (thresholds and inline cap), per repository.
    pub noise: command_sources::OperatorNoise,
    /// The operator's agent cost caps (per pull request, per day), per repository.
    pub cost_caps: crate::cost::CostCaps,
    /// `review.verify`: re-examine the passes' findings before posting and
    /// withhold those refuted or under `min_confidence` (`verify`).
    pub verify: bool,
}

/// Everything the review flow talks to.
#[derive(Debug)]
pub struct Reviewer {
    /// GitHub.
    pub github: GitHubClient,
    /// The store (runs, replies, fingerprints).
    pub store: Store,
    /// Mirrors and worktrees.
    pub checkouts: Checkouts,
    /// The agent.
    pub claude: ClaudeCode,
    /// Prompts and guides.
    pub prompts: Prompts,
    /// The rest.
    pub settings: ReviewSettings,
}

/// One review to make.
#[derive(Debug, Clone)]
pub struct ReviewRequest {
    /// The repository.
    pub repository: RepositoryName,
    /// The pull request.
    pub number: u64,
    /// Stop before posting and return the plan.
    pub dry_run: bool,
    /// Review even a head that already has a completed review.
    pub force: bool,
    /// The request comes from `bot-review-needed` on the pull request (`step`,
    /// the daemon): a head with a completed review was handed back by a
    /// person, and gets a new review (see the module documentation).
    pub from_label: bool,
}

/// How a review went.
#[derive(Debug, Clone, PartialEq)]
pub enum ReviewReport {
    /// Nothing to review (a closed pull request).
    NothingToDo {
        /// Why.
        reason: String,
    },
    /// The head already has a completed review (in the store).
    AlreadyReviewed {
        /// The head commit.
        head_sha: String,
        /// How that review ended.
        outcome: String,
    },
    /// `--dry-run`: the plan, not posted.
    DryRun {
        /// What would be posted.
        plan: Box<ReviewPlan>,
        /// The figures.
        summary: ReviewSummary,
    },
    /// The review was posted.
    Completed(ReviewSummary),
}

/// The figures of a review.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReviewSummary {
    /// How it ended (`None` only before it was decided).
    pub outcome: Option<ReviewOutcome>,
    /// The review's (or the failure comment's) page.
    pub url: Option<String>,
    /// Inline comments in the review.
    pub inline_comments: usize,
    /// Replies posted by this run.
    pub replies_posted: usize,
    /// The bot label afterwards.
    pub label: Option<String>,
    /// What the agent passes cost, in US dollars.
    pub agent_cost_usd: f64,
    /// Turns the agent passes took.
    pub agent_turns: u32,
    /// Wall time of the agent passes.
    pub agent_time: Duration,
    /// The head commit reviewed.
    pub head_sha: String,
    /// The review's id.
    pub review_id: Option<String>,
    /// True when an unfinished earlier run of this head was finished.
    pub resumed: bool,
    /// Findings the verification pass withheld as unlikely.
    pub findings_withheld: usize,
}

/// Why a review failed.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// GitHub failed (after retries).
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The checkout failed.
    #[error(transparent)]
    Checkout(#[from] CheckoutError),
    /// The build gate could not run (not a build failure: those are reviews).
    #[error(transparent)]
    BuildGate(#[from] BuildGateError),
    /// A build command could not start on the bot's machine (a program or
    /// toolchain is missing): the operator's to fix, not the author's. Not
    /// reported on the pull request; `review`/`step` exit 3.
    #[error(
        "the bot cannot build {repository}: `{command}` (from {origin}) could not start: \
         {missing}; install it for the service's user (or show it to the sandbox), check with \
         `review-bot doctor`, then retry"
    )]
    Environment {
        /// The repository.
        repository: String,
        /// The command.
        command: String,
        /// Where the command came from.
        origin: String,
        /// What is missing.
        missing: String,
    },
    /// A pass failed.
    #[error("the {} pass failed: {source}", pass_name(*pass))]
    Pass {
        /// Which pass.
        pass: Pass,
        /// Why.
        source: PassError,
    },
    /// The snapshot or plan could not be written, or the diff did not parse.
    #[error("{0}")]
    Prepare(String),
}

impl ReviewError {
    /// What failed, in one sentence fit for the pull request (no paths of the
    /// bot's machine, no credentials).
    pub fn public_summary(&self) -> String {
        match self {
            Self::GitHub(error) => format!("a GitHub request failed: {error}"),
            Self::Store(_) => "the bot's database failed (details in the bot's log)".to_owned(),
            Self::Checkout(_) => {
                "the head commit could not be checked out (details in the bot's log)".to_owned()
            }
            Self::BuildGate(_) => {
                "the build and test commands could not be started (details in the bot's log)"
                    .to_owned()
            }
            Self::Environment {
                command, missing, ..
            } => format!(
                "{}: {} could not start ({missing}); the operator has been told",
                crate::daemon::attempts::CANNOT_BUILD,
                review_core::payload::inline_code(command)
            ),
            Self::Pass { pass, source } => {
                format!(
                    "the {} pass failed: {}",
                    pass_name(*pass),
                    source.public_summary()
                )
            }
            Self::Prepare(_) => {
                "the review could not be prepared (details in the bot's log)".to_owned()
            }
        }
    }
}

/// A failed review: the error, and whether (and where) it was reported on
/// the pull request.
#[derive(Debug)]
pub struct ReviewFailure {
    /// What went wrong.
    pub error: ReviewError,
    /// The error comment's page, when one was posted.
    pub reported: Option<String>,
    /// The figures so far (the agent's cost is spent even when a pass fails).
    pub summary: ReviewSummary,
}

impl std::fmt::Display for ReviewFailure {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(formatter)
    }
}

/// The run directory of a review.
pub fn run_directory(work_dir: &Path, repository: &RepositoryName, review_id: ReviewId) -> PathBuf {
    work_dir
        .join("runs")
        .join(&repository.owner)
        .join(&repository.name)
        .join(review_id.to_string())
}

/// The store's key of a review run.
fn run_key(repository: &RepositoryName, number: u64, review_id: ReviewId) -> String {
    format!("{repository}#{number}:review:{review_id}")
}

/// A review in progress: what every step shares.
struct Job<'a> {
    reviewer: &'a Reviewer,
    request: &'a ReviewRequest,
    progress: &'a Progress,
    pull_request: PullRequest,
    review_id: ReviewId,
    run_directory: PathBuf,
    summary: ReviewSummary,
    /// Set once the first write of the plan is under way: a failure from then
    /// on is "finishing the review failed", not "nothing was posted".
    posting: bool,
    /// What the agent passes are told about the build: a command that fails
    /// on the base branch too.
    build_note: Option<String>,
    /// A person put `bot-review-needed` back on a head the bot had reviewed:
    /// the body says this review was asked for again.
    asked_again: bool,
    /// The pull request's reviews on GitHub, read once with the snapshot
    /// (`None` without a bot login or when GitHub refused): the earlier
    /// reviewed head and the threads the bot resolved before come from them.
    reviews: Option<Vec<review_github::Review>>,
    /// What this review covers: the whole pull request, or the changes since
    /// the bot's last reviewed head ([`incremental`]).
    scope: incremental::Scope,
}

impl Reviewer {
    /// Reviews one pull request (see the module documentation).
    pub async fn review(
        &self,
        request: &ReviewRequest,
        progress: &Progress,
    ) -> Result<ReviewReport, ReviewFailure> {
        let unreported = |error: ReviewError| ReviewFailure {
            error,
            reported: None,
            summary: ReviewSummary::default(),
        };
        let step = progress.step("pull request");
        let pull_request = match self
            .github
            .get_pull_request(&request.repository, request.number)
            .await
        {
            Ok(pull_request) => pull_request,
            Err(error) => {
                step.failed(error.to_string());
                return Err(unreported(error.into()));
            }
        };
        if pull_request.state != PullRequestState::Open {
            step.done("closed");
            return Ok(ReviewReport::NothingToDo {
                reason: format!(
                    "{}#{} is {}; only open pull requests are reviewed",
                    request.repository,
                    request.number,
                    if pull_request.merged {
                        "merged"
                    } else {
                        "closed"
                    }
                ),
            });
        }
        step.done(format!(
            "\"{}\" at {}",
            footer::defuse(&review_core::payload::single_line(&pull_request.title)),
            short_sha(&pull_request.head_sha)
        ));

        let mut review_id = ReviewId(Uuid::new_v4());
        let mut resumed = false;
        let mut asked_again = false;
        if !request.dry_run {
            let runs = self
                .store
                .runs_for_pull_request(&request.repository.to_string(), request.number)
                .await
                .map_err(|error| unreported(error.into()))?;
            match earlier_run(&runs, &pull_request.head_sha).filter(|_| !request.force) {
                Some(Earlier::Completed(outcome)) if !request.from_label => {
                    return Ok(ReviewReport::AlreadyReviewed {
                        head_sha: pull_request.head_sha.clone(),
                        outcome,
                    });
                }
                Some(Earlier::Completed(outcome)) => {
                    progress.note(format!(
                        "{} already has a completed review ({outcome}) and `bot-review-needed` \
                         was put back: reviewing it again",
                        short_sha(&pull_request.head_sha),
                    ));
                    asked_again = true;
                }
                Some(Earlier::Unfinished(id)) => {
                    review_id = id;
                    resumed = true;
                    progress.note(format!(
                        "finishing an unfinished review of this head (review {review_id})"
                    ));
                }
                None => {}
            }
        }

        // A resumed review finishes what an earlier run decided; anything
        // else is about to start the agent: the cost caps first.
        if !resumed {
            match self.cost_held(request, &pull_request, progress).await {
                Ok(None) => {}
                Ok(Some(reason)) => return Ok(ReviewReport::NothingToDo { reason }),
                Err(error) => return Err(unreported(error)),
            }
        }

        let mut job = Job {
            reviewer: self,
            request,
            progress,
            run_directory: run_directory(&self.settings.work_dir, &request.repository, review_id),
            summary: ReviewSummary {
                head_sha: pull_request.head_sha.clone(),
                review_id: Some(review_id.to_string()),
                resumed,
                ..ReviewSummary::default()
            },
            pull_request,
            review_id,
            posting: false,
            build_note: None,
            asked_again,
            reviews: None,
            scope: incremental::Scope::Full,
        };
        job.run().await
    }
}

impl Reviewer {
    /// The cost caps ([`crate::cost`]; the store answers, no GitHub request
    /// under the caps): `Some(why)` when the review is not started (handed
    /// to a human at the pull request's cap, or waiting for the next day).
    async fn cost_held(
        &self,
        request: &ReviewRequest,
        pull_request: &PullRequest,
        progress: &Progress,
    ) -> Result<Option<String>, ReviewError> {
        let held = crate::cost::check_before_agent(
            &crate::cost::CapContext {
                store: &self.store,
                target: crate::daemon::attempts::HandOverContext {
                    github: &self.github,
                    repository: &request.repository,
                    pull_request,
                    job: review_core::labels::Job::Review,
                    bot_login: self.settings.bot_login.as_deref(),
                    progress,
                },
            },
            &self.settings.cost_caps,
            request.dry_run,
        )
        .await;
        match held {
            Ok(held) => Ok(held.map(|held| held.describe())),
            Err(crate::cost::CapError::Store(error)) => Err(error.into()),
            Err(crate::cost::CapError::GitHub(error)) => Err(error.into()),
        }
    }
}

impl Job<'_> {
    /// The flow from the run's start, in a span naming the job.
    async fn run(&mut self) -> Result<ReviewReport, ReviewFailure> {
        use tracing::Instrument as _;
        let span = tracing::info_span!(
            "review",
            repository = %self.request.repository,
            pull_request = self.request.number,
            head_sha = %self.pull_request.head_sha,
            review_id = %self.review_id,
        );
        self.run_steps().instrument(span).await
    }

    /// Prune old run directories, then make and lock this job's.
    async fn open_run_directory(
        &mut self,
        run_id: Option<review_store::RunId>,
    ) -> Result<crate::runs::RunLock, ReviewFailure> {
        crate::runs::prune_in_background(
            &self.reviewer.settings.work_dir,
            self.reviewer.settings.runs_pruning,
        )
        .await;
        match crate::runs::RunLock::acquire(&self.run_directory) {
            Ok(lock) => Ok(lock),
            Err(error) => {
                let error = ReviewError::Prepare(format!(
                    "could not create the run directory {}: {error}",
                    self.run_directory.display()
                ));
                Err(self.fail(error, run_id).await)
            }
        }
    }

    async fn run_steps(&mut self) -> Result<ReviewReport, ReviewFailure> {
        let run_id = if self.request.dry_run {
            None
        } else {
            let key = run_key(
                &self.request.repository,
                self.request.number,
                self.review_id,
            );
            let review_id = self.review_id.to_string();
            let repository = self.request.repository.to_string();
            match self
                .reviewer
                .store
                .start_run(&NewRun {
                    key: &key,
                    review_id: Some(&review_id),
                    repository: &repository,
                    pull_request: self.request.number,
                    head_sha: &self.pull_request.head_sha,
                    kind: JobKind::Review,
                })
                .await
            {
                Ok(id) => Some(id),
                Err(error) => {
                    return Err(ReviewFailure {
                        error: error.into(),
                        reported: None,
                        summary: self.summary.clone(),
                    });
                }
            }
        };
        // Held until the job ends: pruning leaves the run directory alone.
        let _run_lock = self.open_run_directory(run_id).await?;

        // Boxed: the plan's future (passes, store) is the largest part of the review's.
        let plan = match Box::pin(self.obtain_plan(run_id)).await? {
            Ok(plan) => plan,
            Err(report) => return Ok(report),
        };
        self.summary.outcome = Some(plan.outcome);
        if let PlannedAction::Review {
            payload, withheld, ..
        } = &plan.action
        {
            self.summary.inline_comments = payload.comments.len();
            self.summary.findings_withheld = withheld.len();
        }
        if self.request.dry_run {
            return Ok(ReviewReport::DryRun {
                plan: Box::new(plan),
                summary: self.summary.clone(),
            });
        }
        if let Err(error) = Box::pin(plan.save_in_store(&self.reviewer.store)).await {
            return Err(self.fail(error.into(), run_id).await);
        }
        if let Err(error) = plan.save(&self.run_directory) {
            let error = ReviewError::Prepare(format!(
                "could not save the review plan in {}: {error}",
                self.run_directory.display()
            ));
            return Err(self.fail(error, run_id).await);
        }
        if !self.summary.resumed {
            match self.decided_meanwhile(&plan).await {
                Ok(None) => {}
                Ok(Some(reason)) => {
                    Box::pin(plan.remove_from_store(&self.reviewer.store)).await;
                    if let Some(run_id) = run_id
                        && let Err(error) =
                            self.reviewer.store.finish_run(run_id, "withdrawn").await
                    {
                        tracing::warn!(%error, "could not record the run as withdrawn");
                    }
                    self.progress.note(format!("nothing was posted: {reason}"));
                    return Ok(ReviewReport::NothingToDo { reason });
                }
                Err(error) => return Err(self.fail(error, run_id).await),
            }
        }
        self.posting = true;
        match post::execute(self, &plan).await {
            Ok(()) => Box::pin(plan.remove_from_store(&self.reviewer.store)).await,
            Err(error) => return Err(self.fail(error, run_id).await),
        }
        if let Some(run_id) = run_id
            && let Err(error) = self
                .reviewer
                .store
                .finish_run(run_id, plan.outcome.as_str())
                .await
        {
            // Everything is on GitHub; only the record is missing. A rerun
            // resumes the run and finds everything posted.
            tracing::warn!(%error, "the review was posted but its run could not be marked finished");
        }
        Ok(ReviewReport::Completed(self.summary.clone()))
    }

    /// Right before the review's first write (issue 25 items 3 and 4): the pull
    /// request read again — one request, conditional — and what a person did
    /// while the review ran wins. Closed or merged, a new head (the review is
    /// superseded: the next step reviews the new head), the trigger label
    /// removed, or a label handing it to a human added: `Some(why)`, and
    /// nothing is written.
    async fn decided_meanwhile(&self, plan: &ReviewPlan) -> Result<Option<String>, ReviewError> {
        let now = self
            .reviewer
            .github
            .get_pull_request(&self.request.repository, self.request.number)
            .await?;
        if now.head_sha != plan.head_sha {
            return Ok(Some(format!(
                "the pull request's head moved to {} while {} was being reviewed; this review is \
                 superseded and the next step reviews the new head",
                short_sha(&now.head_sha),
                short_sha(&plan.head_sha)
            )));
        }
        Ok(crate::decided::person_decided(
            &self.pull_request,
            &now,
            review_core::labels::Label::BotReviewNeeded,
            "while it was being reviewed",
        ))
    }

    /// The plan: the one an earlier run of this review saved, or a new one.
    /// `Err(report)` when there is nothing to review after all (the head
    /// moved while it was being reviewed).
    async fn obtain_plan(
        &mut self,
        run_id: Option<review_store::RunId>,
    ) -> Result<Result<ReviewPlan, ReviewReport>, ReviewFailure> {
        let saved = if self.request.dry_run {
            None
        } else {
            // Boxed: the store's future would grow every caller's.
            let stored = Box::pin(ReviewPlan::load_from_store(
                &self.reviewer.store,
                &self.request.repository.to_string(),
                self.request.number,
                self.review_id.0,
            ))
            .await;
            match stored {
                Ok(Some(plan)) => Some(plan),
                Ok(None) => ReviewPlan::load(&self.run_directory, self.review_id.0),
                Err(error) => return Err(self.fail(error.into(), run_id).await),
            }
        };
        Ok(match saved {
            Some(plan) => {
                self.progress
                    .note("the review was already decided; posting what is left of it");
                Ok(plan)
            }
            // Boxed: the snapshot, checkout, gate and passes make a large future.
            None => match Box::pin(self.make_plan()).await {
                Ok(plan) => Ok(plan),
                Err(ReviewError::Checkout(CheckoutError::HeadMissing { sha, .. })) => {
                    // Pushed to while we looked: not a failure to report, the
                    // new head gets its own review.
                    if let Some(run_id) = run_id
                        && let Err(error) =
                            self.reviewer.store.finish_run(run_id, "superseded").await
                    {
                        tracing::warn!(%error, "could not record the run as superseded");
                    }
                    return Ok(Err(ReviewReport::NothingToDo {
                        reason: format!(
                            "the pull request's head moved past {} while it was being reviewed; \
                             review it again for the new head",
                            short_sha(&sha)
                        ),
                    }));
                }
                Err(error) => return Err(self.fail(error, run_id).await),
            },
        })
    }

    /// Steps 2–4: snapshot, checkout, gate, passes, composition.
    async fn make_plan(&mut self) -> Result<ReviewPlan, ReviewError> {
        let reviewer = self.reviewer;
        let repository = &self.request.repository;
        let number = self.request.number;

        let step = self.progress.step("snapshot");
        let (snapshot, reviews) = tokio::join!(self.snapshot(), self.bot_reviews());
        self.reviews = reviews;
        let (snapshot, diff) = match snapshot {
            Ok(found) => found,
            Err(error) => {
                step.failed(error.to_string());
                return Err(error);
            }
        };
        let snapshot_path = self.run_directory.join("snapshot.json");
        write_private(&snapshot_path, &snapshot.to_json())
            .map_err(|error| ReviewError::Prepare(error.to_string()))?;
        step.done(format!(
            "{} files, {} threads, {} conversation comments",
            diff.len(),
            snapshot.review_threads.len(),
            snapshot.issue_comments.len()
        ));

        let step = self.progress.step("checkout");
        let credential = match reviewer.github.git_token(repository).await {
            Ok(token) => Some(GitCredential::new(token)),
            Err(error) => {
                step.failed(error.to_string());
                return Err(error.into());
            }
        };
        let clone_url = self
            .pull_request
            .base_clone_url
            .clone()
            .unwrap_or_else(|| format!("https://github.com/{repository}.git"));
        let worktree = match reviewer
            .checkouts
            .checkout(&CheckoutRequest {
                repository: repository.to_string(),
                clone_url,
                number,
                base_ref: self.pull_request.base_branch.clone(),
                head_sha: self.pull_request.head_sha.clone(),
                credential,
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
            .review_worktree(
                worktree.path(),
                worktree.mirror(),
                &snapshot,
                &snapshot_path,
                &diff,
            )
            .await;
        if let Err(error) = worktree.remove().await {
            tracing::warn!(%error, "could not remove the worktree; the next prune removes it");
        }
        result
    }

    /// Gate, passes and composition in a checked-out worktree.
    async fn review_worktree(
        &mut self,
        worktree: &Path,
        mirror: &Path,
        snapshot: &PullRequestSnapshot,
        snapshot_path: &Path,
        diff: &DiffModel,
    ) -> Result<ReviewPlan, ReviewError> {
        let mut notes = match self.gate(worktree, mirror, snapshot).await? {
            Ok(notes) => notes,
            Err(plan) => return Ok(plan),
        };
        notes.extend(not_reviewed_notes(snapshot, diff));
        self.scope = self.decide_scope(mirror, snapshot, diff).await;
        if self.asked_again {
            notes.push(format!(
                "_This review was asked for again: `bot-review-needed` was put back on {}, which \
                 the bot had already reviewed. Findings posted before are not repeated._",
                review_core::payload::inline_code(short_sha(&self.pull_request.head_sha))
            ));
        }
        let passes = self.passes(worktree, snapshot, snapshot_path, diff).await?;
        let noise = self.noise_control(mirror, snapshot).await?;
        self.compose(worktree, snapshot, diff, &passes, notes, noise)
            .await
    }

    /// The pull request's reviews, when the bot's login is known, read best
    /// effort: without them the review is a full one and resolves no thread.
    async fn bot_reviews(&self) -> Option<Vec<review_github::Review>> {
        self.reviewer.settings.bot_login.as_ref()?;
        match self
            .reviewer
            .github
            .list_reviews(&self.request.repository, self.request.number)
            .await
        {
            Ok(reviews) => Some(reviews),
            Err(error) => {
                tracing::warn!(%error, "could not read the pull request's reviews; a full review, resolving no thread");
                None
            }
        }
    }

    /// What this review covers ([`incremental`]): the changes since the bot's
    /// latest review of another head when that head is in this one's
    /// history, the whole pull request otherwise. A failure to tell gives a
    /// full review (logged).
    async fn decide_scope(
        &self,
        mirror: &Path,
        snapshot: &PullRequestSnapshot,
        diff: &DiffModel,
    ) -> incremental::Scope {
        let (Some(bot), Some(reviews)) = (
            self.reviewer.settings.bot_login.as_deref(),
            self.reviews.as_deref(),
        ) else {
            return incremental::Scope::Full;
        };
        let Some(earlier) = incremental::latest_bot_review(reviews, bot) else {
            return incremental::Scope::Full;
        };
        let files = diff
            .files()
            .iter()
            .map(|file| file.path.as_str())
            .chain(snapshot.files.iter().map(|file| file.path.as_str()))
            .collect();
        let step = self.progress.step("changes since the last review");
        match incremental::decide(
            self.reviewer.checkouts.git(),
            mirror,
            &earlier.commit,
            &self.pull_request.head_sha,
            &files,
        )
        .await
        {
            Ok(scope) => {
                step.done(scope.progress());
                scope
            }
            Err(error) => {
                step.failed(format!("{error}; reviewing the whole pull request"));
                tracing::warn!(%error, earlier = %earlier.commit, "could not tell the changes since the last review; a full review");
                incremental::Scope::Full
            }
        }
    }

    /// The noise control for this pull request: the operator's settings
    /// layered with the base commit's `.review-bot.toml` `[review]` table
    /// ([`command_sources::OperatorNoise::for_repository`]). A file that
    /// cannot be used adds nothing (its problem is reported where the build
    /// commands are discovered).
    async fn noise_control(
        &self,
        mirror: &Path,
        snapshot: &PullRequestSnapshot,
    ) -> Result<review_core::findings::noise::NoiseControl, ReviewError> {
        let reviewer = self.reviewer;
        let file = command_sources::base_repository_file(
            reviewer.checkouts.git(),
            mirror,
            &snapshot.pull_request.base_sha,
            &self.pull_request.base_branch,
        )
        .await?;
        Ok(reviewer
            .settings
            .noise
            .for_repository(&self.request.repository.to_string(), &file.review()))
    }

    /// The build + test gate: the notes for the review body when it passed
    /// (or had nothing to run), the failure's plan when it failed.
    #[allow(
        clippy::too_many_lines,
        reason = "one match per gate outcome, each with its progress line and note"
    )]
    async fn gate(
        &mut self,
        worktree: &Path,
        mirror: &Path,
        snapshot: &PullRequestSnapshot,
    ) -> Result<Result<Vec<String>, ReviewPlan>, ReviewError> {
        let reviewer = self.reviewer;
        let mut notes = Vec::new();
        let step = self.progress.step("build and test");
        let (discovery, file_problem) =
            match self.discover_commands(worktree, mirror, snapshot).await {
                Ok(found) => found,
                Err(error) => {
                    step.failed(error.to_string());
                    return Err(error);
                }
            };
        let source = match &discovery {
            Discovery::Found(found) => Some(found.source.name()),
            Discovery::NothingFound { .. } => None,
        };
        if let Some(problem) = file_problem {
            notes.push(
                self.report_repository_file(snapshot, &problem, source.as_deref())
                    .await?,
            );
        }
        let gate = match discovery {
            Discovery::NothingFound { searched } => Ok(GateOutcome::NoCommands { searched }),
            Discovery::Found(found) => {
                build_gate::run_commands(
                    &reviewer
                        .settings
                        .build_gate
                        .for_repository(&self.request.repository.to_string()),
                    worktree,
                    &self.run_directory,
                    &found,
                )
                .await
            }
        };
        let gate = match gate {
            Ok(gate) => gate,
            Err(error) => {
                step.failed(error.to_string());
                return Err(error.into());
            }
        };
        match gate {
            GateOutcome::EnvironmentFailure(failure) => {
                let missing = failure.missing.clone().unwrap_or_default();
                step.failed(format!(
                    "`{}` ({}) could not start: {missing}",
                    failure.command,
                    build_gate::command_origin(&failure)
                ));
                return Err(self.environment_failure(&failure, missing));
            }
            GateOutcome::Failed(failure) => {
                step.failed(format!(
                    "`{}` ({}) {}",
                    failure.command,
                    build_gate::command_origin(&failure),
                    failure.end
                ));
                let base = self.base_blame(&failure).await;
                if let Blame::AlsoOnBase(base) = &base {
                    notes.push(base_build::also_on_base_note(&failure, base));
                    self.build_note = Some(base_build::also_on_base_for_agent(&failure, base));
                    return Ok(Ok(notes));
                }
                let thread = Uuid::new_v5(&self.review_id.0, b"build-failure");
                let latest = latest_review_id(snapshot);
                let body = review_core::payload::with_footer(
                    &format!(
                        "{}\n\nThe same commands pass on the base branch ({}), so this failure \
                         is the pull request's.",
                        build_gate::failure_comment(&failure),
                        review_core::payload::inline_code(short_sha(&self.pull_request.base_sha)),
                    ),
                    &Footer::after_review(latest, ThreadId(thread)).render(),
                );
                return Ok(Err(self.plan(
                    ReviewOutcome::BuildFailed,
                    PlannedAction::BuildFailed {
                        body,
                        thread_id: thread,
                    },
                )));
            }
            GateOutcome::Passed { commands, source } => {
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
                notes.push(format!(
                    "_Build and tests passed ({} command{} from {}): {}._",
                    commands.len(),
                    if commands.len() == 1 { "" } else { "s" },
                    review_core::payload::single_line(&source.name()),
                    listed.join(", ")
                ));
            }
            GateOutcome::NoCommands { .. } if source.is_some() => {
                let source = source.as_deref().unwrap_or_default();
                step.done(format!("{source} lists no commands; skipped"));
                notes.push(format!(
                    "_The build and test gate was skipped: {} lists no commands._",
                    review_core::payload::inline_code(source)
                ));
            }
            GateOutcome::NoCommands { searched } => {
                step.done("no commands documented; skipped");
                notes.push(format!(
                    "_No build or test commands are documented (looked in {}), so the build and \
                     test gate was skipped; document them under a Build or Test heading of \
                     CLAUDE.md or README.md to have them run before every review._",
                    searched.join(", ")
                ));
            }
        }
        Ok(Ok(notes))
    }

    /// A build command that could not start: told to the operator (a log
    /// line, the metric), never to the author.
    fn environment_failure(
        &self,
        failure: &build_gate::BuildFailure,
        missing: String,
    ) -> ReviewError {
        let repository = self.request.repository.to_string();
        tracing::error!(
            repository = %repository,
            command = %failure.command,
            source = %failure.source_name(),
            missing = %missing,
            log = %failure.log.display(),
            "the bot cannot build this repository: a build command could not start"
        );
        metrics::counter!("review_bot_environment_failures_total", "repository" => repository.clone())
            .increment(1);
        ReviewError::Environment {
            repository,
            command: failure.command.clone(),
            origin: failure.source_name(),
            missing,
        }
    }

    /// Whose failure `failure` is: the same commands on the base commit
    /// ([`base_build::blame`]; cached per base commit). When the base cannot
    /// be built at all, the pull request is blamed, as without a rerun.
    async fn base_blame(&mut self, failure: &build_gate::BuildFailure) -> Blame {
        let reviewer = self.reviewer;
        let repository = &self.request.repository;
        let step = self.progress.step("base branch");
        let credential = match reviewer.github.git_token(repository).await {
            Ok(token) => Some(GitCredential::new(token)),
            Err(error) => {
                step.failed(error.to_string());
                return Blame::PullRequest;
            }
        };
        let settings = reviewer
            .settings
            .build_gate
            .for_repository(&repository.to_string());
        let rerun = base_build::BaseRerun {
            settings: &settings,
            checkouts: &reviewer.checkouts,
            store: &reviewer.store,
            checkout: CheckoutRequest {
                repository: repository.to_string(),
                clone_url: self
                    .pull_request
                    .base_clone_url
                    .clone()
                    .unwrap_or_else(|| format!("https://github.com/{repository}.git")),
                number: self.request.number,
                base_ref: self.pull_request.base_branch.clone(),
                head_sha: self.pull_request.base_sha.clone(),
                credential,
            },
            run_directory: &self.run_directory.join("base"),
        };
        let started = std::time::Instant::now();
        match base_build::blame(&rerun, failure).await {
            Ok(blame) => {
                let cached = matches!(&blame, Blame::AlsoOnBase(base) if base.cached);
                step.done(match &blame {
                    Blame::AlsoOnBase(_) => format!(
                        "`{}` fails at {} too{}; not this pull request's doing, reviewing",
                        failure.command,
                        short_sha(&self.pull_request.base_sha),
                        if cached { " (cached)" } else { "" }
                    ),
                    Blame::PullRequest => format!(
                        "the base at {} does not fail this way ({:.1} s); the failure is the pull \
                         request's",
                        short_sha(&self.pull_request.base_sha),
                        started.elapsed().as_secs_f64()
                    ),
                });
                blame
            }
            Err(error) => {
                step.failed(error.to_string());
                tracing::warn!(%error, "could not build the base commit; blaming the pull request");
                Blame::PullRequest
            }
        }
    }

    /// The commands for this pull request, first match wins
    /// ([`command_sources`]): the operator's for the repository, the base
    /// commit's `.review-bot.toml`, the worktree's documents. Also returns
    /// the file's problem when it could not be used.
    async fn discover_commands(
        &self,
        worktree: &Path,
        mirror: &Path,
        snapshot: &PullRequestSnapshot,
    ) -> Result<(Discovery, Option<(String, String)>), ReviewError> {
        let reviewer = self.reviewer;
        let operator = reviewer
            .settings
            .build_commands
            .for_repository(&self.request.repository.to_string());
        let file = if operator.is_some() {
            RepositoryFile::Absent
        } else {
            command_sources::base_repository_file(
                reviewer.checkouts.git(),
                mirror,
                &snapshot.pull_request.base_sha,
                &self.pull_request.base_branch,
            )
            .await?
        };
        let explicit = command_sources::explicit(operator, &file);
        let discovery = build_gate::discover(
            worktree,
            explicit
                .as_ref()
                .map(|(source, commands)| (source.clone(), commands)),
        )
        .await?;
        let problem = match file {
            RepositoryFile::Refused { blob, problem } => Some((blob, problem)),
            _ => None,
        };
        Ok((discovery, problem))
    }

    /// Tells the pull request, once per base commit and file content, that
    /// the base branch's `.review-bot.toml` cannot be used (`problem`: its
    /// blob and what is wrong) and which source was used instead; returns the
    /// review body's note. A dry run posts nothing.
    async fn report_repository_file(
        &self,
        snapshot: &PullRequestSnapshot,
        (blob, problem): &(String, String),
        next: Option<&str>,
    ) -> Result<String, ReviewError> {
        let repository = &self.request.repository;
        tracing::warn!(%repository, number = self.request.number, %problem, "the base branch's .review-bot.toml cannot be used; using the next source");
        let thread = ThreadId(command_sources::problem_thread(
            &repository.to_string(),
            &snapshot.pull_request.base_sha,
            blob,
        ));
        let instead = next.map_or_else(
            || "no other source documents commands".to_owned(),
            |source| {
                format!(
                    "the commands from {} were used",
                    review_core::payload::inline_code(source)
                )
            },
        );
        let note = format!(
            "_The base branch's `.review-bot.toml` cannot be used ({}); {instead}._",
            review_core::payload::inline_code(problem)
        );
        if self.request.dry_run {
            self.progress
                .note("the base branch's .review-bot.toml cannot be used (dry run: not posted)");
            return Ok(note);
        }
        let posted = snapshot.issue_comments.iter().any(|comment| {
            snapshot.written_by_bot(&comment.user)
                && footer::own_footer(&comment.body).thread == Some(thread)
        });
        if posted {
            return Ok(note);
        }
        let body = review_core::payload::with_footer(
            &command_sources::problem_comment(problem, next),
            &Footer::after_review(latest_review_id(snapshot), thread).render(),
        );
        let comment = self
            .reviewer
            .github
            .create_issue_comment(repository, self.request.number, &body, Some(thread))
            .await?;
        self.progress.note(format!(
            "the base branch's .review-bot.toml cannot be used: told the pull request ({})",
            comment.item.html_url
        ));
        Ok(note)
    }

    /// The two agent passes, each recorded in the store.
    async fn passes(
        &mut self,
        worktree: &Path,
        snapshot: &PullRequestSnapshot,
        snapshot_path: &Path,
        diff: &DiffModel,
    ) -> Result<Vec<(Pass, Vec<review_core::agent_requests::AgentRequest>)>, ReviewError> {
        let reviewer = self.reviewer;
        let paths: Vec<&str> = diff.files().iter().map(|file| file.path.as_str()).collect();
        let detection = review_core::platform::detect(paths);
        let run_directory = self.run_directory.clone();
        let build_note = self.build_note.clone();
        let re_review = match &self.scope {
            incremental::Scope::Since(range) => {
                let findings = incremental::earlier_findings(snapshot);
                Some(review_agent::prompts::re_review_message(
                    &review_agent::prompts::ReReview {
                        earlier_sha: &range.earlier,
                        head_sha: &range.head,
                        base_ref: &self.pull_request.base_branch,
                        commits: range.commits,
                        files: &range.files,
                        other_files: range.other_files,
                        findings: &findings,
                    },
                ))
            }
            _ => None,
        };
        let setup = PassSetup {
            claude: &reviewer.claude,
            prompts: &reviewer.prompts,
            guides: &detection.guides,
            mcp_binary: &reviewer.settings.mcp_binary,
            mcp_tool_timeout: reviewer.settings.mcp_tool_timeout,
            snapshot_path,
            worktree,
            run_directory: &run_directory,
            review_id: self.review_id,
            repository: &snapshot.repository,
            number: self.request.number,
            title: &snapshot.pull_request.title,
            build_note: build_note.as_deref(),
            re_review: re_review.as_deref(),
        };
        let mut passes = Vec::new();
        for pass in [Pass::Architecture, Pass::Detailed] {
            let step = self.progress.step(match pass {
                Pass::Architecture => "architecture pass",
                Pass::Detailed => "detailed pass",
            });
            match run_pass(&setup, pass).await {
                Ok(result) => {
                    self.record_pass(pass, Some(&result.run), &result.transcript)
                        .await;
                    step.done(format!(
                        "{} request{}, {}, ${:.2}, {:.1} s{}",
                        result.requests.len(),
                        if result.requests.len() == 1 { "" } else { "s" },
                        crate::progress::turns(result.run.num_turns),
                        result.run.total_cost_usd,
                        result.run.duration.as_secs_f64(),
                        if result.skipped.is_empty() {
                            String::new()
                        } else {
                            format!(", {} bad lines skipped", result.skipped.len())
                        }
                    ));
                    passes.push((pass, result.requests));
                }
                Err(error) => {
                    let transcript =
                        agent_pass::transcript_path(&self.run_directory, self.review_id, pass);
                    self.record_pass(pass, error.agent_run(), &transcript).await;
                    step.failed(error.to_string());
                    return Err(ReviewError::Pass {
                        pass,
                        source: error,
                    });
                }
            }
        }
        Ok(passes)
    }

    /// Merge, anchor, drop repeated findings (and, with `review.verify`,
    /// what the verification pass withholds): the review's plan.
    #[allow(clippy::too_many_lines)] // one recipe: compose, verify, compose again
    async fn compose(
        &mut self,
        worktree: &Path,
        snapshot: &PullRequestSnapshot,
        diff: &DiffModel,
        passes: &[(Pass, Vec<review_core::agent_requests::AgentRequest>)],
        notes: Vec<String>,
        noise: review_core::findings::noise::NoiseControl,
    ) -> Result<ReviewPlan, ReviewError> {
        let reviewer = self.reviewer;
        let step = self.progress.step("merge and anchor");
        let posted = self.posted_fingerprints(passes).await?;
        let (threads, resolved_earlier) = self.bot_threads().await;
        let reviewed_at = chrono::Utc::now().to_rfc3339();
        let min_confidence = noise.min_confidence.value();
        let review_id = self.review_id;
        let scope = self.scope.body_note();
        let compose_from = |passes: &[(Pass, Vec<review_core::agent_requests::AgentRequest>)],
                            notes: Vec<String>| {
            compose::compose(&compose::ComposeInput {
                review_id,
                snapshot,
                diff,
                passes,
                already_posted: &|path, line, body| {
                    posted.contains(&review_store::Fingerprint::of(
                        &review_store::InlineComment { path, line, body },
                    ))
                },
                notes,
                reviewed_at: reviewed_at.clone(),
                reviewer: format!("claude-code/{}", reviewer.claude.settings().model),
                noise,
                threads: &threads,
                resolved_earlier: &resolved_earlier,
                scope: scope.clone(),
            })
        };
        let mut composed = compose_from(passes, notes.clone());
        step.done(format!(
            "{} finding{} ({} inline), {} repeated, {} duplicate{}, {} repl{}",
            composed.findings.line_comments.len(),
            if composed.findings.line_comments.len() == 1 {
                ""
            } else {
                "s"
            },
            composed.payload.comments.len(),
            composed.repeated,
            composed.duplicates,
            if composed.duplicates == 1 { "" } else { "s" },
            composed.replies.len(),
            if composed.replies.len() == 1 {
                "y"
            } else {
                "ies"
            },
        ));
        let mut withheld = Vec::new();
        if reviewer.settings.verify && !composed.findings.line_comments.is_empty() {
            let mut notes = notes;
            match self
                .verification(
                    worktree,
                    &snapshot.diff,
                    &composed.findings.line_comments,
                    min_confidence,
                )
                .await
            {
                Some(verification) if verification.withheld.is_empty() => {}
                Some(verification) => {
                    notes.extend(verify::withheld_note(verification.withheld.len()));
                    composed =
                        compose_from(&verify::without(passes, &verification.withheld), notes);
                    withheld = verification
                        .withheld
                        .iter()
                        .map(|(finding, verdict)| verify::WithheldFinding::of(finding, verdict))
                        .collect();
                }
                None => {
                    notes.push(verify::not_run_note());
                    composed = compose_from(passes, notes);
                }
            }
        }
        composed.payload.body =
            crate::cost::with_cost_line(&composed.payload.body, &self.cost_line().await);
        Ok(self.plan(
            composed.outcome,
            PlannedAction::Review {
                resolve: composed.resolve,
                payload: composed.payload,
                replies: composed.replies,
                posted: composed.posted,
                repeated: composed.repeated,
                withheld,
            },
        ))
    }

    /// The review body's last line: this cycle's agent cost, turns and time,
    /// and the pull request's total so far (the store's sum over all its
    /// runs, this review's passes included; not read in a dry run).
    async fn cost_line(&self) -> String {
        let summary = &self.summary;
        let total = if self.request.dry_run {
            summary.agent_cost_usd
        } else {
            match self
                .reviewer
                .store
                .pull_request_cost(&self.request.repository.to_string(), self.request.number)
                .await
            {
                Ok(total) => total.cost_usd,
                Err(error) => {
                    tracing::warn!(%error, "could not sum the pull request's agent cost");
                    summary.agent_cost_usd
                }
            }
        };
        crate::cost::cost_line(
            summary.agent_cost_usd,
            summary.agent_turns,
            summary.agent_time,
            total,
        )
    }

    /// The verification pass on `findings` (see [`verify`]): recorded in the
    /// store as the pass `verification`, its cost added up, the withheld
    /// findings counted in `review_bot_findings_withheld_total`. `None` when
    /// it failed: an error in the log and in
    /// `review_bot_verification_failures_total`, and the caller posts the
    /// findings unverified.
    async fn verification(
        &mut self,
        worktree: &Path,
        diff: &str,
        findings: &[review_core::findings::LineComment],
        min_confidence: u8,
    ) -> Option<verify::Verification> {
        let step = self.progress.step("verification pass");
        let result = verify::verify(
            &self.reviewer.claude,
            worktree,
            &self.run_directory,
            diff,
            &self.pull_request.base_branch,
            findings,
            min_confidence,
        )
        .await;
        let repository = self.request.repository.to_string();
        match result {
            Ok(verification) => {
                self.summary.agent_cost_usd += verification.spend.cost_usd;
                self.summary.agent_turns += verification.spend.turns;
                self.summary.agent_time += verification.spend.duration;
                step.done(format!(
                    "{} kept, {} withheld as unlikely (min_confidence {min_confidence}), ${:.2}",
                    verification.kept.len(),
                    verification.withheld.len(),
                    verification.spend.cost_usd
                ));
                self.record_in_store(review_store::AgentPass {
                    name: "verification".to_owned(),
                    transcript_path: None,
                    session_id: None,
                    turns: Some(verification.spend.turns),
                    cost_usd: Some(verification.spend.cost_usd),
                    duration: Some(verification.spend.duration),
                })
                .await;
                if !self.request.dry_run {
                    metrics::counter!("review_bot_findings_withheld_total", "repository" => repository)
                        .increment(verification.withheld.len() as u64);
                }
                Some(verification)
            }
            Err(error) => {
                step.failed(error.to_string());
                tracing::error!(
                    %error,
                    findings = findings.len(),
                    "the verification pass failed; the findings are posted unverified"
                );
                metrics::counter!("review_bot_verification_failures_total", "repository" => repository)
                    .increment(1);
                self.record_in_store(review_store::AgentPass {
                    name: "verification".to_owned(),
                    transcript_path: None,
                    session_id: None,
                    turns: error.agent_run().map(|run| run.num_turns),
                    cost_usd: error.agent_run().map(|run| run.total_cost_usd),
                    duration: error.agent_run().map(|run| run.duration),
                })
                .await;
                None
            }
        }
    }

    /// The pull request's review threads (GraphQL) and the threads the bot
    /// resolved in earlier reviews (their bodies' markers). Reading them is
    /// best effort: when GitHub refuses, the review resolves nothing and says
    /// why in the log.
    async fn bot_threads(
        &self,
    ) -> (
        Vec<review_github::GraphQlThread>,
        std::collections::BTreeSet<u64>,
    ) {
        let reviewer = self.reviewer;
        let Some(bot) = reviewer.settings.bot_login.as_deref() else {
            return (Vec::new(), std::collections::BTreeSet::new());
        };
        let repository = &self.request.repository;
        let number = self.request.number;
        let threads = match reviewer.github.review_threads(repository, number).await {
            Ok(threads) => threads,
            Err(error) => {
                tracing::warn!(%error, "could not read the review threads; resolving none");
                return (Vec::new(), std::collections::BTreeSet::new());
            }
        };
        let listed = match &self.reviews {
            Some(reviews) => Ok(reviews.clone()),
            None => reviewer.github.list_reviews(repository, number).await,
        };
        let resolved_earlier = match listed {
            Ok(reviews) => reviews
                .iter()
                .filter(|review| {
                    review
                        .author_login
                        .as_deref()
                        .is_some_and(|login| login.eq_ignore_ascii_case(bot))
                })
                .flat_map(|review| compose::resolved_before(&review.body))
                .collect(),
            Err(error) => {
                tracing::warn!(%error, "could not read the earlier reviews; resolving none");
                return (Vec::new(), std::collections::BTreeSet::new());
            }
        };
        (threads, resolved_earlier)
    }

    fn plan(&self, outcome: ReviewOutcome, action: PlannedAction) -> ReviewPlan {
        ReviewPlan {
            version: plan::PLAN_VERSION,
            review_id: self.review_id.0,
            repository: self.request.repository.to_string(),
            pull_request: self.request.number,
            head_sha: self.pull_request.head_sha.clone(),
            outcome,
            action,
        }
    }

    /// Records a pass in the store (not in a dry run) and adds up its cost.
    async fn record_pass(
        &mut self,
        pass: Pass,
        run: Option<&review_agent::claude::AgentRun>,
        transcript: &Path,
    ) {
        if let Some(run) = run {
            self.summary.agent_cost_usd += run.total_cost_usd;
            self.summary.agent_turns += run.num_turns;
            self.summary.agent_time += run.duration;
        }
        self.record_in_store(review_store::AgentPass {
            name: pass_name(pass).to_owned(),
            transcript_path: Some(transcript.display().to_string()),
            session_id: run.and_then(|run| run.session_id.clone()),
            turns: run.map(|run| run.num_turns),
            cost_usd: run.map(|run| run.total_cost_usd),
            duration: run.map(|run| run.duration),
        })
        .await;
    }

    /// Records an agent run of this review in the store (not in a dry run);
    /// a failure is a warning.
    async fn record_in_store(&self, agent_pass: review_store::AgentPass) {
        if self.request.dry_run {
            return;
        }
        let key = run_key(
            &self.request.repository,
            self.request.number,
            self.review_id,
        );
        let review_id = self.review_id.to_string();
        let repository = self.request.repository.to_string();
        let recorded = async {
            let run_id = self
                .reviewer
                .store
                .start_run(&NewRun {
                    key: &key,
                    review_id: Some(&review_id),
                    repository: &repository,
                    pull_request: self.request.number,
                    head_sha: &self.pull_request.head_sha,
                    kind: JobKind::Review,
                })
                .await?;
            self.reviewer
                .store
                .record_agent_pass(run_id, &agent_pass)
                .await
        };
        if let Err(error) = recorded.await {
            tracing::warn!(%error, pass = %agent_pass.name, "could not record the agent pass in the store");
        }
    }

    /// The fingerprints of earlier cycles among the passes' inline comments.
    async fn posted_fingerprints(
        &self,
        passes: &[(Pass, Vec<review_core::agent_requests::AgentRequest>)],
    ) -> Result<HashSet<review_store::Fingerprint>, ReviewError> {
        let candidates: Vec<review_store::Fingerprint> = passes
            .iter()
            .flat_map(|(_, requests)| requests)
            .filter_map(|request| match request {
                review_core::agent_requests::AgentRequest::Inline(comment) => Some(
                    review_store::Fingerprint::of(&review_store::InlineComment {
                        path: &comment.path,
                        line: comment.line,
                        body: &comment.message,
                    }),
                ),
                _ => None,
            })
            .collect();
        if candidates.is_empty() {
            return Ok(HashSet::new());
        }
        Ok(self
            .reviewer
            .store
            .posted_fingerprints(
                &self.request.repository.to_string(),
                self.request.number,
                &candidates,
            )
            .await?)
    }

    /// Reads what the agent may see and builds the snapshot and the diff model.
    async fn snapshot(&self) -> Result<(PullRequestSnapshot, DiffModel), ReviewError> {
        let github = &self.reviewer.github;
        let repository = &self.request.repository;
        let number = self.request.number;
        let (diff, review_comments, issue_comments) = tokio::try_join!(
            github.get_pull_request_diff(repository, number),
            github.list_review_comments(repository, number),
            github.list_issue_comments(repository, number),
        )?;
        let replied: HashSet<u64> = if self.request.dry_run {
            HashSet::new()
        } else {
            self.reviewer
                .store
                .replied_comment_ids(number, &repository.to_string())
                .await?
                .into_iter()
                .map(|id| id.0)
                .collect()
        };
        let mut snapshot = snapshot_from_github(GitHubPullRequest {
            repository,
            pull_request: &self.pull_request,
            diff: &diff,
            review_comments: &review_comments,
            issue_comments: &issue_comments,
            replied: &replied,
            bot_login: self.reviewer.settings.bot_login.as_deref(),
        });
        // The bot's own conversation comments (failure reports, continuation
        // parts, quoted replies) are not questions for the agent to answer.
        let bot_login = snapshot.bot_login.clone();
        for comment in &mut snapshot.issue_comments {
            if bot_login
                .as_deref()
                .is_some_and(|bot| review_core::snapshot::is_bot_login(bot, &comment.user))
            {
                comment.replied = true;
            }
        }
        let model = snapshot.parsed_diff().map_err(|error| {
            ReviewError::Prepare(format!(
                "GitHub's diff of the pull request does not parse: {error}"
            ))
        })?;
        Ok((snapshot, model))
    }

    /// Reports `error` on the pull request (one comment, not in a dry run),
    /// records the run as failed, and returns the failure.
    async fn fail(
        &mut self,
        error: ReviewError,
        run_id: Option<review_store::RunId>,
    ) -> ReviewFailure {
        tracing::error!(error = %error, "the review failed");
        let mut reported = None;
        // The bot's machine cannot build the repository: the operator's to fix
        // (told by the log line and metric), nothing for the author to do.
        let for_the_author = !matches!(error, ReviewError::Environment { .. });
        if !self.request.dry_run {
            let step = self.progress.step("report the failure");
            let posted = if for_the_author {
                // Boxed: it would grow the review's future past its bound.
                Box::pin(post::report_failure(self, &error)).await
            } else {
                Err(ReviewError::Prepare(
                    "not reported on the pull request: the bot's machine cannot build it, the \
                     operator is told"
                        .to_owned(),
                ))
            };
            match posted {
                Ok(url) => {
                    step.done(url.clone());
                    reported = Some(url);
                }
                Err(post_error) => {
                    step.failed(post_error.to_string());
                    tracing::error!(error = %post_error, "could not report the failure on the pull request");
                }
            }
            // A run that failed while posting stays unfinished: the next run
            // of this head resumes its plan (same review id), so nothing is
            // posted twice. One that failed before posting is over.
            if let Some(run_id) = run_id.filter(|_| !self.posting)
                && let Err(store_error) = self.reviewer.store.finish_run(run_id, "failed").await
            {
                tracing::warn!(error = %store_error, "could not record the run as failed");
            }
        }
        ReviewFailure {
            error,
            reported,
            summary: self.summary.clone(),
        }
    }
}

/// The latest run of a head that matters to a new review of it.
enum Earlier {
    /// It completed, with this outcome.
    Completed(String),
    /// It stopped unfinished (killed, or failed while posting): finish it.
    Unfinished(ReviewId),
}

/// The latest review run of `head_sha` that completed or is unfinished
/// (failed, withdrawn and superseded runs are over and left nothing to
/// finish).
fn earlier_run(runs: &[review_store::Run], head_sha: &str) -> Option<Earlier> {
    let completed = |outcome: &str| {
        ReviewOutcome::COMPLETED
            .iter()
            .any(|completed| completed.as_str() == outcome)
    };
    let run = runs.iter().rev().find(|run| {
        run.kind == JobKind::Review
            && run.head_sha == head_sha
            && run.outcome.as_deref().is_none_or(completed)
    })?;
    match &run.outcome {
        Some(outcome) => Some(Earlier::Completed(outcome.clone())),
        None => run
            .review_id
            .as_deref()
            .and_then(|id| Uuid::parse_str(id).ok())
            .map(|id| Earlier::Unfinished(ReviewId(id))),
    }
}

/// The id of the latest review among the bot's own comments in the snapshot.
fn latest_review_id(snapshot: &PullRequestSnapshot) -> Option<ReviewId> {
    let bodies = snapshot
        .review_threads
        .iter()
        .flat_map(|thread| &thread.comments)
        .filter(|comment| snapshot.written_by_bot(&comment.user))
        .map(|comment| comment.body.as_str())
        .chain(
            snapshot
                .issue_comments
                .iter()
                .filter(|comment| snapshot.written_by_bot(&comment.user))
                .map(|comment| comment.body.as_str()),
        );
    footer::latest_review_id(bodies)
}

/// Paragraphs naming the files the review could not see.
fn not_reviewed_notes(snapshot: &PullRequestSnapshot, diff: &DiffModel) -> Vec<String> {
    let mut lines = Vec::new();
    for file in diff.files() {
        let reason = if file.binary {
            "binary file"
        } else if file.content_omitted {
            "GitHub gives no patch for it (too large)"
        } else {
            continue;
        };
        lines.push(format!(
            "- {}: {reason}",
            review_core::payload::inline_code(&file.path)
        ));
    }
    let mut notes = Vec::new();
    if !lines.is_empty() {
        notes.push(format!(
            "### Not reviewed\n\nThese files have no diff the review could read:\n\n{}",
            lines.join("\n")
        ));
    }
    if snapshot.files_truncated {
        notes.push(format!(
            "_GitHub lists at most {} files of a pull request; files beyond them were not \
             reviewed._",
            review_github::MAX_PULL_REQUEST_FILES
        ));
    }
    notes
}

/// The first 12 characters of a SHA.
pub fn short_sha(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}
