//! The daemon's memory of jobs that keep failing on one head commit.
//!
//! A review or fix that fails is tried again at the next poll that finds its
//! pull request, which, without a limit, would spend the agent's money on
//! the same failure forever. So each failure is recorded in the store against
//! `(pull request, job, head commit)` ([`review_store::JobKey`]): the next
//! attempt waits for a backoff that doubles with every failure
//! ([`AttemptPolicy::backoff`]), and the failure that reaches
//! `agent.max_attempts` hands the pull request to a human — one comment
//! saying what failed and how to hand it back, and the label
//! `bot-human-intervention` (the pull request's status comment, `status`,
//! then says the bot stopped). A new commit is a new head, so it starts again
//! from nothing; a person putting a trigger label back on the same head after
//! the hand-over asks for a fresh try, and gets one.
//!
//! CI checks are not counted: they run no agent, only read GitHub, and are
//! stateless by design, so a failed check is simply asked again next poll.
//! The records live in the store, not in memory: a restarted daemon, or
//! another replica, keeps the count.

use std::time::Duration;

use review_core::footer::{Footer, ThreadId};
use review_core::labels::{Job, Label};
use review_core::payload::{inline_code, single_line};
use review_github::{GitHubClient, GitHubError, PullRequest, RepositoryName};
use review_store::{JobAttempts, JobKey, JobKind, Store, StoreError};
use uuid::Uuid;

use crate::ci::{BotComments, set_bot_label};
use crate::progress::Progress;
use crate::status;

/// The hand-over comments' `thread::` ids: one per pull request, job and head.
const HAND_OVER_NAMESPACE: Uuid = Uuid::from_u128(0x9d3e_51a7_0c4b_4e2f_8a61_3b7c_2e9d_5f03);

/// The longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_hours(1);

/// How many failures a job may have on one head, and how long it waits
/// after each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptPolicy {
    /// `agent.max_attempts`: the failure that reaches it hands the pull
    /// request to a human.
    pub max_attempts: u32,
    /// The wait after the first failure; it doubles with each further one,
    /// up to an hour.
    pub first_backoff: Duration,
}

impl AttemptPolicy {
    /// `max_attempts` failures; the first wait is two poll intervals.
    pub fn new(max_attempts: u32, poll_interval: Duration) -> Self {
        Self {
            max_attempts: max_attempts.max(1),
            first_backoff: poll_interval.saturating_mul(2),
        }
    }

    /// The wait after the `failures`-th failure: `first_backoff × 2^(failures − 1)`,
    /// at most an hour.
    pub fn backoff(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(20);
        self.first_backoff
            .saturating_mul(1 << doublings)
            .min(MAX_BACKOFF)
    }
}

/// Whether the job may run now.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// No failure on this head (or a person asked for a fresh try): run it.
    Run,
    /// Failed before on this head; the next attempt is due in `retry_in`.
    Wait {
        /// Failures so far.
        failures: u32,
        /// Until the next attempt.
        retry_in: Duration,
    },
    /// Failed `max_attempts` times, but the hand-over did not finish (its
    /// comment or label failed): finish it, do not run the job.
    HandOver(JobAttempts),
}

/// What a recorded failure led to.
#[derive(Debug, Clone, PartialEq)]
pub enum AfterFailure {
    /// Tried again after `retry_in`.
    Retry {
        /// Failures so far.
        failures: u32,
        /// Until the next attempt.
        retry_in: Duration,
    },
    /// Handed to a human: the comment's page.
    HandedOver {
        /// Failures so far.
        failures: u32,
        /// The hand-over comment.
        comment_url: String,
    },
}

