//! One step of the loop for one pull request — what `review-bot step` runs
//! by hand and the daemon runs per pull request it finds ([`step`]).
//!
//! 1. **Read** the pull request (a conditional request: free when
//!    unchanged) and **route** it by its bot label ([`route`]):
//!    `bot-review-needed` → the review flow, `bot-changes-needed` → the
//!    write flow, `bot-ci-pending` → the CI check; closed, no bot label, or
//!    a label handing it to a human → nothing to do. Should a pull request
//!    carry several trigger labels, the first in the loop's order (review,
//!    changes, CI) runs; the step's label change removes the others.
//! 2. **Lease** (`review-bot step` only: the daemon's scheduler already holds
//!    the pull request's lease): never at the same time as a daemon.
//! 3. **Attempt gate** (the daemon only, reviews and fixes only): a job that
//!    failed on this head waits for its backoff, and one that failed
//!    `agent.max_attempts` times is handed to a human
//!    ([`crate::daemon::attempts`]).
//! 4. **Run the job** ([`run_job`]) and, under the gate, **record** its
//!    success or failure.
//!
//! The outcome ([`StepReport`], [`Stepped`]) is data: the caller prints it,
//! chooses exit codes and records metrics.

use std::time::Duration;

use review_core::labels::{self, Job, Label};
use review_github::{GitHubError, PullRequest, PullRequestState, RepositoryName};
use review_store::{JobKey, Lease, StoreError};

use crate::ci::{CiError, CiRequest, CiSummary};
use crate::daemon::attempts::{self, AfterFailure, AttemptPolicy, Gate, HandOverContext};
use crate::daemon::scheduler::{Leased, run_leased};
use crate::progress::Progress;
use crate::review::{ReviewFailure, ReviewReport, ReviewRequest, Reviewer, short_sha};
use crate::write::{WriteFailure, WriteOutcome, WriteReport, WriteRequest, WriteSettings};

/// What a step needs besides the reviewer (the binary maps its
/// configuration into it).
#[derive(Debug, Clone)]
pub struct StepSettings {
    /// `ci.timeout_secs`: how long CI may stay pending, from the head
    /// commit's date.
    pub ci_timeout: Duration,
    /// The write flow's settings.
    pub write: WriteSettings,
}

/// One step to take.
#[derive(Debug, Clone)]
pub struct StepRequest {
    /// The repository.
    pub repository: RepositoryName,
    /// The pull request.
    pub number: u64,
    /// Claim the pull request's lease around the job (`review-bot step`);
    /// `false` when the caller holds it already (the daemon's scheduler).
    pub lease: bool,
    /// The attempt gate (the daemon): `None` runs the job whatever failed
    /// before (a person running `step` by hand).
    pub attempts: Option<AttemptPolicy>,
}

/// How a step ended, short of an error.
#[allow(
    clippy::large_enum_variant,
    reason = "one per step, moved once to its printer"
)]
pub enum StepReport {
    /// The job the labels called for ran (or there was nothing to do).
    Stepped {
        /// What it did.
        stepped: Stepped,
        /// What the attempt gate recorded after it.
        recorded: Recorded,
    },
    /// The job failed on this head before; its backoff is not over.
    Waiting {
        /// Failures so far.
        failures: u32,
        /// Until the next attempt.
        retry_in: Duration,
        /// The head commit (short).
        head: String,
    },
    /// The job had failed `agent.max_attempts` times on this head and the
    /// hand-over had not finished: it is now (its comment's page).
    HandedOver(String),
    /// Another process holds the pull request's lease: nothing was done.
    Busy(Option<Lease>),
    /// The lease could not be renewed while the job ran: it was stopped.
    LeaseLost,
}

/// What the attempt gate recorded after a job.
#[derive(Debug, Clone, PartialEq)]
pub enum Recorded {
    /// Not counted: no gate (a step by hand), a CI check, or nothing to do.
    NotCounted,
    /// The job completed: the head's failures are forgotten.
    Success,
    /// One more failure; tried again after `retry_in`.
    Retry {
        /// Failures so far.
        failures: u32,
        /// Of at most.
        max_attempts: u32,
        /// Until the next attempt.
        retry_in: Duration,
        /// The head commit (short).
        head: String,
    },
    /// The failure that reached the limit: handed to a human.
    HandedOver {
        /// Failures so far.
        failures: u32,
        /// The hand-over comment.
        comment_url: String,
    },
}

