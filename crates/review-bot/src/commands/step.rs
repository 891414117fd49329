//! `review-bot step OWNER/REPO#N`: advances one pull request by one step of
//! the loop, chosen by its bot label — exactly what the daemon runs per
//! pull request it finds.
//!
//! - `bot-review-needed` → the review flow (as `review-bot review`);
//! - `bot-changes-needed` → the write flow (fix, build, commit, push);
//! - `bot-ci-pending` → the CI check;
//! - no bot label, `human-review-needed` or `bot-human-intervention`, or a
//!   closed pull request → "nothing to do".
//!
//! Glue only, sharing `review`'s configuration, clients, progress printer
//! and exit codes: 0 when the step completed (whatever it found, or nothing
//! to do), 1 when it ended on an error (reported on the pull request when it
//! could be), 2 on bad usage or configuration, 3 when a build command could
//! not start on the bot's machine (see `review`). Should a pull request carry
//! several trigger labels, the first in the loop's order (review, changes,
//! CI) runs; the step's label change removes the others.

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use review_core::labels::{self, Job, Label};
use review_github::PullRequestState;
use review_pipeline::ci::{CiRequest, CiSummary, CiVerdict};
use review_pipeline::write::{WriteReport, WriteRequest, WriteSettings};
use review_pipeline::{ReviewRequest, Reviewer};

use review_pipeline::daemon::scheduler::{Leased, run_leased};

use super::review::{Parts, StepPrinter, busy, lease_lost, parse_target, report, say};
use crate::config;

/// `review-bot step`'s arguments.
#[derive(Debug, Args)]
pub struct StepArgs {
    /// The pull request: `OWNER/REPO#NUMBER` (or its GitHub URL).
    #[arg(value_name = "OWNER/REPO#N")]
    pub pull_request: String,
}

/// What the step found to do.
enum Route {
    Nothing(String),
    Job(Job),
}

/// The job the pull request's labels call for.
fn route(current: &[String]) -> Route {
    let managed = labels::managed_labels(current);
    match Label::TRIGGERS
        .into_iter()
        .find(|trigger| managed.contains(trigger))
    {
        Some(trigger) => Route::Job(trigger.job().expect("a trigger label starts a job")),
        None => Route::Nothing(match managed.first() {
            Some(label) => format!("it is labelled `{label}`, which hands it to a human"),
            None => format!(
                "it has no bot label (one of {})",
                Label::TRIGGERS.map(Label::name).join(", ")
            ),
        }),
    }
}

/// Runs `step`.
pub fn run(args: &StepArgs, config_file: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let (repository, number) = parse_target(&args.pull_request)?;
    let loaded = config::load(config_file)?;
    let parts = Parts::resolve(loaded)?;
    let settings = StepSettings::new(&parts.config);
    let target = format!("{repository}#{number}");
    let interactive = std::io::stderr().is_terminal();
    let started = Instant::now();
    super::block_on(async move {
        let reviewer = parts.reviewer(&repository).await?;
        let printer = StepPrinter::new(interactive);
        let progress = printer.progress();
        let routed = read(&reviewer, &repository, number, &progress).await;
        let outcome = match routed {
            Ok(Routed::Nothing(reason)) => Ok(Stepped::Nothing(reason)),
            Ok(Routed::Job { pull_request, job }) => {
                // Under the pull request's lease, as a daemon's job: never at
                // the same time as a daemon working on it.
                let leased = run_leased(
                    &reviewer.store,
                    &repository.to_string(),
                    number,
                    review_pipeline::daemon::attempts::job_kind(job),
                    // Boxed: the review and write flows make a large future.
                    Box::pin(run_job(
                        &reviewer,
                        &repository,
                        *pull_request,
                        job,
                        &settings,
                        &progress,
                    )),
                )
                .await;
                match leased {
                    Ok(Leased::Ran(stepped)) => Ok(stepped),
                    Ok(Leased::Busy(lease)) => Err(busy(&target, lease.as_ref())),
                    Ok(Leased::LeaseLost) => Err(lease_lost(&target)),
                    Err(error) => Err(anyhow::Error::new(error)
                        .context(format!("could not claim {target} in the store"))),
                }
            }
            Err(error) => Err(error),
        };
        printer.finish();
        reviewer.store.close().await;
        match outcome {
            Ok(stepped) => anyhow::Ok(conclude(stepped, &target, started.elapsed(), "")),
            Err(error) => {
                say("", format_args!("error: {error:#}"));
                anyhow::Ok(ExitCode::from(1))
            }
        }
    })?
}

