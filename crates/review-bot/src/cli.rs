//! Command-line definition: the raw flags, before they are resolved into settings.
//!
//! Each subcommand's own arguments live beside its implementation in
//! `commands::*`, so this file only lists the commands.

use clap::{Parser, Subcommand, ValueEnum};

use crate::commands;

/// Reviews GitHub pull requests with an AI coding agent and drives a
/// label-based review → fix → CI → re-review loop.
#[derive(Debug, Parser)]
#[command(name = "review-bot", version, about, propagate_version = true)]
pub struct Cli {
    /// How log lines on standard error are formatted. The filter comes from
    /// `REVIEW_BOT_LOG` (for example `REVIEW_BOT_LOG=review_bot=debug`).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, env = "REVIEW_BOT_LOG_FORMAT")]
    pub log_format: LogFormat,

    /// The configuration file (TOML; review-bot.example.toml lists every key).
    /// Default: ./review-bot.toml when it exists. Every key can also be set by
    /// an environment variable `REVIEW_BOT_<TABLE>_<KEY>`, which wins.
    #[arg(long = "config", global = true, value_name = "FILE", env = crate::config::CONFIG_VARIABLE)]
    pub config: Option<std::path::PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

/// Log line format.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a review-findings file (schema v1.0) against a pull request's diff,
    /// or turn it into a GitHub create-review payload.
    #[command(subcommand)]
    Findings(commands::findings::FindingsCommand),

    /// Print the build and test commands a repository documents in CLAUDE.md or README.md.
    DiscoverCommands(commands::discover::DiscoverCommandsArgs),

    /// Read changed paths on standard input and print the platforms and review guides they select.
    DetectPlatform(commands::platform::DetectPlatformArgs),

    /// Serve the agent's MCP server over standard input/output (comment tools,
    /// comment threads, `present_review`).
    Mcp(commands::mcp::McpArgs),

    /// Serve the review panel: a local page showing the review the agent
    /// presents (`present_review`), live, with clickable file references.
    Panel(commands::panel::PanelArgs),

    /// Import the seed's reply-tracking file into the store, or export the store's replies.
    #[command(subcommand)]
    Replies(commands::replies::RepliesCommand),

    /// Review one pull request now, exactly as the daemon would: check out,
    /// build and test, two agent passes, then one review, the replies and the
    /// label (`--dry-run` prints the review instead of posting it).
    Review(commands::review::ReviewArgs),

    /// Advance one pull request by one step of the loop, chosen by its bot
    /// label: review (`bot-review-needed`), fix and push
    /// (`bot-changes-needed`) or check CI (`bot-ci-pending`); nothing for
    /// any other label. What the daemon runs per pull request.
    Step(commands::step::StepArgs),

    /// The daemon: poll the `[daemon]` repositories for the bot labels and
    /// advance each pull request found by one step, under a lease in the
    /// store, `daemon.concurrency` at a time (`--once`: one poll, then exit).
    Run(commands::run::RunArgs),

    /// Measure review quality: run the review flow (as `review --local`) on
    /// each case of a case set, or on bugs replayed from a repository's own
    /// fixes (`--from-history`), and score the findings against the golden
    /// findings (precision, recall, F1, cost).
    Eval(commands::eval::EvalArgs),

    /// Show the effective configuration and where each value came from, and
    /// check the Claude Code CLI, bubblewrap, GitHub, git, the store and the
    /// work directory.
    Doctor(commands::doctor::DoctorArgs),
}
