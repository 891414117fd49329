//! The CI check (`bot-ci-pending`; DESIGN.md "The flows → CI"): one look at
//! the head commit's check runs and commit statuses, and the label that
//! follows from them. No agent, no checkout.
//!
//! - Check runs and statuses are read in parallel, every page
//!   (`review_github::GitHubClient::ci_report`). GitHub's combined status is
//!   not used: it is `pending` for a repository with no statuses at all, so a
//!   checks-only repository would never pass.
//! - Verdict ([`verdict`], a pure function): any failed check run (conclusion
//!   `failure`, `cancelled`, `timed_out`, `action_required`, `stale`) or
//!   status (latest per context `failure` or `error`) → failed; otherwise any
//!   check run not completed or status `pending` → pending; otherwise passed,
//!   and "nothing at all" (no CI configured) is passed too.
//! - Passed → `bot-review-needed`. Failed → one comment naming each failed
//!   check or context with its link, then `bot-changes-needed`. Pending →
//!   nothing, unless the head commit's committer date is older than
//!   `ci.timeout_secs` (read from GitHub, so the timeout survives restarts):
//!   then the same as failed, with a comment saying CI timed out.
//! - The comment is idempotent: its `thread::` id is derived from the
//!   repository, pull request and head SHA (UUID v5), and a bot comment with
//!   that id already on the pull request is not posted again — a rerun after
//!   a crash between the comment and the label posts nothing twice. Its
//!   footer follows the bot's latest review (`Footer::after_review`), so it
//!   does not count as a review cycle.

use std::fmt::Write as _;
use std::time::Duration;

use chrono::{DateTime, Utc};
use review_core::footer::{self, Footer, ReviewId, ThreadId};
use review_core::labels::{self, Outcome};
use review_core::payload::{inline_code, single_line};
use review_github::{CiReport, GitHubClient, GitHubError, PullRequest, RepositoryName};
use uuid::Uuid;

use crate::progress::Progress;

/// The namespace of the CI comments' `thread::` ids (UUID v5).
const CI_THREAD_NAMESPACE: Uuid = Uuid::from_u128(0x6f1c_2d0e_8a43_4f5b_9c1e_7d2a_5b3c_4e01);

/// What the CI check needs besides GitHub.
#[derive(Debug, Clone)]
pub struct CiRequest {
    /// The repository.
    pub repository: RepositoryName,
    /// The pull request, as read at the start of the step (labels, head SHA).
    pub pull_request: PullRequest,
    /// How long CI may stay pending, from the head commit's date.
    pub timeout: Duration,
    /// The bot's login: only its comments and reviews are its own.
    pub bot_login: Option<String>,
}

/// One check run or status context that did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedCheck {
    /// The check run's name or the status's context.
    pub name: String,
    /// `check run` or `status`.
    pub kind: &'static str,
    /// The conclusion or state (`failure`, `timed_out`, `error`, …).
    pub conclusion: String,
    /// Where to read about it.
    pub link: Option<String>,
}

/// What the check runs and statuses say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CiVerdict {
    /// Everything passed (or nothing is configured: `checks == 0`).
    Passed {
        /// How many check runs and status contexts passed.
        checks: usize,
    },
    /// At least one failed.
    Failed(Vec<FailedCheck>),
    /// Nothing failed, something is still running.
    Pending {
        /// The names still running.
        running: Vec<String>,
    },
}

/// How the CI check ended.
#[derive(Debug, Clone, PartialEq)]
pub struct CiSummary {
    /// The head commit looked at.
    pub head_sha: String,
    /// The label outcome (`CiPassed`, `CiFailed`, `CiTimedOut`, `CiPending`).
    pub outcome: Outcome,
    /// What the checks said.
    pub verdict: CiVerdict,
    /// The comment's page, when one was posted (or found from an earlier run).
    pub comment_url: Option<String>,
    /// True when the comment was already there and not posted again.
    pub comment_existed: bool,
    /// The bot label afterwards (`None`: unchanged).
    pub label: Option<String>,
    /// How long CI has been pending, when it is.
    pub pending_for: Option<Duration>,
}

/// Why the CI check failed.
#[derive(Debug, thiserror::Error)]
pub enum CiError {
    /// GitHub failed (after retries).
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    /// The head commit has no date to measure the timeout from.
    #[error(
        "GitHub gives no committer date for the head commit {sha}, so the CI timeout cannot be \
         measured; check the commit on GitHub and move the label by hand"
    )]
    NoCommitDate {
        /// The head commit.
        sha: String,
    },
}