/// What a step needs from the configuration besides the reviewer.
#[derive(Debug, Clone)]
pub(crate) struct StepSettings {
    ci_timeout: Duration,
    write: WriteSettings,
}

impl StepSettings {
    pub(crate) fn new(config: &config::Config) -> Self {
        Self {
            ci_timeout: Duration::from_secs(config.ci.timeout_secs),
            write: WriteSettings {
                max_cycles: config.review.max_cycles,
                author_name: config.git.author_name.clone(),
                author_email: config.git.author_email.clone(),
            },
        }
    }
}

/// Prints what the step did and chooses the exit code: `step`'s and, per
/// job, the daemon's verdict.
pub(crate) fn conclude(stepped: Stepped, target: &str, wall: Duration, prefix: &str) -> ExitCode {
    match stepped {
        Stepped::Nothing(reason) => {
            say(prefix, format_args!("nothing to do: {target} {reason}"));
            ExitCode::SUCCESS
        }
        Stepped::Review(outcome) => report(outcome, target, wall, prefix),
        Stepped::Ci(Ok(summary)) => {
            say(prefix, format_args!("{}", ci_line(&summary, wall)));
            ExitCode::SUCCESS
        }
        Stepped::Ci(Err(error)) => {
            say(prefix, format_args!("error: {error}"));
            say(
                prefix,
                format_args!(
                    "CI not checked · label unchanged · wall {:.1} s",
                    wall.as_secs_f64()
                ),
            );
            ExitCode::from(1)
        }
        Stepped::Write(outcome) => write_report(outcome, wall, prefix),
    }
}

/// What one step did.
pub(crate) enum Stepped {
    Nothing(String),
    Review(Result<review_pipeline::ReviewReport, review_pipeline::ReviewFailure>),
    Ci(Result<CiSummary, review_pipeline::ci::CiError>),
    Write(Result<WriteReport, review_pipeline::write::WriteFailure>),
}

impl Stepped {
    /// What failed, in one sentence fit for the pull request; `None` when
    /// the step did its job. A fix that pushed nothing (no change, a failed
    /// build, conflicts left) completed as a step but failed as an attempt:
    /// left alone, every poll would try it again.
    pub(crate) fn public_error(&self) -> Option<String> {
        match self {
            Self::Write(Ok(WriteReport {
                outcome: Some(review_pipeline::write::WriteOutcome::NotFixed { why }),
                ..
            })) => Some(format!("the fix was not pushed: {why}")),
            Self::Nothing(_) | Self::Review(Ok(_)) | Self::Ci(Ok(_)) | Self::Write(Ok(_)) => None,
            Self::Review(Err(failure)) => Some(failure.error.public_summary()),
            Self::Write(Err(failure)) => Some(failure.error.public_summary()),
            Self::Ci(Err(error)) => Some(error.to_string()),
        }
    }

    /// What the agent cost (US dollars) and how many turns it took.
    pub(crate) fn agent_spend(&self) -> (f64, u32) {
        use review_pipeline::ReviewReport;
        match self {
            Self::Review(
                Ok(ReviewReport::Completed(summary) | ReviewReport::DryRun { summary, .. })
                | Err(review_pipeline::ReviewFailure { summary, .. }),
            ) => (summary.agent_cost_usd, summary.agent_turns),
            Self::Write(
                Ok(summary) | Err(review_pipeline::write::WriteFailure { summary, .. }),
            ) => (summary.agent_cost_usd, summary.agent_turns),
            _ => (0.0, 0),
        }
    }
}

