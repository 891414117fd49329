//! `review-bot findings …`: check a findings file against a diff, or convert it
//! to a GitHub create-review payload.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

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
        /// Print exactly one JSON object instead of a human report.
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
    },
}

pub fn run(command: &FindingsCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`findings` is being built (issue 2): {command:?}")
}
