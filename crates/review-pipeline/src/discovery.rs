//! Reading a worktree for its build and test commands (issue 24): the
//! documents (`CLAUDE.md`, `README.md`) and the manifests (`Cargo.toml`,
//! `go.mod`, `package.json`, `pyproject.toml` …) at its top, handed to
//! [`review_core::build_commands::discover_in_checkout`], which decides.
//!
//! The worktree is the pull request's: hostile. Only **regular files** at the
//! top are read — a symbolic link could point anywhere on the bot's machine,
//! a FIFO would block — of at most [`FILE_LIMIT`] bytes, as lossy UTF-8 (bad
//! bytes become U+FFFD, never an error). Anything else is skipped with a
//! warning in the operator's log. Names at the top are listed (lock files,
//! `conftest.py`, and which directories exist), at most [`NAME_LIMIT`] of
//! them. Notes from inference (a malformed manifest, a second manifest not
//! used) are logged as warnings.
//!
//! The same function serves the gate (review and write flows, `review` by
//! hand) and `review-bot discover-commands`, so what the command prints is
//! what the gate runs.

use std::path::{Path, PathBuf};

use review_core::build_commands::manifests::MANIFEST_NAMES;
use review_core::build_commands::{
    self, CommandSet, DOCUMENT_NAMES, Discovery, Document, Report, Source, TopLevel,
};

use crate::build_gate::BuildGateError;

/// Largest document or manifest read; a bigger one is skipped.
pub const FILE_LIMIT: u64 = 1024 * 1024;

/// Most names listed at the top of a worktree (the rest are not looked at).
pub const NAME_LIMIT: usize = 10_000;

/// The commands to run: `explicit` ones (the operator's, or the base
/// branch's `.review-bot.toml`: [`crate::command_sources`]) with their
/// source, else those the documents at the top of `worktree` give, else those
/// its manifests imply.
pub async fn discover(
    worktree: &Path,
    explicit: Option<(Source, &CommandSet)>,
) -> Result<Discovery, BuildGateError> {
    let report = discover_with_notes(worktree, explicit).await?;
    for note in &report.notes {
        tracing::warn!(worktree = %worktree.display(), note = %note, "build command discovery");
    }
    Ok(report.discovery)
}

/// [`discover`], with inference's notes returned instead of logged.
pub async fn discover_with_notes(
    worktree: &Path,
    explicit: Option<(Source, &CommandSet)>,
) -> Result<Report, BuildGateError> {
    if explicit.is_some() {
        return Ok(build_commands::discover_in_checkout(explicit, &[], None));
    }
    let read_error = |source| BuildGateError::File {
        action: "list the worktree",
        path: worktree.to_owned(),
        source,
    };
    let mut entries = tokio::fs::read_dir(worktree).await.map_err(read_error)?;
    let mut names: Vec<String> = Vec::new();
    let mut documents: Vec<(usize, String, PathBuf)> = Vec::new();
    let mut manifests: Vec<(usize, String, PathBuf)> = Vec::new();
    while let Some(entry) = entries.next_entry().await.map_err(read_error)? {
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if names.len() >= NAME_LIMIT {
            tracing::warn!(worktree = %worktree.display(), "more than {NAME_LIMIT} names at the top of the worktree; the rest are not looked at for build commands");
            break;
        }
        let document = DOCUMENT_NAMES
            .iter()
            .position(|wanted| wanted.eq_ignore_ascii_case(&name))
            // An exact match ranks before another spelling of the same name.
            .map(|rank| (rank * 2 + usize::from(DOCUMENT_NAMES[rank] != name), true));
        let manifest = MANIFEST_NAMES
            .iter()
            .position(|wanted| *wanted == name)
            .map(|rank| (rank, false));
        if let Some((rank, is_document)) = document.or(manifest) {
            let readable = tokio::fs::symlink_metadata(entry.path())
                .await
                .is_ok_and(|metadata| metadata.is_file() && metadata.len() <= FILE_LIMIT);
            if readable {
                let list = if is_document {
                    &mut documents
                } else {
                    &mut manifests
                };
                list.push((rank, name.clone(), entry.path()));
            } else {
                tracing::warn!(file = %name, "not reading it for build commands: not a regular file of at most 1 MiB");
            }
        }
        names.push(name);
    }
    documents.sort();
    // Two spellings of one document (README.md and readme.md): the first wins.
    documents.dedup_by_key(|(rank, _, _)| *rank / 2);
    manifests.sort();
    names.sort();
    let documents = read_all(documents).await?;
    let manifests = read_all(manifests).await?;
    let documents: Vec<Document<'_>> = documents
        .iter()
        .map(|(name, text)| Document { name, text })
        .collect();
    let manifests: Vec<Document<'_>> = manifests
        .iter()
        .map(|(name, text)| Document { name, text })
        .collect();
    Ok(build_commands::discover_in_checkout(
        None,
        &documents,
        Some(TopLevel {
            names: &names,
            manifests: &manifests,
        }),
    ))
}

/// The texts of the files, in order, as lossy UTF-8.
async fn read_all(
    files: Vec<(usize, String, PathBuf)>,
) -> Result<Vec<(String, String)>, BuildGateError> {
    let mut texts = Vec::with_capacity(files.len());
    for (_, name, path) in files {
        let bytes = tokio::fs::read(&path)
            .await
            .map_err(|source| BuildGateError::File {
                action: "read",
                path: path.clone(),
                source,
            })?;
        texts.push((name, String::from_utf8_lossy(&bytes).into_owned()));
    }
    Ok(texts)
}
