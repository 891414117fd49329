//! The `review-bot` binary: command-line definition and glue.
//!
//! No business logic lives here. Each subcommand parses its arguments
//! (`cli`), resolves them into settings, and calls into the library crates
//! (`commands`). Errors are `anyhow` at this level, with context that tells the
//! operator what to do next.

mod cli;
mod commands;
mod config;
mod output;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    init_tracing(cli.log_format);
    match commands::run(cli.command, cli.config.as_deref()) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// Logs go to standard error so that plumbing commands keep standard output
/// for their machine-readable answer.
fn init_tracing(format: cli::LogFormat) {
    let json = matches!(format, cli::LogFormat::Json);
    output::set_json(json);
    // JSON logs carry the commands' progress lines as `info` events.
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("REVIEW_BOT_LOG").unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new(if json {
                "warn,review_bot=info,review_pipeline=info"
            } else {
                "warn"
            })
        });
    // Colours only for a terminal: a log file or journald gets plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        cli::LogFormat::Text => builder.init(),
        cli::LogFormat::Json => builder.json().init(),
    }
}