/// What the pull request's state and labels call for.
pub(crate) enum Routed {
    /// Nothing (closed, or no trigger label), and why.
    Nothing(String),
    /// `job`, on the pull request as read.
    Job {
        pull_request: Box<review_github::PullRequest>,
        job: Job,
    },
}

/// One step of the loop for `repository#number`, first half: reads the pull
/// request (a conditional request: free when unchanged) and routes it by its
/// labels. `review-bot step` then runs [`run_job`] under the pull request's
/// lease; the daemon, under its job's lease, with its attempt gate between.
pub(crate) async fn read(
    reviewer: &Reviewer,
    repository: &review_github::RepositoryName,
    number: u64,
    progress: &review_pipeline::Progress,
) -> anyhow::Result<Routed> {
    let step = progress.step("labels");
    let pull_request = match reviewer.github.get_pull_request(repository, number).await {
        Ok(pull_request) => pull_request,
        Err(error) => {
            step.failed(error.to_string());
            return Err(error).with_context(|| format!("could not read {repository}#{number}"));
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
pub(crate) async fn run_job(
    reviewer: &Reviewer,
    repository: &review_github::RepositoryName,
    pull_request: review_github::PullRequest,
    job: Job,
    settings: &StepSettings,
    progress: &review_pipeline::Progress,
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
                    },
                    progress,
                )
                .await,
        ),
        Job::CiCheck => Stepped::Ci(
            review_pipeline::ci::check(
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
            reviewer
                .write(
                    &WriteRequest {
                        repository: repository.clone(),
                        pull_request,
                        settings: settings.write.clone(),
                    },
                    progress,
                )
                .await,
        ),
    }
}

const fn job_name(job: Job) -> &'static str {
    match job {
        Job::Review => "review",
        Job::Write => "fix",
        Job::CiCheck => "CI check",
    }
}

/// The CI check's last line.
fn ci_line(summary: &CiSummary, wall: Duration) -> String {
    let verdict = match &summary.verdict {
        CiVerdict::Passed { checks: 0 } => "CI passed (none configured)".to_owned(),
        CiVerdict::Passed { checks } => format!("CI passed ({checks} checks)"),
        CiVerdict::Failed(failed) => format!(
            "CI failed: {}",
            failed
                .iter()
                .map(|check| check.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        CiVerdict::Pending { running } => match summary.outcome {
            labels::Outcome::CiTimedOut => {
                format!("CI timed out ({} pending)", running.len())
            }
            _ => format!("CI pending ({})", running.join(", ")),
        },
    };
    let mut parts = vec![verdict];
    if let Some(url) = &summary.comment_url {
        parts.push(if summary.comment_existed {
            format!("{url} (posted before)")
        } else {
            url.clone()
        });
    }
    parts.push(format!(
        "label {}",
        summary.label.as_deref().unwrap_or("unchanged")
    ));
    parts.push(format!("wall {:.1} s", wall.as_secs_f64()));
    parts.join(" · ")
}

/// Prints the write flow's outcome and chooses the exit code.
fn write_report(
    outcome: Result<WriteReport, review_pipeline::write::WriteFailure>,
    wall: Duration,
    prefix: &str,
) -> ExitCode {
    match outcome {
        Ok(report) => {
            say(prefix, format_args!("{}", report.summary_line(wall)));
            ExitCode::SUCCESS
        }
        Err(failure) => {
            say(prefix, format_args!("error: {}", failure.error));
            match &failure.reported {
                Some(url) => say(prefix, format_args!("reported on the pull request: {url}")),
                None => say(
                    prefix,
                    format_args!("the failure could not be reported on the pull request"),
                ),
            }
            say(
                prefix,
                format_args!("{}", failure.summary.summary_line(wall)),
            );
            ExitCode::from(1)
        }
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
