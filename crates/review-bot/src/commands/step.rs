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
//! could be), 2 on bad usage or configuration. Should a pull request carry
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

use super::review::{Parts, StepPrinter, parse_target, report};
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
        // Boxed: the review and write flows make a large future.
        let outcome = Box::pin(step(&reviewer, &repository, number, &settings, &progress)).await;
        printer.finish();
        reviewer.store.close().await;
        anyhow::Ok(conclude(outcome?, &target, started.elapsed()))
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
pub(crate) fn conclude(stepped: Stepped, target: &str, wall: Duration) -> ExitCode {
    match stepped {
        Stepped::Nothing(reason) => {
            eprintln!("nothing to do: {target} {reason}");
            ExitCode::SUCCESS
        }
        Stepped::Review(outcome) => report(outcome, target, wall),
        Stepped::Ci(Ok(summary)) => {
            eprintln!("{}", ci_line(&summary, wall));
            ExitCode::SUCCESS
        }
        Stepped::Ci(Err(error)) => {
            eprintln!("error: {error}");
            eprintln!(
                "CI not checked · label unchanged · wall {:.1} s",
                wall.as_secs_f64()
            );
            ExitCode::from(1)
        }
        Stepped::Write(outcome) => write_report(outcome, wall),
    }
}

/// What one step did.
pub(crate) enum Stepped {
    Nothing(String),
    Review(Result<review_pipeline::ReviewReport, review_pipeline::ReviewFailure>),
    Ci(Result<CiSummary, review_pipeline::ci::CiError>),
    Write(Result<WriteReport, review_pipeline::write::WriteFailure>),
}

/// One step of the loop for `repository#number`: reads its labels and runs
/// the job they call for. `review-bot step` and each of the daemon's jobs.
pub(crate) async fn step(
    reviewer: &Reviewer,
    repository: &review_github::RepositoryName,
    number: u64,
    settings: &StepSettings,
    progress: &review_pipeline::Progress,
) -> anyhow::Result<Stepped> {
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
        return Ok(Stepped::Nothing(format!(
            "is {}",
            if pull_request.merged {
                "merged"
            } else {
                "closed"
            }
        )));
    }
    let job = match route(&pull_request.labels) {
        Route::Nothing(reason) => {
            step.done("no trigger label");
            return Ok(Stepped::Nothing(reason));
        }
        Route::Job(job) => job,
    };
    step.done(format!("{} → {}", job.trigger(), job_name(job)));
    Ok(match job {
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
    })
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
) -> ExitCode {
    match outcome {
        Ok(report) => {
            eprintln!("{}", report.summary_line(wall));
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!("error: {}", failure.error);
            match &failure.reported {
                Some(url) => eprintln!("reported on the pull request: {url}"),
                None => eprintln!("the failure could not be reported on the pull request"),
            }
            eprintln!("{}", failure.summary.summary_line(wall));
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