/// The verdict of a commit's check runs and statuses.
pub fn verdict(report: &CiReport) -> CiVerdict {
    let mut failed = Vec::new();
    let mut running = Vec::new();
    let mut passed = 0;
    for run in &report.check_runs {
        if run.status != "completed" {
            running.push(run.name.clone());
            continue;
        }
        match run.conclusion.as_deref() {
            Some("success" | "neutral" | "skipped") => passed += 1,
            conclusion => failed.push(FailedCheck {
                name: run.name.clone(),
                kind: "check run",
                conclusion: conclusion.unwrap_or("unknown").to_owned(),
                // The CI system's own page (its logs) first, GitHub's page else.
                link: run.details_url.clone().or_else(|| run.html_url.clone()),
            }),
        }
    }
    // The latest status per context wins; GitHub lists them newest first,
    // but order by date anyway.
    let mut statuses: Vec<&review_github::CommitStatus> = report.statuses.iter().collect();
    statuses.sort_by_key(|status| std::cmp::Reverse(status.created_at));
    let mut seen = std::collections::HashSet::new();
    for status in statuses {
        if !seen.insert(status.context.as_str()) {
            continue;
        }
        match status.state.as_str() {
            "success" => passed += 1,
            "pending" => running.push(status.context.clone()),
            state => failed.push(FailedCheck {
                name: status.context.clone(),
                kind: "status",
                conclusion: state.to_owned(),
                link: status.target_url.clone(),
            }),
        }
    }
    if !failed.is_empty() {
        CiVerdict::Failed(failed)
    } else if !running.is_empty() {
        CiVerdict::Pending { running }
    } else {
        CiVerdict::Passed { checks: passed }
    }
}

/// The `thread::` id of the CI comment for this head commit.
pub fn ci_thread_id(repository: &RepositoryName, number: u64, head_sha: &str) -> ThreadId {
    ThreadId(Uuid::new_v5(
        &CI_THREAD_NAMESPACE,
        format!("ci:{repository}#{number}@{head_sha}").as_bytes(),
    ))
}

/// The comment for failed checks (`timed_out_after` set: CI timed out).
pub fn failure_comment(
    head_sha: &str,
    failed: &[FailedCheck],
    running: &[String],
    timed_out_after: Option<Duration>,
    footer: &Footer,
) -> String {
    let mut text = String::new();
    let short = head_sha.get(..12).unwrap_or(head_sha);
    if let Some(after) = timed_out_after {
        let _ = write!(
            text,
            "### ⏱️ CI timed out on {}\n\nCI has been pending for {} since the head commit was \
             made, longer than the bot waits (`ci.timeout_secs`), so it is treated as failed \
             and the bot will try to fix the pull request.\n",
            inline_code(short),
            human_duration(after)
        );
        if !running.is_empty() {
            text.push_str("\nStill pending:\n\n");
            for name in running {
                let _ = writeln!(text, "- {}", inline_code(&single_line(name)));
            }
        }
    } else {
        let _ = write!(
            text,
            "### ❌ CI failed on {}\n\nThese checks did not pass:\n\n",
            inline_code(short)
        );
        for check in failed {
            let name = inline_code(&single_line(&check.name));
            let link = match check.link.as_deref().filter(|link| is_web_link(link)) {
                Some(link) => format!(" — [details]({link})"),
                None => String::new(),
            };
            let _ = writeln!(
                text,
                "- {name} ({}: {}){link}",
                check.kind,
                footer::defuse(&single_line(&check.conclusion))
            );
        }
        text.push_str("\nThe bot will try to fix them.\n");
    }
    review_core::payload::with_footer(&text, &footer.render())
}

/// A link we are willing to render: http(s), no spaces or markdown-closing characters.
fn is_web_link(link: &str) -> bool {
    (link.starts_with("https://") || link.starts_with("http://"))
        && !link
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '(' | ')' | '<' | '>'))
}

fn human_duration(duration: Duration) -> String {
    let minutes = duration.as_secs() / 60;
    if minutes >= 120 {
        format!("{} h {} min", minutes / 60, minutes % 60)
    } else if minutes >= 1 {
        format!("{minutes} min")
    } else {
        format!("{} s", duration.as_secs())
    }
}