/// Why a step could not be taken or recorded.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The pull request could not be read.
    #[error("could not read {target}: {source}")]
    Read {
        /// `OWNER/REPO#N`.
        target: String,
        /// What GitHub said.
        source: GitHubError,
    },
    /// The store could not be asked for the lease.
    #[error("could not claim {target} in the store: {source}")]
    Claim {
        /// `OWNER/REPO#N`.
        target: String,
        /// What the store said.
        source: StoreError,
    },
    /// The attempt gate could not read or finish its record.
    #[error("{0}")]
    Attempts(String),
}

/// What one job did.
pub enum Stepped {
    /// Nothing to do, and why.
    Nothing(String),
    /// The review flow's outcome.
    Review(Result<ReviewReport, ReviewFailure>),
    /// The CI check's outcome.
    Ci(Result<CiSummary, CiError>),
    /// The write flow's outcome.
    Write(Result<WriteReport, WriteFailure>),
}

impl Stepped {
    /// What failed, in one sentence fit for the pull request; `None` when
    /// the step did its job. A fix that pushed nothing (no change, a failed
    /// build, conflicts left) completed as a step but failed as an attempt:
    /// left alone, every poll would try it again.
    pub fn public_error(&self) -> Option<String> {
        match self {
            Self::Write(Ok(WriteReport {
                outcome: Some(WriteOutcome::NotFixed { why }),
                ..
            })) => Some(format!("the fix was not pushed: {why}")),
            Self::Nothing(_) | Self::Review(Ok(_)) | Self::Ci(Ok(_)) | Self::Write(Ok(_)) => None,
            Self::Review(Err(failure)) => Some(failure.error.public_summary()),
            Self::Write(Err(failure)) => Some(failure.error.public_summary()),
            Self::Ci(Err(error)) => Some(error.to_string()),
        }
    }

    /// What the agent cost (US dollars) and how many turns it took.
    pub fn agent_spend(&self) -> (f64, u32) {
        match self {
            Self::Review(
                Ok(ReviewReport::Completed(summary) | ReviewReport::DryRun { summary, .. })
                | Err(ReviewFailure { summary, .. }),
            ) => (summary.agent_cost_usd, summary.agent_turns),
            Self::Write(Ok(summary) | Err(WriteFailure { summary, .. })) => {
                (summary.agent_cost_usd, summary.agent_turns)
            }
            _ => (0.0, 0),
        }
    }
}

/// What the labels call for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Nothing, and why.
    Nothing(String),
    /// This job.
    Job(Job),
}

/// The job the pull request's labels call for.
pub fn route(current: &[String]) -> Route {
    let managed = labels::managed_labels(current);
    match Label::TRIGGERS
        .into_iter()
        .filter(|trigger| managed.contains(trigger))
        .find_map(Label::job)
    {
        Some(job) => Route::Job(job),
        None => Route::Nothing(match managed.first() {
            Some(label) => format!("it is labelled `{label}`, which hands it to a human"),
            None => format!(
                "it has no bot label (one of {})",
                Label::TRIGGERS.map(Label::name).join(", ")
            ),
        }),
    }
}

/// What the pull request's state and labels call for.
pub enum Routed {
    /// Nothing (closed, or no trigger label), and why.
    Nothing(String),
    /// `job`, on the pull request as read.
    Job {
        /// The pull request as read.
        pull_request: Box<PullRequest>,
        /// The job.
        job: Job,
    },
}

