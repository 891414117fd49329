//! `review-bot discover-commands DIR`: the build and test commands the build
//! gate would run for a checkout.
//!
//! A `.review-bot.toml` in DIR (its `[build]` table) comes first, as the base
//! branch's does for a review; a file that cannot be used is a warning on
//! standard error and the next source is used. Then the gate's own reading
//! of a worktree ([`review_pipeline::discovery::discover_with_notes`]):
//! `CLAUDE.md` then `README.md` at the top of DIR (names matched
//! case-insensitively, an exact match preferred), read as a person reads
//! them, else inference from the manifests there (`Cargo.toml`, `go.mod`,
//! `package.json`, a Python project with pytest configured). Prints
//! `{"setup": […], "build": […], "test": […], "environment": {…}, "source":
//! …}`; `source` names where the commands came from (`.review-bot.toml`,
//! `README.md`, `Cargo.toml (inferred)` …), or is `null` when nothing gives
//! any — which is an answer (exit 0), not an error. Notes about the manifests
//! (a malformed one, one not used) go to standard error.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use review_core::build_commands::{self, Discovery};
use review_pipeline::command_sources;
use serde::Serialize;

/// Arguments of `discover-commands`.
#[derive(Debug, Args)]
pub struct DiscoverCommandsArgs {
    /// The repository's working tree.
    pub dir: PathBuf,
}

#[derive(Serialize)]
struct Report {
    setup: Vec<String>,
    build: Vec<String>,
    test: Vec<String>,
    environment: BTreeMap<String, String>,
    source: Option<String>,
}

pub fn run(args: &DiscoverCommandsArgs) -> anyhow::Result<ExitCode> {
    if !args.dir.is_dir() {
        anyhow::bail!(
            "{} is not a directory: give the repository's working tree (for example \
             `review-bot discover-commands .` from inside it)",
            args.dir.display()
        );
    }
    // The repository owners' file first (here DIR's own; a review reads the
    // base commit's), then the documents and manifests.
    let file = command_sources::read_in_directory(&args.dir).with_context(|| {
        format!(
            "could not read {}",
            args.dir.join(build_commands::REPOSITORY_FILE).display()
        )
    })?;
    if let Some(problem) = file.problem() {
        eprintln!("warning: {problem}; using the next source");
    }
    let explicit = command_sources::explicit(None, &file);
    let found = super::block_on(review_pipeline::discovery::discover_with_notes(
        &args.dir,
        explicit
            .as_ref()
            .map(|(source, commands)| (source.clone(), commands)),
    ))?
    .with_context(|| format!("could not list the directory {}", args.dir.display()))?;
    for note in &found.notes {
        eprintln!("note: {note}");
    }
    let report = match found.discovery {
        Discovery::Found(found) => Report {
            source: Some(found.source.name()),
            setup: found.setup,
            build: found.build,
            test: found.test,
            environment: found.environment,
        },
        Discovery::NothingFound { .. } => Report {
            setup: Vec::new(),
            build: Vec::new(),
            test: Vec::new(),
            environment: BTreeMap::new(),
            source: None,
        },
    };
    let output = serde_json::to_string_pretty(&report)? + "\n";
    std::io::stdout().write_all(output.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
