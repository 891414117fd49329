//! Subcommand implementations: each resolves its arguments and calls the libraries.

pub mod discover;
pub mod doctor;
pub mod doctor_build;
pub mod eval;
pub mod findings;
pub mod mcp;
pub mod panel;
pub mod platform;
pub mod replies;
pub mod review;
pub mod review_local;
pub mod run;
pub mod step;

use std::process::ExitCode;

use crate::cli::Command;

/// Runs one subcommand; the exit code is the command's verdict (for example,
/// `findings validate` exits 1 on an invalid file), errors are exit 2.
pub fn run(command: Command, config_file: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    match command {
        Command::Doctor(args) => doctor::run(&args, config_file),
        Command::Findings(command) => findings::run(&command),
        Command::DiscoverCommands(args) => discover::run(&args),
        Command::DetectPlatform(args) => platform::run(&args),
        Command::Mcp(args) => mcp::run(args),
        Command::Panel(args) => panel::run(args),
        Command::Replies(command) => replies::run(&command),
        Command::Review(args) => review::run(&args, config_file),
        Command::Step(args) => step::run(&args, config_file),
        Command::Run(args) => run::run(&args, config_file),
        Command::Eval(args) => eval::run(&args, config_file),
    }
}

/// Runs an async command body on a runtime made for this one command.
///
/// Plumbing commands are synchronous; the ones that talk to the store, GitHub
/// or an MCP client call this.
pub fn block_on<F: Future>(future: F) -> anyhow::Result<F::Output> {
    use anyhow::Context as _;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("could not start the async runtime")?;
    Ok(runtime.block_on(future))
}