/// Takes one step of the loop for `request`'s pull request (see the module
/// documentation).
pub async fn step(
    reviewer: &Reviewer,
    settings: &StepSettings,
    request: &StepRequest,
    progress: &Progress,
) -> Result<StepReport, StepError> {
    let target = format!("{}#{}", request.repository, request.number);
    let (pull_request, job) = match read(reviewer, &request.repository, request.number, progress)
        .await
        .map_err(|source| StepError::Read {
            target: target.clone(),
            source,
        })? {
        Routed::Nothing(reason) => {
            return Ok(StepReport::Stepped {
                stepped: Stepped::Nothing(reason),
                recorded: Recorded::NotCounted,
            });
        }
        Routed::Job { pull_request, job } => (*pull_request, job),
    };
    tracing::Span::current().record("head_sha", pull_request.head_sha.as_str());
    if !request.lease {
        return gated(reviewer, settings, request, pull_request, job, progress).await;
    }
    let leased = run_leased(
        &reviewer.store,
        &request.repository.to_string(),
        request.number,
        attempts::job_kind(job),
        // Boxed: the review and write flows make a large future.
        Box::pin(gated(
            reviewer,
            settings,
            request,
            pull_request,
            job,
            progress,
        )),
    )
    .await;
    match leased {
        Ok(Leased::Ran(report)) => report,
        Ok(Leased::Busy(lease)) => Ok(StepReport::Busy(lease)),
        Ok(Leased::LeaseLost) => Ok(StepReport::LeaseLost),
        Err(source) => Err(StepError::Claim { target, source }),
    }
}

/// The job under the attempt gate (when there is one).
async fn gated(
    reviewer: &Reviewer,
    settings: &StepSettings,
    request: &StepRequest,
    pull_request: PullRequest,
    job: Job,
    progress: &Progress,
) -> Result<StepReport, StepError> {
    let repository = request.repository.to_string();
    let attempt = request
        .attempts
        .as_ref()
        .filter(|_| attempts::counted(job))
        .map(|policy| Attempt {
            reviewer,
            repository: &request.repository,
            repository_text: &repository,
            pull_request: &pull_request,
            job,
            policy,
            progress,
        });
    if let Some(attempt) = &attempt
        && let Some(report) = attempt.gate().await?
    {
        return Ok(report);
    }
    let stepped = Box::pin(run_job(
        reviewer,
        &request.repository,
        pull_request.clone(),
        job,
        settings,
        progress,
    ))
    .await;
    let recorded = match &attempt {
        Some(attempt) => attempt.record(stepped.public_error().as_deref()).await?,
        None => Recorded::NotCounted,
    };
    Ok(StepReport::Stepped { stepped, recorded })
}

/// Reads the pull request (a conditional request: free when unchanged) and
/// routes it by its labels.
pub async fn read(
    reviewer: &Reviewer,
    repository: &RepositoryName,
    number: u64,
    progress: &Progress,
) -> Result<Routed, GitHubError> {
    let step = progress.step("labels");
    let pull_request = match reviewer.github.get_pull_request(repository, number).await {
        Ok(pull_request) => pull_request,
        Err(error) => {
            step.failed(error.to_string());
            return Err(error);
        }
    };
    if pull_request.state != PullRequestState::Open {
        step.done("closed");
        return Ok(Routed::Nothing(format!(
            "is {}",
            if pull_request.merged {
                "merged"
            } else {
                "closed"
            }
        )));
    }
    match route(&pull_request.labels) {
        Route::Nothing(reason) => {
            step.done("no trigger label");
            Ok(Routed::Nothing(reason))
        }
        Route::Job(job) => {
            step.done(format!("{} → {}", job.trigger(), job_name(job)));
            Ok(Routed::Job {
                pull_request: Box::new(pull_request),
                job,
            })
        }
    }
}

/// Runs `job` on the pull request [`read`] found.
pub async fn run_job(
    reviewer: &Reviewer,
    repository: &RepositoryName,
    pull_request: PullRequest,
    job: Job,
    settings: &StepSettings,
    progress: &Progress,
) -> Stepped {
    let number = pull_request.number;
    match job {
        Job::Review => Stepped::Review(
            reviewer
                .review(
                    &ReviewRequest {
                        repository: repository.clone(),
                        number,
                        dry_run: false,
                        force: false,
                        from_label: true,
                    },
                    progress,
                )
                .await,
        ),
        Job::CiCheck => Stepped::Ci(
            crate::ci::check(
                &reviewer.github,
                &CiRequest {
                    repository: repository.clone(),
                    pull_request,
                    timeout: settings.ci_timeout,
                    bot_login: reviewer.settings.bot_login.clone(),
                },
                progress,
            )
            .await,
        ),
        Job::Write => Stepped::Write(
            Box::pin(reviewer.write(
                &WriteRequest {
                    repository: repository.clone(),
                    pull_request,
                    settings: settings.write.clone(),
                },
                progress,
            ))
            .await,
        ),
    }
}

