//! `review-bot review --local [--base REF] [--json] [PATH]`: the review flow
//! on a working tree's changes, at the developer's desk (review-pipeline's
//! `local`), with no GitHub and no store.
//!
//! Glue only: the configuration becomes a `LocalReviewer` (Claude Code and
//! its confinement, prompts, the build gate, the work directory, the default
//! review-panel socket); progress goes to standard error as for `review`;
//! the findings go to standard output as a table (`--json`: the findings
//! document, schema v1.0). Exit codes: 0 when the review completed (findings
//! or not, or nothing changed), 1 when the build failed or the agent or git
//! failed, 2 on bad usage or configuration (not a git working tree, an
//! unknown `--base`).

use std::fmt::Write as _;
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use review_agent::prompts::Prompts;
use review_core::findings::Findings;
use review_mcp::panel::Delivery;
use review_pipeline::build_gate::BuildGateSettings;
use review_pipeline::local::{
    LocalOutcome, LocalReport, LocalRequest, LocalReviewer, LocalSettings,
};
use review_pipeline::review::ReviewOutcome;

use super::review::{ReviewArgs, StepPrinter};
use crate::config;

/// Runs `review --local`.
pub fn run(args: &ReviewArgs, config_file: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let path = PathBuf::from(args.pull_request.as_deref().unwrap_or("."));
    let loaded = config::load(config_file)?;
    let mut reviewer = local_reviewer(&loaded.config)?;
    if let Some(repository) = &args.repository {
        let name = review_github::RepositoryName::parse(repository).map_err(|error| {
            anyhow::anyhow!("--repository: {error}; write OWNER/REPO, such as octo/widgets")
        })?;
        reviewer.settings.build_commands = loaded
            .config
            .operator_commands()
            .for_repository(&name.to_string())
            .cloned();
    }
    let request = LocalRequest {
        path,
        base: args.base.clone(),
        title: None,
        body: None,
    };
    let interactive = std::io::stderr().is_terminal();
    let started = Instant::now();
    let result = super::block_on(async move {
        let printer = StepPrinter::new(interactive);
        let result = reviewer.review(&request, &printer.progress()).await;
        printer.finish();
        result
    })?;
    let wall = started.elapsed();
    match result {
        Ok(report) => Ok(print_report(&report, args.json, wall)),
        Err(error) if error.is_usage() => Err(anyhow::anyhow!(error)),
        Err(error) => {
            eprintln!("error: {error}");
            Ok(ExitCode::from(1))
        }
    }
}

/// The reviewer from the configuration; every mistake here is an exit 2.
pub(crate) fn local_reviewer(config: &config::Config) -> anyhow::Result<LocalReviewer> {
    let environment = |name: &str| std::env::var(name).ok();
    super::review::require_model_credential(config)?;
    let prompts = Prompts::load(config.agent.prompts_dir.as_deref())
        .context("the prompts directory (agent.prompts_dir) cannot be used")?;
    let mcp_binary = std::env::current_exe().context(
        "could not find review-bot's own executable, which serves the agent's MCP tools",
    )?;
    let mut claude = config.claude_settings(environment);
    claude.confinement = config.agent_confinement(&claude.executable)?;
    let containment = claude.containment.clone();
    // A local review has no OWNER/REPO: no caches are kept for it.
    let build_gate = config.build_gate_settings(
        BuildGateSettings::new(Duration::from_secs(config.review.build_timeout_secs))
            .with_containment(containment.clone()),
    );
    Ok(LocalReviewer {
        claude,
        prompts,
        settings: LocalSettings {
            work_dir: config.work_dir()?,
            mcp_binary,
            mcp_tool_timeout: Duration::from_secs(config.agent.mcp_tool_timeout_secs),
            build_gate,
            build_commands: None,
            git_timeout: Duration::from_secs(config.git.timeout_secs),
            containment,
            panel_socket: Some(review_mcp::panel::default_socket_path()),
            verify: config.review.verify,
            min_confidence: config.review.min_confidence.value(),
        },
    })
}

