//! Every run's own Claude Code configuration directory (`CLAUDE_CONFIG_DIR`).
//!
//! Claude Code reads hooks (`settings.json`), plugins, commands, agents and
//! skills from its configuration directory and runs the hooks with the
//! network, outside any turn. A run may write there (the agent's `Bash` can),
//! so a directory shared between runs carries one pull request's hooks into
//! every later job (issue 26). So each run gets a **fresh, empty** directory,
//! `SCRATCH/claude-config` in the run's scratch directory (see
//! [`super::scratch`]), made anew before the run starts (whatever a resumed
//! run left there is removed first, without following links) and removed with
//! the scratch directory when the run ends.
//!
//! With `agent.config_dir` (a logged-in Claude Code's directory), that login is
//! copied in — never the directory itself, which the run neither sees nor
//! writes. What the pinned CLI (2.1.330) reads for a login, from its binary:
//! `CLAUDE_CONFIG_DIR/.credentials.json` (the OAuth tokens; its
//! "secure storage" on Linux) and `CLAUDE_CONFIG_DIR/.claude.json` (the
//! global config, whose `oauthAccount`, `userID` and `primaryApiKey` name the
//! account). The credentials file is copied whole; of `.claude.json` only
//! [`LOGIN_FIELDS`] are kept (its `projects` and `mcpServers` could carry
//! configuration a run must not inherit). Both are read without following
//! links or blocking, regular files only, at most [`LOGIN_FILE_LIMIT`] bytes,
//! and written `0600` with `O_EXCL | O_NOFOLLOW`.
//!
//! A consequence: when the CLI refreshes an expiring OAuth token during a run,
//! the refreshed token stays in the run's copy. Long-running services should
//! use an API key or a long-lived token (`claude setup-token`).

use std::io::{Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use crate::AgentError;

/// The scratch directory's entry for the configuration directory.
pub const CONFIG_DIRECTORY_NAME: &str = "claude-config";

/// The credentials file, copied whole.
pub const CREDENTIALS_FILE: &str = ".credentials.json";

/// The global config file, of which only [`LOGIN_FIELDS`] are copied.
pub const GLOBAL_CONFIG_FILE: &str = ".claude.json";

/// The fields of `.claude.json` that make up a login.
pub const LOGIN_FIELDS: &[&str] = &[
    "oauthAccount",
    "userID",
    "primaryApiKey",
    "customApiKeyResponses",
    "hasCompletedOnboarding",
];

/// The largest login file read (real ones are a few KiB).
pub const LOGIN_FILE_LIMIT: u64 = 1024 * 1024;

/// Make `scratch_directory/claude-config` fresh and empty (removing whatever
/// is there, links included, without following them), then copy the login
/// from `login_source` when given. Returns the new directory.
pub fn prepare(
    scratch_directory: &Path,
    login_source: Option<&Path>,
) -> Result<PathBuf, AgentError> {
    let directory = scratch_directory.join(CONFIG_DIRECTORY_NAME);
    remove_entry(&directory)?;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&directory)
        .map_err(|source| AgentError::File {
            action: "create the run's Claude Code configuration directory",
            path: directory.clone(),
            source,
        })?;
    if let Some(source) = login_source {
        copy_login(source, &directory)?;
    }
    Ok(directory)
}

/// Remove `path` whatever it is (see [`super::scratch::remove_entry`]).
pub(crate) fn remove_entry(path: &Path) -> Result<(), AgentError> {
    super::scratch::remove_entry(path)
}

/// Copy the login files of `source` into `directory`.
fn copy_login(source: &Path, directory: &Path) -> Result<(), AgentError> {
    if !source.is_dir() {
        return Err(AgentError::File {
            action: "read the Claude Code login in agent.config_dir",
            path: source.to_owned(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "not a directory; set agent.config_dir to a logged-in Claude Code's directory \
                 (e.g. ~/.claude), or unset it and export ANTHROPIC_API_KEY",
            ),
        });
    }
    let mut copied = 0;
    if let Some(credentials) = read_login_file(&source.join(CREDENTIALS_FILE))? {
        write_new_private_file(&directory.join(CREDENTIALS_FILE), &credentials)?;
        copied += 1;
    }
    let global_path = source.join(GLOBAL_CONFIG_FILE);
    if let Some(global) = read_login_file(&global_path)? {
        let parsed: serde_json::Value =
            serde_json::from_slice(&global).map_err(|error| AgentError::File {
                action: "read the Claude Code login in agent.config_dir",
                path: global_path.clone(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("not JSON ({error}); log in again with Claude Code"),
                ),
            })?;
        let login: serde_json::Map<String, serde_json::Value> = LOGIN_FIELDS
            .iter()
            .filter_map(|field| {
                parsed
                    .get(field)
                    .map(|value| ((*field).to_owned(), value.clone()))
            })
            .collect();
        let text = serde_json::Value::Object(login).to_string();
        write_new_private_file(&directory.join(GLOBAL_CONFIG_FILE), text.as_bytes())?;
        copied += 1;
    }
    if copied == 0 {
        tracing::warn!(
            directory = %source.display(),
            "agent.config_dir holds no Claude Code login (.credentials.json, .claude.json); \
             the run has no credentials unless an API key is set"
        );
    }
    Ok(())
}