/// Checks CI once (see the module documentation).
pub async fn check(
    github: &GitHubClient,
    request: &CiRequest,
    progress: &Progress,
) -> Result<CiSummary, CiError> {
    let repository = &request.repository;
    let pull = &request.pull_request;
    let head_sha = pull.head_sha.clone();

    let step = progress.step("CI status");
    let report = match github.ci_report(repository, &head_sha).await {
        Ok(report) => report,
        Err(error) => {
            step.failed(error.to_string());
            return Err(error.into());
        }
    };
    let found = verdict(&report);
    step.done(match &found {
        CiVerdict::Passed { checks: 0 } => "no CI configured".to_owned(),
        CiVerdict::Passed { checks } => format!("{checks} passed"),
        CiVerdict::Failed(failed) => format!("{} failed", failed.len()),
        CiVerdict::Pending { running } => format!("{} pending", running.len()),
    });

    let mut summary = CiSummary {
        head_sha: head_sha.clone(),
        outcome: Outcome::CiPending,
        verdict: found.clone(),
        comment_url: None,
        comment_existed: false,
        label: None,
        pending_for: None,
    };
    let mut timed_out_after = None;
    match &found {
        CiVerdict::Passed { .. } => summary.outcome = Outcome::CiPassed,
        CiVerdict::Failed(_) => summary.outcome = Outcome::CiFailed,
        CiVerdict::Pending { .. } => {
            let step = progress.step("CI timeout");
            let commit = match github.get_commit(repository, &head_sha).await {
                Ok(commit) => commit,
                Err(error) => {
                    step.failed(error.to_string());
                    return Err(error.into());
                }
            };
            let Some(date) = commit.committed_at.or(commit.authored_at) else {
                step.failed("no commit date");
                return Err(CiError::NoCommitDate { sha: head_sha });
            };
            let pending_for = elapsed_since(date, Utc::now());
            summary.pending_for = Some(pending_for);
            if pending_for > request.timeout {
                step.done(format!(
                    "pending for {}, past the {} limit: timed out",
                    human_duration(pending_for),
                    human_duration(request.timeout)
                ));
                summary.outcome = Outcome::CiTimedOut;
                timed_out_after = Some(pending_for);
            } else {
                step.done(format!(
                    "pending for {} of {}; looking again at the next step",
                    human_duration(pending_for),
                    human_duration(request.timeout)
                ));
                return Ok(summary);
            }
        }
    }

    if matches!(summary.outcome, Outcome::CiFailed | Outcome::CiTimedOut) {
        let step = progress.step("CI comment");
        match post_comment(github, request, &found, timed_out_after).await {
            Ok((url, existed)) => {
                step.done(if existed {
                    format!("already posted: {url}")
                } else {
                    url.clone()
                });
                summary.comment_url = Some(url);
                summary.comment_existed = existed;
            }
            Err(error) => {
                step.failed(error.to_string());
                return Err(error.into());
            }
        }
    }
    summary.label = set_outcome_label(github, repository, pull, summary.outcome, progress).await?;
    Ok(summary)
}

/// How long ago `date` was (zero for a date in the future: a skewed clock).
fn elapsed_since(date: DateTime<Utc>, now: DateTime<Utc>) -> Duration {
    (now - date).to_std().unwrap_or(Duration::ZERO)
}

/// Posts the CI comment unless the bot already posted it for this head.
async fn post_comment(
    github: &GitHubClient,
    request: &CiRequest,
    found: &CiVerdict,
    timed_out_after: Option<Duration>,
) -> Result<(String, bool), GitHubError> {
    let repository = &request.repository;
    let number = request.pull_request.number;
    let thread = ci_thread_id(repository, number, &request.pull_request.head_sha);
    let bot = BotComments::read(github, repository, number, request.bot_login.as_deref()).await?;
    if let Some(url) = bot.comment_with_thread(thread) {
        return Ok((url, true));
    }
    let (failed, running) = match found {
        CiVerdict::Failed(failed) => (failed.as_slice(), &[][..]),
        CiVerdict::Pending { running } => (&[][..], running.as_slice()),
        CiVerdict::Passed { .. } => (&[][..], &[][..]),
    };
    let body = failure_comment(
        &request.pull_request.head_sha,
        failed,
        running,
        timed_out_after,
        &Footer::after_review(bot.latest_review, thread),
    );
    let posted = github
        .create_issue_comment(repository, number, &body, Some(thread))
        .await?;
    Ok((posted.item.html_url, posted.already_existed))
}

/// The bot's own reviews and conversation comments on a pull request: the
/// latest review's id (for footers), every review id (the cycle count) and
/// the comments' `thread::` ids (so nothing is posted twice).
#[derive(Debug, Clone, Default)]
pub struct BotComments {
    /// The latest review's id, `None` before the first review.
    pub latest_review: Option<ReviewId>,
    /// Distinct review ids in the bot's reviews, review comments and
    /// conversation comments: the review cycles so far.
    pub cycles: usize,
    /// `(thread id, page)` of the bot's conversation comments.
    threads: Vec<(ThreadId, String)>,
}

