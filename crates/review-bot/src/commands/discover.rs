//! `review-bot discover-commands DIR`: the build and test commands a repository documents.
//!
//! A `.review-bot.toml` in DIR (its `[build]` table) comes first; a file
//! that cannot be used is a warning on standard error and the next source is
//! used. Then it reads `CLAUDE.md` then `README.md` from DIR (names matched case-insensitively,
//! an exact match preferred) and prints `{"build": […], "test": […], "source": …}`;
//! `source` is the file the commands came from, or `null` when none documents
//! any — which is an answer (exit 0), not an error.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use review_core::build_commands::{self, DOCUMENT_NAMES, Discovery, Document, discover};
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
    #[serde(skip_serializing_if = "Vec::is_empty")]
    setup: Vec<String>,
    build: Vec<String>,
    test: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    environment: BTreeMap<String, String>,
    source: Option<String>,
}

pub fn run(args: &DiscoverCommandsArgs) -> anyhow::Result<ExitCode> {
    let entries: Vec<String> = std::fs::read_dir(&args.dir)
        .with_context(|| format!("could not list the directory {}", args.dir.display()))?
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    let mut texts = Vec::new();
    for wanted in DOCUMENT_NAMES {
        let name = entries
            .iter()
            .find(|name| name.as_str() == wanted)
            .or_else(|| {
                entries
                    .iter()
                    .find(|name| name.eq_ignore_ascii_case(wanted))
            });
        if let Some(name) = name {
            texts.push((name.clone(), read_text(&args.dir.join(name))?));
        }
    }
    let documents: Vec<Document<'_>> = texts
        .iter()
        .map(|(name, text)| Document { name, text })
        .collect();
    // The repository owners' file first (here DIR's own; a review reads the
    // base commit's), then the documents.
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
    let report = match discover(
        explicit
            .as_ref()
            .map(|(source, commands)| (source.clone(), commands)),
        &documents,
    ) {
        Discovery::Found(found) => Report {
            setup: found.setup,
            build: found.build,
            test: found.test,
            environment: found.environment,
            source: Some(found.source.name()),
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

/// A document's text; invalid UTF-8 is replaced rather than refused.
fn read_text(path: &Path) -> anyhow::Result<String> {
    let bytes =
        std::fs::read(path).with_context(|| format!("could not read {}", path.display()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
