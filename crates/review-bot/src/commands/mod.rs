//! Subcommand implementations: each resolves its arguments and calls the libraries.

pub mod discover;
pub mod findings;
pub mod platform;

use std::process::ExitCode;

use crate::cli::Command;

/// Runs one subcommand; the exit code is the command's verdict (for example,
/// `findings validate` exits 1 on an invalid file), errors are exit 2.
pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Findings(command) => findings::run(command),
        Command::DiscoverCommands(args) => discover::run(&args),
        Command::DetectPlatform(args) => platform::run(&args),
    }
}