impl BotComments {
    /// Reads the pull request's reviews and conversation comments (and review
    /// comments, for the cycle count). Without the bot's login nothing is
    /// trusted as the bot's: no review id, no cycles, no thread.
    pub async fn read(
        github: &GitHubClient,
        repository: &RepositoryName,
        number: u64,
        bot_login: Option<&str>,
    ) -> Result<Self, GitHubError> {
        let (reviews, review_comments, issue_comments) = tokio::try_join!(
            github.list_reviews(repository, number),
            github.list_review_comments(repository, number),
            github.list_issue_comments(repository, number),
        )?;
        Ok(Self::from_lists(
            bot_login,
            &reviews,
            &review_comments,
            &issue_comments,
        ))
    }

    /// The same from lists already read.
    pub fn from_lists(
        bot_login: Option<&str>,
        reviews: &[review_github::Review],
        review_comments: &[review_github::ReviewComment],
        issue_comments: &[review_github::IssueComment],
    ) -> Self {
        let Some(bot) = bot_login else {
            return Self::default();
        };
        let mine = |author: Option<&str>| {
            author.is_some_and(|author| review_core::snapshot::is_bot_login(bot, author))
        };
        let latest_review = footer::latest_review_id(
            reviews
                .iter()
                .filter(|review| mine(review.author_login.as_deref()))
                .map(|review| review.body.as_str()),
        );
        let cycles = review_core::snapshot::review_cycles(
            bot,
            reviews
                .iter()
                .map(|review| {
                    (
                        review.author_login.as_deref().unwrap_or(""),
                        review.body.as_str(),
                    )
                })
                .chain(review_comments.iter().map(|comment| {
                    (
                        comment.author_login.as_deref().unwrap_or(""),
                        comment.body.as_str(),
                    )
                }))
                .chain(issue_comments.iter().map(|comment| {
                    (
                        comment.author_login.as_deref().unwrap_or(""),
                        comment.body.as_str(),
                    )
                })),
        )
        .len();
        let threads = issue_comments
            .iter()
            .filter(|comment| mine(comment.author_login.as_deref()))
            .filter_map(|comment| {
                footer::own_footer(&comment.body)
                    .thread
                    .map(|thread| (thread, comment.html_url.clone()))
            })
            .collect();
        Self {
            latest_review,
            cycles,
            threads,
        }
    }

    /// The page of the bot's conversation comment with this `thread::` id.
    pub fn comment_with_thread(&self, thread: ThreadId) -> Option<String> {
        self.threads
            .iter()
            .find(|(id, _)| *id == thread)
            .map(|(_, url)| url.clone())
    }
}

/// Makes `outcome`'s label the pull request's only bot label, from the
/// labels it had when the step read it. Returns the label set, `None` when
/// the outcome keeps the labels.
pub(crate) async fn set_outcome_label(
    github: &GitHubClient,
    repository: &RepositoryName,
    pull: &PullRequest,
    outcome: Outcome,
    progress: &Progress,
) -> Result<Option<String>, GitHubError> {
    let Some(target) = outcome.next_label() else {
        return Ok(None);
    };
    set_bot_label(github, repository, pull, target, progress)
        .await
        .map(Some)
}