/// The job's name in progress lines.
pub const fn job_name(job: Job) -> &'static str {
    match job {
        Job::Review => "review",
        Job::Write => "fix",
        Job::CiCheck => "CI check",
    }
}

/// A counted job on one head: its gate before, its record after.
struct Attempt<'a> {
    reviewer: &'a Reviewer,
    repository: &'a RepositoryName,
    repository_text: &'a str,
    pull_request: &'a PullRequest,
    job: Job,
    policy: &'a AttemptPolicy,
    progress: &'a Progress,
}

impl Attempt<'_> {
    fn key(&self) -> JobKey<'_> {
        JobKey {
            repository: self.repository_text,
            pull_request: self.pull_request.number,
            kind: attempts::job_kind(self.job),
            head_sha: &self.pull_request.head_sha,
        }
    }

    fn hand_over_context(&self) -> HandOverContext<'_> {
        HandOverContext {
            github: &self.reviewer.github,
            repository: self.repository,
            pull_request: self.pull_request,
            job: self.job,
            bot_login: self.reviewer.settings.bot_login.as_deref(),
            progress: self.progress,
        }
    }

    fn short_head(&self) -> String {
        short_sha(&self.pull_request.head_sha).to_owned()
    }

    /// `None`: run the job. Otherwise the step's report without running it
    /// (backing off, or handing over).
    async fn gate(&self) -> Result<Option<StepReport>, StepError> {
        let key = self.key();
        match attempts::gate(&self.reviewer.store, &key, self.policy).await {
            Ok(Gate::Run) => Ok(None),
            Ok(Gate::Wait { failures, retry_in }) => Ok(Some(StepReport::Waiting {
                failures,
                retry_in,
                head: self.short_head(),
            })),
            Ok(Gate::HandOver(recorded)) => attempts::hand_over(
                &self.reviewer.store,
                &key,
                &recorded,
                self.policy,
                &self.hand_over_context(),
            )
            .await
            .map(|url| Some(StepReport::HandedOver(url)))
            .map_err(|error| StepError::Attempts(error.to_string())),
            Err(error) => Err(StepError::Attempts(format!(
                "could not read the job's earlier attempts: {error}"
            ))),
        }
    }

    /// Forgets the head's failures after a success; records one more after
    /// a failure (`public_error`), handing over at the limit.
    async fn record(&self, public_error: Option<&str>) -> Result<Recorded, StepError> {
        let key = self.key();
        let Some(error) = public_error else {
            return attempts::record_success(&self.reviewer.store, &key)
                .await
                .map(|()| Recorded::Success)
                .map_err(|error| StepError::Attempts(error.to_string()));
        };
        let after = attempts::record_failure(
            &self.reviewer.store,
            &key,
            error,
            self.policy,
            &self.hand_over_context(),
        )
        .await
        .map_err(|error| StepError::Attempts(error.to_string()))?;
        Ok(match after {
            AfterFailure::Retry { failures, retry_in } => Recorded::Retry {
                failures,
                max_attempts: self.policy.max_attempts,
                retry_in,
                head: self.short_head(),
            },
            AfterFailure::HandedOver {
                failures,
                comment_url,
            } => Recorded::HandedOver {
                failures,
                comment_url,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routed(labels: &[&str]) -> Option<Job> {
        let labels: Vec<String> = labels.iter().map(|label| (*label).to_owned()).collect();
        match route(&labels) {
            Route::Job(job) => Some(job),
            Route::Nothing(_) => None,
        }
    }

    #[test]
    fn labels_route_to_their_job_and_terminal_or_none_to_nothing() {
        assert_eq!(routed(&["bug", "bot-review-needed"]), Some(Job::Review));
        assert_eq!(routed(&["Bot-Changes-Needed"]), Some(Job::Write));
        assert_eq!(routed(&["bot-ci-pending"]), Some(Job::CiCheck));
        assert_eq!(routed(&[]), None);
        assert_eq!(routed(&["bug"]), None);
        assert_eq!(routed(&["human-review-needed"]), None);
        assert_eq!(routed(&["bot-human-intervention"]), None);
        // A trigger beside a stale terminal label still runs.
        assert_eq!(
            routed(&["human-review-needed", "bot-review-needed"]),
            Some(Job::Review)
        );
        assert_eq!(
            routed(&["bot-ci-pending", "bot-changes-needed"]),
            Some(Job::Write)
        );
    }
}
