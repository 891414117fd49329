//! `review-bot detect-platform`: platforms and review guides for a set of changed paths.

use std::process::ExitCode;

use clap::Args;

/// Arguments of `detect-platform`.
#[derive(Debug, Args)]
pub struct DetectPlatformArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &DetectPlatformArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`detect-platform` is being built (issue 2): {args:?}")
}
