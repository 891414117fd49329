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
//! Glue only: the step itself (reading, routing, the lease, the job) is
//! `review_pipeline::step`; this prints its outcome, sharing `review`'s
//! configuration, clients, progress printer and exit codes: 0 when the step completed (whatever it found, or nothing
//! to do), 1 when it ended on an error (reported on the pull request when it
//! could be), 2 on bad usage or configuration, 3 when a build command could
//! not start on the bot's machine (see `review`). Should a pull request carry
//! several trigger labels, the first in the loop's order (review, changes,
//! CI) runs; the step's label change removes the others.

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use review_core::labels;
use review_pipeline::ci::{CiSummary, CiVerdict};
use review_pipeline::step::{StepReport, StepRequest, StepSettings, Stepped};
use review_pipeline::write::{WriteReport, WriteSettings};

use super::review::{Parts, StepPrinter, busy, lease_lost, parse_target, report, say};
use crate::config;

/// `review-bot step`'s arguments.
#[derive(Debug, Args)]
pub struct StepArgs {
    /// The pull request: `OWNER/REPO#NUMBER` (or its GitHub URL).
    #[arg(value_name = "OWNER/REPO#N")]
    pub pull_request: String,
}

/// Runs `step`.
pub fn run(args: &StepArgs, config_file: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let (repository, number) = parse_target(&args.pull_request)?;
    let loaded = config::load(config_file)?;
    let parts = Parts::resolve(loaded)?;
    let settings = step_settings(&parts.config);
    let target = format!("{repository}#{number}");
    let interactive = std::io::stderr().is_terminal();
    let started = Instant::now();
    super::block_on(async move {
        let reviewer = parts.reviewer(&repository).await?;
        let printer = StepPrinter::new(interactive);
        let progress = printer.progress();
        // Under the pull request's lease, as a daemon's job: never at the
        // same time as a daemon working on it. No attempt gate: a person
        // running a step by hand asks for it now.
        let request = StepRequest {
            repository,
            number,
            lease: true,
            attempts: None,
        };
        let outcome = review_pipeline::step::step(&reviewer, &settings, &request, &progress).await;
        printer.finish();
        reviewer.store.close().await;
        match outcome {
            Ok(StepReport::Stepped { stepped, .. }) => {
                anyhow::Ok(conclude(stepped, &target, started.elapsed(), ""))
            }
            Ok(StepReport::Busy(lease)) => {
                say(
                    "",
                    format_args!("error: {:#}", busy(&target, lease.as_ref())),
                );
                anyhow::Ok(ExitCode::from(1))
            }
            Ok(StepReport::LeaseLost) => {
                say("", format_args!("error: {:#}", lease_lost(&target)));
                anyhow::Ok(ExitCode::from(1))
            }
            Ok(gated @ (StepReport::Waiting { .. } | StepReport::HandedOver(_))) => {
                say("", format_args!("{}", gate_line(&gated)));
                anyhow::Ok(ExitCode::SUCCESS)
            }
            Err(error) => {
                say("", format_args!("error: {error}"));
                anyhow::Ok(ExitCode::from(1))
            }
        }
    })?
}

/// The step's settings from the configuration.
pub(crate) fn step_settings(config: &config::Config) -> StepSettings {
    StepSettings {
        ci_timeout: Duration::from_secs(config.ci.timeout_secs),
        write: WriteSettings {
            max_cycles: config.review.max_cycles,
            author_name: config.git.author_name.clone(),
            author_email: config.git.author_email.clone(),
        },
    }
}

/// What the attempt gate did instead of the job (`Waiting`, `HandedOver`).
pub(crate) fn gate_line(report: &StepReport) -> String {
    match report {
        StepReport::Waiting {
            failures,
            retry_in,
            head,
        } => format!(
            "{failures} failed attempt{} at {head}; the next is due in {} s",
            if *failures == 1 { "" } else { "s" },
            retry_in.as_secs().max(1)
        ),
        StepReport::HandedOver(url) => format!("handed to a human: {url}"),
        StepReport::Stepped { .. } | StepReport::Busy(_) | StepReport::LeaseLost => String::new(),
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
