//! `review-bot discover-commands DIR`: the build and test commands a repository documents.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

/// Arguments of `discover-commands`.
#[derive(Debug, Args)]
pub struct DiscoverCommandsArgs {
    /// The repository's working tree.
    pub dir: PathBuf,
}

pub fn run(args: &DiscoverCommandsArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`discover-commands` is being built (issue 2): {args:?}")
}