/// Prints the findings (or the build failure) and the summary; the exit code.
fn print_report(report: &LocalReport, json: bool, wall: Duration) -> ExitCode {
    let code = match &report.outcome {
        LocalOutcome::NoChanges => {
            // No findings document: one without a finding would still
            // need a review; say so on standard error only.
            eprintln!(
                "nothing to review: the working tree does not differ from {}",
                report.base.description
            );
            return ExitCode::SUCCESS;
        }
        LocalOutcome::BuildFailed { report: failure } => {
            if !json {
                println!("{failure}");
            }
            eprintln!("error: the build or the tests failed; no review was made");
            ExitCode::from(1)
        }
        LocalOutcome::Reviewed {
            findings,
            placements,
            ..
        } => {
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(findings.as_ref())
                        .expect("findings always serialise")
                );
            } else {
                print!("{}", table(report, findings, placements));
            }
            ExitCode::SUCCESS
        }
    };
    match &report.delivery {
        Some(Ok(Delivery::Panel { socket })) => {
            eprintln!("presented in the review panel ({})", socket.display());
        }
        Some(Ok(Delivery::File { path, .. })) => {
            eprintln!("review written to {}", path.display());
        }
        Some(Err(error)) => eprintln!("warning: {error}"),
        None => {}
    }
    eprintln!("{}", summary_line(report, wall));
    code
}

/// The findings as a table: severity, place, confidence, title; then the overview.
fn table(report: &LocalReport, findings: &Findings, placements: &[&str]) -> String {
    let mut text = format!(
        "Local review of {} against {}\n\n",
        report.repository.display(),
        report.base.description
    );
    if findings.line_comments.is_empty() {
        text.push_str("No findings.\n");
    } else {
        let places: Vec<String> = findings
            .line_comments
            .iter()
            .map(|comment| format!("{}:{}", comment.file, comment.line))
            .collect();
        let width = places
            .iter()
            .map(|place| place.chars().count())
            .max()
            .unwrap_or(0);
        for ((comment, place), placement) in
            findings.line_comments.iter().zip(&places).zip(placements)
        {
            let _ = writeln!(
                text,
                "{}  {place:<width$}  {} {:>3}  {}{}",
                comment.severity.emoji(),
                comment.confidence_level.emoji(),
                comment.confidence,
                review_core::payload::single_line(&comment.title),
                if matches!(*placement, "inline" | "moved") {
                    ""
                } else {
                    "  (outside the diff)"
                },
            );
        }
    }
    let overview = findings.review_summary.overview.trim();
    if !overview.is_empty() {
        let _ = write!(text, "\n{overview}\n");
    }
    text
}

/// The last line: the verdict, the counts, the cost, and the overhead beside the agent.
fn summary_line(report: &LocalReport, wall: Duration) -> String {
    let mut parts = Vec::new();
    match &report.outcome {
        LocalOutcome::NoChanges => parts.push("no changes".to_owned()),
        LocalOutcome::BuildFailed { .. } => parts.push("build failed".to_owned()),
        LocalOutcome::Reviewed {
            findings, verdict, ..
        } => {
            parts.push(
                match verdict {
                    ReviewOutcome::Approved => "LGTM",
                    _ => "changes requested",
                }
                .to_owned(),
            );
            let count = findings.line_comments.len();
            parts.push(format!(
                "{count} finding{}",
                if count == 1 { "" } else { "s" }
            ));
        }
    }
    let timings = &report.timings;
    parts.push(format!(
        "agent ${:.2}, {}, {:.1} s",
        report.agent_cost_usd,
        review_pipeline::progress::turns(report.agent_turns),
        timings.agent.as_secs_f64()
    ));
    parts.push(format!(
        "wall {:.1} s (overhead {:.1} s: prepare {:.2} s, build {:.1} s, passes beyond the \
         agent {:.1} s, finish {:.2} s)",
        wall.as_secs_f64(),
        wall.saturating_sub(timings.agent).as_secs_f64(),
        timings.prepare.as_secs_f64(),
        timings.gate.as_secs_f64(),
        timings.passes.saturating_sub(timings.agent).as_secs_f64(),
        timings.finish.as_secs_f64(),
    ));
    parts.push(format!("job {}", report.job_directory.display()));
    parts.join(" · ")
}
