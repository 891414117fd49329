//! `review-bot detect-platform`: platforms and review guides for a set of changed paths.
//!
//! Reads one path per line on standard input (blank lines ignored, surrounding
//! whitespace trimmed) — for example `git diff --name-only main... | review-bot
//! detect-platform`.

use std::io::{BufRead as _, Write as _};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use review_core::platform::detect;

/// Arguments of `detect-platform`.
#[derive(Debug, Args)]
pub struct DetectPlatformArgs {
    /// Print JSON (`{"platforms": […], "guides": […]}`) instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &DetectPlatformArgs) -> anyhow::Result<ExitCode> {
    let mut paths = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line =
            line.context("could not read paths from standard input (one UTF-8 path per line)")?;
        let path = line.trim();
        if !path.is_empty() {
            paths.push(path.to_owned());
        }
    }
    let detection = detect(&paths);
    let output = if args.json {
        serde_json::to_string_pretty(&detection)? + "\n"
    } else {
        let platforms: Vec<&str> = detection
            .platforms
            .iter()
            .map(|platform| platform.name())
            .collect();
        format!(
            "platforms: {}\nguides: {}\n",
            if platforms.is_empty() {
                "none".to_owned()
            } else {
                platforms.join(", ")
            },
            detection.guides.join(", ")
        )
    };
    std::io::stdout().write_all(output.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