/// The contents of a login file; `None` when there is none. A link, a FIFO
/// or anything but a regular file, or a file over [`LOGIN_FILE_LIMIT`], is an
/// error naming it.
fn read_login_file(path: &Path) -> Result<Option<Vec<u8>>, AgentError> {
    let error = |source| AgentError::File {
        action: "read the Claude Code login in agent.config_dir",
        path: path.to_owned(),
        source,
    };
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(opened) if opened.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(opened) if opened.raw_os_error() == Some(libc::ELOOP) => {
            return Err(error(std::io::Error::other(
                "it is a symbolic link; put the file itself there",
            )));
        }
        Err(opened) => return Err(error(opened)),
    };
    let metadata = file.metadata().map_err(error)?;
    if !metadata.is_file() {
        return Err(error(std::io::Error::other(
            "it is not a regular file; put the file itself there",
        )));
    }
    let mut contents = Vec::new();
    file.take(LOGIN_FILE_LIMIT + 1)
        .read_to_end(&mut contents)
        .map_err(error)?;
    if contents.len() as u64 > LOGIN_FILE_LIMIT {
        return Err(error(std::io::Error::other(format!(
            "it is over {LOGIN_FILE_LIMIT} bytes; a Claude Code login is a few KiB"
        ))));
    }
    Ok(Some(contents))
}

/// Create a new file only the bot's user can read, refusing anything already
/// there (a link included).
fn write_new_private_file(path: &Path, contents: &[u8]) -> Result<(), AgentError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .and_then(|mut file| file.write_all(contents))
        .map_err(|source| AgentError::File {
            action: "copy the Claude Code login into the run's configuration directory",
            path: path.to_owned(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_directory_replaces_what_a_run_left_and_the_link_target_stays() {
        let run = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "keep").unwrap();
        // A resumed run's directory is a link to somewhere else.
        std::os::unix::fs::symlink(outside.path(), run.path().join(CONFIG_DIRECTORY_NAME)).unwrap();
        let directory = prepare(run.path(), None).unwrap();
        assert!(std::fs::symlink_metadata(&directory).unwrap().is_dir());
        assert_eq!(std::fs::read_dir(&directory).unwrap().count(), 0);
        assert_eq!(
            std::fs::read_to_string(outside.path().join("keep")).unwrap(),
            "keep"
        );
        // A directory with hooks in it goes too.
        std::fs::write(directory.join("settings.json"), "{\"hooks\":{}}").unwrap();
        let directory = prepare(run.path(), None).unwrap();
        assert_eq!(std::fs::read_dir(&directory).unwrap().count(), 0);
    }

    #[test]
    fn only_the_login_is_copied() {
        let run = tempfile::tempdir().unwrap();
        let login = tempfile::tempdir().unwrap();
        std::fs::write(
            login.path().join(CREDENTIALS_FILE),
            "{\"claudeAiOauth\":{}}",
        )
        .unwrap();
        std::fs::write(
            login.path().join(GLOBAL_CONFIG_FILE),
            r#"{"oauthAccount":{"emailAddress":"a@b"},"userID":"u","mcpServers":{"x":{}},"projects":{}}"#,
        )
        .unwrap();
        std::fs::write(login.path().join("settings.json"), "{\"hooks\":{}}").unwrap();
        let directory = prepare(run.path(), Some(login.path())).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&directory)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, [GLOBAL_CONFIG_FILE, CREDENTIALS_FILE]);
        let global: serde_json::Value =
            serde_json::from_slice(&std::fs::read(directory.join(GLOBAL_CONFIG_FILE)).unwrap())
                .unwrap();
        assert_eq!(
            global,
            serde_json::json!({"oauthAccount":{"emailAddress":"a@b"},"userID":"u"})
        );
    }

    #[test]
    fn a_fifo_or_link_as_a_login_file_is_a_clear_error() {
        let run = tempfile::tempdir().unwrap();
        let login = tempfile::tempdir().unwrap();
        let fifo = login.path().join(CREDENTIALS_FILE);
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let error = prepare(run.path(), Some(login.path())).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
        std::fs::remove_file(&fifo).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &fifo).unwrap();
        let error = prepare(run.path(), Some(login.path())).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
    }
}
