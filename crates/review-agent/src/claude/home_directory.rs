//! A confined run's `HOME` when the operator configures one
//! (`agent.home_dir`): a fresh copy of it, never the directory itself.
//!
//! A confined agent may write its home (its `Bash` can), and Claude Code's
//! shell, git and most tools read a home's dotfiles (`.bashrc`, `.profile`,
//! `.gitconfig`, …): a home shared between runs carries what one pull
//! request's run planted there into every later run, of any repository (the
//! same hole as a shared configuration directory, issue 26). So the
//! configured directory is a *template*: before each confined run its
//! contents are copied into the run's fresh scratch home
//! (`SCRATCH/home`, see [`super::scratch`]), which is removed when the run
//! ends; the template is neither shown to the run nor written.
//!
//! What is copied: directories, regular files (with their permission bits)
//! and symbolic links as links (never followed; inside the confinement they
//! resolve against what the run is shown). Skipped: FIFOs, sockets and
//! devices, and the credential files and directories
//! [`review_sandbox::confinement::CREDENTIAL_NAMES`] names (`.ssh`,
//! `.git-credentials`, `.npmrc`, …), which masking keeps from every other
//! path a run is shown. The copy is bounded ([`TEMPLATE_BYTES_LIMIT`],
//! [`TEMPLATE_ENTRIES_LIMIT`]): it is made for every run, so a home that big
//! is a configuration mistake, and an error saying so.
//!
//! Unconfined (`sandbox.mode = "off"`), the configured directory is used as
//! it is, as before: nothing is confined there anyway.

use std::path::{Path, PathBuf};

use crate::AgentError;

/// The most bytes of regular files copied from the template.
pub const TEMPLATE_BYTES_LIMIT: u64 = 64 << 20;

/// The most entries (files, directories, links) copied from the template.
pub const TEMPLATE_ENTRIES_LIMIT: usize = 10_000;

/// Copy `template`'s contents into `home` (a fresh, empty directory).
pub fn copy_template(template: &Path, home: &Path) -> Result<(), AgentError> {
    let metadata = std::fs::metadata(template).map_err(|source| error(template, source))?;
    if !metadata.is_dir() {
        return Err(error(
            template,
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a directory; set agent.home_dir to a directory of dotfiles, or unset it \
                 for an empty home",
            ),
        ));
    }
    let mut budget = Budget {
        bytes: 0,
        entries: 0,
    };
    let mut pending: Vec<PathBuf> = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let source_directory = template.join(&relative);
        let entries = std::fs::read_dir(&source_directory)
            .map_err(|source| error(&source_directory, source))?;
        for entry in entries {
            let entry = entry.map_err(|source| error(&source_directory, source))?;
            let relative = relative.join(entry.file_name());
            if is_credential(&relative) {
                tracing::debug!(path = %relative.display(), "not copying a credential into the run's home");
                continue;
            }
            let source = template.join(&relative);
            let target = home.join(&relative);
            let metadata = std::fs::symlink_metadata(&source).map_err(|io| error(&source, io))?;
            budget.entries += 1;
            if budget.entries > TEMPLATE_ENTRIES_LIMIT {
                return Err(too_big(
                    template,
                    &format!("more than {TEMPLATE_ENTRIES_LIMIT} entries"),
                ));
            }
            let file_type = metadata.file_type();
            if file_type.is_dir() {
                std::fs::create_dir(&target).map_err(|io| error(&target, io))?;
                pending.push(relative);
            } else if file_type.is_symlink() {
                let link = std::fs::read_link(&source).map_err(|io| error(&source, io))?;
                std::os::unix::fs::symlink(link, &target).map_err(|io| error(&target, io))?;
            } else if file_type.is_file() {
                budget.bytes += metadata.len();
                if budget.bytes > TEMPLATE_BYTES_LIMIT {
                    return Err(too_big(
                        template,
                        &format!("more than {} MiB of files", TEMPLATE_BYTES_LIMIT >> 20),
                    ));
                }
                std::fs::copy(&source, &target).map_err(|io| error(&target, io))?;
            } else {
                tracing::debug!(path = %source.display(), "not copying a FIFO, socket or device into the run's home");
            }
        }
    }
    Ok(())
}

/// What has been copied so far.
struct Budget {
    bytes: u64,
    entries: usize,
}

/// Whether `relative` (a path in the template) is one of the credential
/// names masked everywhere else.
fn is_credential(relative: &Path) -> bool {
    review_sandbox::confinement::CREDENTIAL_NAMES
        .iter()
        .any(|name| relative == Path::new(name))
}

fn error(path: &Path, source: std::io::Error) -> AgentError {
    AgentError::File {
        action: "copy agent.home_dir into the run's home",
        path: path.to_owned(),
        source,
    }
}

fn too_big(template: &Path, what: &str) -> AgentError {
    error(
        template,
        std::io::Error::other(format!(
            "it holds {what}; it is copied for every run, so keep only the dotfiles the agent \
             needs there (or unset agent.home_dir for an empty home)"
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotfiles_links_and_directories_are_copied_credentials_and_fifos_are_not() {
        let template = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let root = template.path();
        std::fs::write(root.join(".gitconfig"), "[user]\n\tname = Bot\n").unwrap();
        std::fs::create_dir_all(root.join(".config/git")).unwrap();
        std::fs::write(root.join(".config/git/ignore"), "target/\n").unwrap();
        std::fs::write(root.join(".config/git/credentials"), "secret").unwrap();
        std::fs::write(root.join(".git-credentials"), "secret").unwrap();
        std::fs::create_dir(root.join(".ssh")).unwrap();
        std::fs::write(root.join(".ssh/id_ed25519"), "secret").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join(".hostname")).unwrap();
        nix_free_fifo(&root.join("pipe"));

        copy_template(root, home.path()).unwrap();
        let home = home.path();
        assert_eq!(
            std::fs::read_to_string(home.join(".gitconfig")).unwrap(),
            "[user]\n\tname = Bot\n"
        );
        assert_eq!(
            std::fs::read_to_string(home.join(".config/git/ignore")).unwrap(),
            "target/\n"
        );
        assert_eq!(
            std::fs::read_link(home.join(".hostname")).unwrap(),
            Path::new("/etc/hostname")
        );
        for skipped in [
            ".config/git/credentials",
            ".git-credentials",
            ".ssh",
            "pipe",
        ] {
            assert!(
                std::fs::symlink_metadata(home.join(skipped)).is_err(),
                "{skipped} was copied"
            );
        }
    }

    #[test]
    fn a_home_too_big_to_copy_per_run_is_an_error_that_says_so() {
        let template = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let big = std::fs::File::create(template.path().join("big")).unwrap();
        big.set_len(TEMPLATE_BYTES_LIMIT + 1).unwrap();
        let message = copy_template(template.path(), home.path())
            .unwrap_err()
            .to_string();
        assert!(message.contains("more than 64 MiB"), "{message}");
        assert!(message.contains("agent.home_dir"), "{message}");
        let not_a_directory = template.path().join("big");
        let message = copy_template(&not_a_directory, home.path())
            .unwrap_err()
            .to_string();
        assert!(message.contains("not a directory"), "{message}");
    }

    /// A FIFO made with `mkfifo` (no `unsafe` here).
    fn nix_free_fifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }
}