/// Why the attempts could not be read or recorded.
#[derive(Debug, thiserror::Error)]
pub enum AttemptError {
    /// The store failed.
    #[error("could not read or record the job's attempts: {0}")]
    Store(#[from] StoreError),
    /// GitHub refused the hand-over's comment or label.
    #[error("could not hand the pull request to a human: {0}")]
    GitHub(#[from] GitHubError),
}

/// The store's name for the job a label calls for.
pub const fn job_kind(job: Job) -> JobKind {
    match job {
        Job::Review => JobKind::Review,
        Job::Write => JobKind::Write,
        Job::CiCheck => JobKind::Ci,
    }
}

/// Whether failures of `job` are counted (CI checks are not; see the module).
pub const fn counted(job: Job) -> bool {
    !matches!(job, Job::CiCheck)
}

/// Decides whether `key`'s job may run now.
pub async fn gate(
    store: &Store,
    key: &JobKey<'_>,
    policy: &AttemptPolicy,
) -> Result<Gate, StoreError> {
    let Some(attempts) = store.job_attempts(key).await? else {
        return Ok(Gate::Run);
    };
    if attempts.handed_over_at.is_some() {
        // Handed over, and a trigger label is back on the same head: a
        // person asked for another try.
        store.clear_job_attempts(key).await?;
        tracing::info!(
            failures = attempts.failures,
            "a trigger label is back after the hand-over: trying again from zero"
        );
        return Ok(Gate::Run);
    }
    if attempts.failures >= policy.max_attempts {
        return Ok(Gate::HandOver(attempts));
    }
    if attempts.retry_in.is_zero() {
        Ok(Gate::Run)
    } else {
        Ok(Gate::Wait {
            failures: attempts.failures,
            retry_in: attempts.retry_in,
        })
    }
}

/// What a hand-over needs besides the store's record.
pub struct HandOverContext<'a> {
    /// GitHub.
    pub github: &'a GitHubClient,
    /// The repository.
    pub repository: &'a RepositoryName,
    /// The pull request as the step read it (its labels are changed).
    pub pull_request: &'a PullRequest,
    /// The job that kept failing.
    pub job: Job,
    /// The bot's login, to find its earlier hand-over comment.
    pub bot_login: Option<&'a str>,
    /// The step's progress lines.
    pub progress: &'a Progress,
}

/// Records one more failure of `key`'s job (`public_error`: what failed, fit
/// for the pull request) and, when it reaches `policy.max_attempts`, hands the
/// pull request to a human.
pub async fn record_failure(
    store: &Store,
    key: &JobKey<'_>,
    public_error: &str,
    policy: &AttemptPolicy,
    context: &HandOverContext<'_>,
) -> Result<AfterFailure, AttemptError> {
    let attempts = store
        .record_job_failure(key, public_error, |failures| policy.backoff(failures))
        .await?;
    if attempts.failures < policy.max_attempts {
        return Ok(AfterFailure::Retry {
            failures: attempts.failures,
            retry_in: attempts.retry_in,
        });
    }
    let comment_url = hand_over(store, key, &attempts, policy, context).await?;
    Ok(AfterFailure::HandedOver {
        failures: attempts.failures,
        comment_url,
    })
}

/// The job completed on this head: its failures are forgotten.
pub async fn record_success(store: &Store, key: &JobKey<'_>) -> Result<(), StoreError> {
    store.clear_job_attempts(key).await.map(drop)
}

/// Posts the hand-over comment (once per pull request, job and head), sets
/// `bot-human-intervention` and records the hand-over. Returns the comment's
/// page.
pub async fn hand_over(
    store: &Store,
    key: &JobKey<'_>,
    attempts: &JobAttempts,
    policy: &AttemptPolicy,
    context: &HandOverContext<'_>,
) -> Result<String, AttemptError> {
    let repository = context.repository;
    let number = context.pull_request.number;
    let thread = ThreadId(Uuid::new_v5(
        &HAND_OVER_NAMESPACE,
        format!(
            "{}#{number}:{}:{}",
            repository.to_string().to_ascii_lowercase(),
            key.kind,
            key.head_sha
        )
        .as_bytes(),
    ));
    let step = context.progress.step("hand over");
    let posted = async {
        let github = context.github;
        let (reviews, review_comments, issue_comments) = tokio::try_join!(
            github.list_reviews(repository, number),
            github.list_review_comments(repository, number),
            github.list_issue_comments(repository, number),
        )?;
        let earlier = BotComments::from_lists(
            context.bot_login,
            &reviews,
            &review_comments,
            &issue_comments,
        );
        let status_comment = status::find(
            &issue_comments,
            context.bot_login,
            status::thread_id(repository, number),
        )
        .map(|comment| comment.id);
        if let Some(url) = earlier.comment_with_thread(thread) {
            return Ok::<_, GitHubError>((url, status_comment, earlier.latest_review));
        }
        let body = review_core::payload::with_footer(
            &hand_over_comment(attempts, policy, context.job),
            &Footer::after_review(earlier.latest_review, thread).render(),
        );
        let comment = github
            .create_issue_comment(repository, number, &body, Some(thread))
            .await?;
        Ok((comment.item.html_url, status_comment, earlier.latest_review))
    }
    .await;
    let url = match posted {
        Ok((url, status_comment, latest_review)) => {
            step.done(url.clone());
            // The status comment (one per pull request) said the bot would
            // try again; now it says the bot stopped, and where the
            // hand-over is. Not a new comment: the hand-over is the one.
            if let Some(status_comment) = status_comment
                && let Err(error) = status::publish(
                    context.github,
                    repository,
                    number,
                    Some(status_comment),
                    latest_review,
                    &stopped_status(attempts, policy, &url),
                )
                .await
            {
                tracing::warn!(%error, "could not update the status comment after the hand-over");
            }
            url
        }
        Err(error) => {
            step.failed(error.to_string());
            return Err(error.into());
        }
    };
    set_bot_label(
        context.github,
        repository,
        context.pull_request,
        Label::BotHumanIntervention,
        context.progress,
    )
    .await?;
    store.record_handed_over(key).await?;
    tracing::warn!(
        failures = attempts.failures,
        comment = url,
        "handed to a human after repeated failures"
    );
    Ok(url)
}

/// How an environment failure's public summary begins
/// (`ReviewError::public_summary`).
pub const CANNOT_BUILD: &str = "the bot cannot build this repository";

/// The status after the hand-over: the bot stopped, and where to read why.
fn stopped_status(attempts: &JobAttempts, policy: &AttemptPolicy, hand_over_url: &str) -> String {
    let short_head: String = attempts.head_sha.chars().take(12).collect();
    let last_error = attempts
        .last_error
        .as_deref()
        .map_or_else(|| "(not recorded)".to_owned(), single_line);
    format!(
        "### ✋ review-bot stopped\n\n\
         **Attempt {failures} of {limit}** on {head} failed: {last_error}\n\n\
         **What happens next:** nothing until a person acts; the hand-over says how to hand the \
         pull request back: {hand_over_url}",
        failures = attempts.failures,
        limit = policy.max_attempts,
        head = inline_code(&short_head),
    )
}

/// The hand-over comment: what kept failing, and how to hand it back.
fn hand_over_comment(attempts: &JobAttempts, policy: &AttemptPolicy, job: Job) -> String {
    let (work, trigger) = match job {
        Job::Review => ("review", Label::BotReviewNeeded),
        Job::Write => ("fix", Label::BotChangesNeeded),
        Job::CiCheck => ("check CI for", Label::BotCiPending),
    };
    let short_head: String = attempts.head_sha.chars().take(12).collect();
    let last_error = attempts
        .last_error
        .as_deref()
        .map_or_else(|| "(not recorded)".to_owned(), single_line);
    // A build command that cannot start on the bot's machine (the review
    // flow's `ReviewError::Environment`): say so plainly, it is not the
    // author's to fix.
    let cannot_build = if last_error.starts_with(CANNOT_BUILD) {
        "\n\n**The bot cannot build this repository** on its machine: a program or toolchain \
         its build commands need is missing. This is not the pull request's doing; the bot's \
         operator must install it (`review-bot doctor` names what is missing)."
    } else {
        ""
    };
    format!(
        "### ✋ review-bot stops here: {failures} failed attempts\n\n\
         The bot tried to {work} this pull request at {head} {failures} times and every attempt \
         failed (the limit is {limit}, `agent.max_attempts`), so it will not try again on its \
         own. The last attempt's error: {last_error}{cannot_build}\n\n\
         To hand it back to the bot, push a new commit, or replace `bot-human-intervention` with \
         `{trigger}` once the cause is fixed.",
        failures = attempts.failures,
        head = inline_code(&short_head),
        limit = policy.max_attempts,
        trigger = trigger.name(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_from_two_intervals_up_to_an_hour() {
        let policy = AttemptPolicy::new(3, Duration::from_mins(1));
        assert_eq!(policy.backoff(1), Duration::from_mins(2));
        assert_eq!(policy.backoff(2), Duration::from_mins(4));
        assert_eq!(policy.backoff(3), Duration::from_mins(8));
        assert_eq!(policy.backoff(7), MAX_BACKOFF);
        assert_eq!(policy.backoff(u32::MAX), MAX_BACKOFF);
        assert_eq!(policy.backoff(0), Duration::from_mins(2));
        assert_eq!(AttemptPolicy::new(0, Duration::ZERO).max_attempts, 1);
    }

    #[test]
    fn the_hand_over_says_plainly_when_the_bot_cannot_build_the_repository() {
        let attempts = JobAttempts {
            repository: "acme/widgets".to_owned(),
            pull_request: 7,
            kind: JobKind::Review,
            head_sha: "0123456789abcdef0123".to_owned(),
            failures: 3,
            last_error: Some(format!(
                "{CANNOT_BUILD}: `cargo build` could not start (`cargo` is not installed)"
            )),
            retry_in: Duration::ZERO,
            handed_over_at: None,
            updated_at: chrono::Utc::now(),
        };
        let text = hand_over_comment(
            &attempts,
            &AttemptPolicy::new(3, Duration::from_mins(1)),
            Job::Review,
        );
        assert!(
            text.contains("**The bot cannot build this repository**"),
            "{text}"
        );
        assert!(text.contains("`cargo` is not installed"), "{text}");
        assert!(text.contains("not the pull request's doing"), "{text}");
    }

    #[test]
    fn the_hand_over_comment_says_what_failed_and_how_to_hand_it_back() {
        let attempts = JobAttempts {
            repository: "acme/widgets".to_owned(),
            pull_request: 7,
            kind: JobKind::Review,
            head_sha: "0123456789abcdef0123".to_owned(),
            failures: 3,
            last_error: Some("the detailed pass failed:\nthe model\nanswered 500".to_owned()),
            retry_in: Duration::ZERO,
            handed_over_at: None,
            updated_at: chrono::Utc::now(),
        };
        let text = hand_over_comment(
            &attempts,
            &AttemptPolicy::new(3, Duration::from_mins(1)),
            Job::Review,
        );
        for expected in [
            "3 failed attempts",
            "review this pull request at `0123456789ab`",
            "`agent.max_attempts`",
            "the detailed pass failed: the model answered 500",
            "replace `bot-human-intervention` with `bot-review-needed`",
        ] {
            assert!(text.contains(expected), "{expected}: {text}");
        }
    }
}
