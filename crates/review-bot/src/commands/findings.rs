//! `review-bot findings …`: check a findings file against a diff, or convert it
//! to a GitHub create-review payload.
//!
//! Exit codes: 0 when the findings file is valid, 1 when it has schema errors,
//! 2 when something could not be done at all (a file that cannot be read, a
//! diff that is not a diff).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Subcommand;
use review_core::anchor::{Verdict, anchor};
use review_core::diff::PullRequestDiff;
use review_core::findings::{self, Validation, github::to_review_payload};
use review_core::footer::{ReviewId, ThreadId};
use serde::Serialize;
use uuid::Uuid;

/// `findings` subcommands.
#[derive(Debug, Subcommand)]
pub enum FindingsCommand {
    /// Report schema errors and one anchoring verdict per line comment; exit 1 if invalid.
    Validate {
        /// The pull request's unified diff (`git diff`, or GitHub's `.diff`).
        #[arg(long)]
        diff: PathBuf,
        /// The findings file (schema v1.0).
        findings: PathBuf,
        /// Print exactly one JSON object instead of a human report (warnings,
        /// such as unknown fields, then go to standard error).
        #[arg(long)]
        json: bool,
    },
    /// Print the GitHub create-review payload for the findings.
    ToGithub {
        /// The pull request's unified diff.
        #[arg(long)]
        diff: PathBuf,
        /// The findings file (schema v1.0).
        findings: PathBuf,
        /// The review id for the footers (`review::{id}`); a new random one by default.
        #[arg(long)]
        review_id: Option<Uuid>,
    },
}

pub fn run(command: &FindingsCommand) -> anyhow::Result<ExitCode> {
    match command {
        FindingsCommand::Validate {
            diff,
            findings,
            json,
        } => validate(diff, findings, *json),
        FindingsCommand::ToGithub {
            diff,
            findings,
            review_id,
        } => to_github(diff, findings, *review_id),
    }
}

/// Reads and parses the diff; failures are operational errors (exit 2).
fn read_diff(path: &Path) -> anyhow::Result<PullRequestDiff> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("could not read the diff {}", path.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    PullRequestDiff::parse(&text).with_context(|| {
        format!(
            "{} is not a unified diff (give the output of `git diff` or GitHub's .diff)",
            path.display()
        )
    })
}

/// Reads and validates the findings file; an unreadable file is exit 2.
fn read_findings(path: &Path) -> anyhow::Result<Validation> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("could not read the findings file {}", path.display()))?;
    Ok(findings::validate(&bytes))
}

/// One line comment's verdict, as `--json` prints it.
#[derive(Serialize)]
struct CommentReport<'a> {
    index: usize,
    file: &'a str,
    line: u32,
    verdict: &'static str,
    moved_to: Option<u32>,
}

/// The whole `--json` answer.
#[derive(Serialize)]
struct ValidateReport<'a> {
    schema_errors: Vec<String>,
    comments: Vec<CommentReport<'a>>,
}

fn validate(diff_path: &Path, findings_path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let diff = read_diff(diff_path)?;
    let validation = read_findings(findings_path)?;
    let verdicts: Vec<Verdict> = validation
        .locations
        .iter()
        .map(|located| anchor(&diff, &located.location))
        .collect();
    let exit = if validation.is_valid() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    let output = if json {
        for warning in &validation.warnings {
            eprintln!("warning: {warning}");
        }
        let report = ValidateReport {
            schema_errors: validation.errors.iter().map(ToString::to_string).collect(),
            comments: validation
                .locations
                .iter()
                .zip(&verdicts)
                .map(|(located, verdict)| CommentReport {
                    index: located.index,
                    file: &located.location.path,
                    line: located.location.line,
                    verdict: verdict.name(),
                    moved_to: match verdict {
                        Verdict::Moved { line, .. } => Some(*line),
                        _ => None,
                    },
                })
                .collect(),
        };
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        human_report(findings_path, &validation, &verdicts)
    };
    std::io::stdout().write_all(output.as_bytes())?;
    Ok(exit)
}

fn human_report(findings_path: &Path, validation: &Validation, verdicts: &[Verdict]) -> String {
    let mut text = String::new();
    let name = findings_path.display();
    if validation.is_valid() {
        let _ = writeln!(text, "{name}: valid (findings schema v1.0)");
    } else {
        let count = validation.errors.len();
        let _ = writeln!(
            text,
            "{name}: invalid, {count} schema error{}",
            if count == 1 { "" } else { "s" }
        );
        for error in &validation.errors {
            let _ = writeln!(text, "  error: {error}");
        }
    }
    for warning in &validation.warnings {
        let _ = writeln!(text, "  warning: {warning}");
    }
    if validation.locations.is_empty() {
        let _ = writeln!(text, "no line comments to anchor");
        return text;
    }
    let _ = writeln!(text, "line comments:");
    for (located, verdict) in validation.locations.iter().zip(verdicts) {
        let location = &located.location;
        let place = format!(
            "  [{}] {}:{} {}",
            located.index, location.path, location.line, location.side
        );
        let _ = match verdict {
            Verdict::Inline { .. } => writeln!(text, "{place}: inline"),
            Verdict::Moved { line, .. } => {
                writeln!(text, "{place}: moved to line {line}")
            }
            Verdict::OutsideDiff { reason } => {
                writeln!(
                    text,
                    "{place}: outside_diff (goes in the review body): {reason}"
                )
            }
            Verdict::NotInPr { reason } => {
                writeln!(
                    text,
                    "{place}: not_in_pr (goes in the review body): {reason}"
                )
            }
        };
    }
    text
}

fn to_github(
    diff_path: &Path,
    findings_path: &Path,
    review_id: Option<Uuid>,
) -> anyhow::Result<ExitCode> {
    let diff = read_diff(diff_path)?;
    let validation = read_findings(findings_path)?;
    for warning in &validation.warnings {
        eprintln!("warning: {warning}");
    }
    let Some(findings) = validation.findings else {
        eprintln!(
            "{} is not a valid findings file; fix these and run again (or see `review-bot findings validate`):",
            findings_path.display()
        );
        for error in &validation.errors {
            eprintln!("  error: {error}");
        }
        return Ok(ExitCode::from(1));
    };
    let review = ReviewId(review_id.unwrap_or_else(Uuid::new_v4));
    let conversion = to_review_payload(&findings, &diff, review, || ThreadId(Uuid::new_v4()));
    let output = serde_json::to_string_pretty(&conversion.payload)? + "\n";
    std::io::stdout().write_all(output.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