/// Applies a label change: the new bot label is added BEFORE the others are
/// removed. Stopped in between (a crash, a failed request), the pull request
/// carries the old trigger and the new label, and the next step — routed by
/// the first trigger in the loop's order — finishes the job that was under
/// way and removes the extra label; removed first, it would carry no bot
/// label at all, and no poll would ever find it again. A label removed since
/// it was read (404) is what was wanted.
pub(crate) async fn apply_label_change(
    github: &GitHubClient,
    repository: &RepositoryName,
    number: u64,
    change: &labels::LabelChange,
) -> Result<(), GitHubError> {
    if let Some(label) = change.add {
        github
            .add_labels(repository, number, &[label.name().to_owned()])
            .await?;
    }
    for name in &change.remove {
        match github.remove_label(repository, number, name).await {
            Ok(_) | Err(GitHubError::NotFound { .. }) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Makes `target` the pull request's only bot label, from the labels it had
/// when the step read it (a label removed since is fine). Returns its name.
pub(crate) async fn set_bot_label(
    github: &GitHubClient,
    repository: &RepositoryName,
    pull: &PullRequest,
    target: labels::Label,
    progress: &Progress,
) -> Result<String, GitHubError> {
    let step = progress.step("labels");
    let change = labels::set_label(&pull.labels, target);
    match apply_label_change(github, repository, pull.number, &change).await {
        Ok(()) => {
            step.done(if change.is_empty() {
                format!("{target} (already set)")
            } else {
                target.name().to_owned()
            });
            Ok(target.name().to_owned())
        }
        Err(error) => {
            step.failed(error.to_string());
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use review_github::{CheckRun, CommitStatus};

    fn run(name: &str, status: &str, conclusion: Option<&str>) -> CheckRun {
        CheckRun {
            name: name.to_owned(),
            status: status.to_owned(),
            conclusion: conclusion.map(str::to_owned),
            details_url: Some(format!("https://ci.example.com/{name}")),
            html_url: None,
        }
    }

    fn status(context: &str, state: &str, seconds: i64) -> CommitStatus {
        CommitStatus {
            context: context.to_owned(),
            state: state.to_owned(),
            target_url: Some(format!("https://ci.example.com/{context}")),
            description: None,
            created_at: DateTime::from_timestamp(1_700_000_000 + seconds, 0).unwrap(),
        }
    }

    #[test]
    fn no_ci_at_all_passes_and_checks_only_or_statuses_only_decide_alone() {
        assert_eq!(
            verdict(&CiReport::default()),
            CiVerdict::Passed { checks: 0 }
        );
        let checks_only = CiReport {
            check_runs: vec![run("build", "completed", Some("success"))],
            statuses: vec![],
        };
        assert_eq!(verdict(&checks_only), CiVerdict::Passed { checks: 1 });
        let statuses_only = CiReport {
            check_runs: vec![],
            statuses: vec![status("ci/test", "success", 0)],
        };
        assert_eq!(verdict(&statuses_only), CiVerdict::Passed { checks: 1 });
    }

    #[test]
    fn a_failure_wins_over_pending_and_the_latest_status_per_context_counts() {
        let report = CiReport {
            check_runs: vec![
                run("lint", "in_progress", None),
                run("build", "completed", Some("timed_out")),
                run("docs", "completed", Some("skipped")),
            ],
            statuses: vec![
                status("ci/test", "failure", 0),
                status("ci/test", "success", 10),
                status("deploy", "error", 5),
            ],
        };
        let CiVerdict::Failed(failed) = verdict(&report) else {
            panic!("failed expected");
        };
        let names: Vec<&str> = failed.iter().map(|check| check.name.as_str()).collect();
        assert_eq!(names, ["build", "deploy"]);
        let pending = CiReport {
            check_runs: vec![run("lint", "queued", None)],
            statuses: vec![status("ci/test", "success", 0)],
        };
        assert_eq!(
            verdict(&pending),
            CiVerdict::Pending {
                running: vec!["lint".to_owned()]
            }
        );
    }

    #[test]
    fn the_comment_names_each_failed_check_with_its_link_and_defuses_names() {
        let repository = RepositoryName::parse("acme/widgets").unwrap();
        let thread = ci_thread_id(&repository, 3, "abc");
        assert_eq!(thread, ci_thread_id(&repository, 3, "abc"));
        assert_ne!(thread, ci_thread_id(&repository, 3, "abd"));
        let body = failure_comment(
            "0123456789abcdef",
            &[
                FailedCheck {
                    name: "build review::00000000-0000-0000-0000-000000000000".to_owned(),
                    kind: "check run",
                    conclusion: "failure".to_owned(),
                    link: Some("https://ci.example.com/1".to_owned()),
                },
                FailedCheck {
                    name: "evil".to_owned(),
                    kind: "status",
                    conclusion: "error".to_owned(),
                    link: Some("javascript:alert(1)".to_owned()),
                },
            ],
            &[],
            None,
            &Footer::after_review(None, thread),
        );
        assert!(
            body.contains("[details](https://ci.example.com/1)"),
            "{body}"
        );
        assert!(!body.contains("javascript:"), "{body}");
        assert_eq!(footer::own_footer(&body).thread, Some(thread));
        assert_eq!(footer::own_footer(&body).review, None);
        assert!(footer::review_ids(&body).is_empty(), "{body}");
        let timed_out = failure_comment(
            "0123456789abcdef",
            &[],
            &["lint".to_owned()],
            Some(Duration::from_secs(7_300)),
            &Footer::after_review(None, thread),
        );
        assert!(timed_out.contains("timed out"), "{timed_out}");
        assert!(timed_out.contains("2 h 1 min"), "{timed_out}");
    }
}
