//! Appending one request to the comments file, atomically with respect to
//! other writers.
//!
//! Every tool call that records a write builds its whole JSON line — newline
//! included — in memory and hands it to the kernel in **one** `write(2)` on a
//! file opened with `O_APPEND`. On Linux a write to a regular file holds the
//! inode's lock for the whole call and `O_APPEND` positions it at the end under
//! that lock, so concurrent appenders (parallel tool calls, or two passes
//! sharing a file) never interleave inside a line. One call writes everything
//! for any size below `MAX_RW_COUNT` (about 2 GiB) unless the disk is full or a
//! signal arrives mid-way; we bound a line at [`MAX_LINE_BYTES`] and treat a
//! short write as a failure the model is told about. If a writer ever dies
//! mid-line anyway, the collector recovers the next complete line glued to the
//! torn one (see `review_core::agent_requests::parse_line`).
//!
//! The file lives where the agent's own commands can write, so what is at its
//! path may be planted (issue 26): it is opened with `O_NOFOLLOW |
//! O_NONBLOCK`, so a symbolic link is refused (its target is never touched)
//! and a FIFO never blocks the tool call (without a reader the open fails with
//! `ENXIO`; with one, the type check below refuses it), and then must be a
//! regular file, else [`AppendError::NotRegularFile`]. `O_NONBLOCK` stays set:
//! Linux ignores it for regular files, so the single `write(2)` is unchanged.

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// The largest line we write. Messages are capped at GitHub's 65,536
/// characters, so a real request stays far below this.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// Why a line could not be appended.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    /// The line is larger than [`MAX_LINE_BYTES`].
    #[error(
        "the request is {bytes} bytes as JSON, more than the {MAX_LINE_BYTES} bytes one line may hold; shorten it"
    )]
    TooLarge {
        /// Its size.
        bytes: usize,
    },
    /// Something other than a regular file is at the path (a link, a FIFO,
    /// a directory, a device): nothing was written and it was left alone.
    #[error(
        "the comments file {path} is {kind}, not a regular file; nothing was written and it was \
         left alone (something in the run replaced the file: remove it, do not retry)"
    )]
    NotRegularFile {
        /// The comments file.
        path: PathBuf,
        /// What is there instead ("a symbolic link", "a FIFO", …).
        kind: &'static str,
    },
    /// The file could not be opened or written.
    #[error("could not append to the comments file {path}: {source}")]
    Io {
        /// The comments file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The kernel accepted only part of the line (disk full?).
    #[error(
        "only {written} of {bytes} bytes reached the comments file {path} (is the disk full?); \
         the partial line will be reported and skipped by the collector"
    )]
    ShortWrite {
        /// The comments file.
        path: PathBuf,
        /// Bytes written.
        written: usize,
        /// Bytes in the line.
        bytes: usize,
    },
}

/// Appends `line` (which must end with its newline) in a single `write(2)`.
pub fn append_line(path: &Path, line: &str) -> Result<(), AppendError> {
    debug_assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
    let bytes = line.len();
    if bytes > MAX_LINE_BYTES {
        return Err(AppendError::TooLarge { bytes });
    }
    let io_error = |source| AppendError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = open_for_append(path)?;
    // Deliberately `write`, not `write_all`: `write_all` would split the line
    // into several system calls after a short write, and another writer's line
    // could land between the pieces.
    let written = loop {
        match file.write(line.as_bytes()) {
            Ok(written) => break written,
            // Nothing was written; trying again is safe.
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(io_error(error)),
        }
    };
    if written == bytes {
        Ok(())
    } else {
        Err(AppendError::ShortWrite {
            path: path.to_owned(),
            written,
            bytes,
        })
    }
}

/// Open `path` for appending without following a link or blocking on a
/// FIFO, creating it `0600` when missing; only a regular file is returned.
fn open_for_append(path: &Path) -> Result<File, AppendError> {
    let not_regular = |kind| AppendError::NotRegularFile {
        path: path.to_owned(),
        kind,
    };
    let file = match OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        // O_NOFOLLOW on a symbolic link fails with ELOOP.
        Err(error) if error.raw_os_error() == Some(libc::ELOOP) => {
            return Err(not_regular("a symbolic link"));
        }
        // A FIFO without a reader, opened for writing without blocking.
        Err(error) if error.raw_os_error() == Some(libc::ENXIO) => {
            return Err(not_regular("a FIFO"));
        }
        Err(error) if error.raw_os_error() == Some(libc::EISDIR) => {
            return Err(not_regular("a directory"));
        }
        Err(source) => {
            return Err(AppendError::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    let file_type = file
        .metadata()
        .map_err(|source| AppendError::Io {
            path: path.to_owned(),
            source,
        })?
        .file_type();
    if file_type.is_file() {
        return Ok(file);
    }
    Err(not_regular(if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_dir() {
        "a directory"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() || file_type.is_block_device() {
        "a device"
    } else {
        "not a file"
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_accumulate_and_the_file_is_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("comments.jsonl");
        append_line(&path, "{\"a\":1}\n").unwrap();
        append_line(&path, "{\"b\":2}\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"b\":2}\n"
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn oversized_lines_are_refused_and_nothing_is_written() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("comments.jsonl");
        let line = format!("{}\n", "x".repeat(MAX_LINE_BYTES));
        assert!(matches!(
            append_line(&path, &line),
            Err(AppendError::TooLarge { .. })
        ));
        assert!(!path.exists());
    }

    fn mkfifo(path: &Path) {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success());
    }

    #[test]
    fn a_planted_link_is_refused_and_its_target_untouched() {
        let directory = tempfile::tempdir().unwrap();
        let target = directory.path().join("review-bot.toml");
        std::fs::write(&target, "[sandbox]\nmode = \"required\"\n").unwrap();
        let path = directory.path().join("comments.jsonl");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let error = append_line(&path, "{\"a\":1}\n").unwrap_err();
        assert!(
            matches!(
                error,
                AppendError::NotRegularFile {
                    kind: "a symbolic link",
                    ..
                }
            ),
            "{error}"
        );
        assert!(error.to_string().contains("not a regular file"), "{error}");
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "[sandbox]\nmode = \"required\"\n"
        );
        // A dangling link is not created through either.
        let dangling = directory.path().join("dangling.jsonl");
        std::os::unix::fs::symlink(directory.path().join("created"), &dangling).unwrap();
        assert!(append_line(&dangling, "{}\n").is_err());
        assert!(!directory.path().join("created").exists());
    }

    #[test]
    fn a_planted_fifo_is_refused_without_blocking_with_or_without_a_reader() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("comments.jsonl");
        mkfifo(&path);
        let error = append_line(&path, "{}\n").unwrap_err();
        assert!(
            matches!(error, AppendError::NotRegularFile { kind: "a FIFO", .. }),
            "{error}"
        );
        // With a reader holding it open, the open succeeds: the type check refuses.
        let _reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .unwrap();
        let error = append_line(&path, "{}\n").unwrap_err();
        assert!(
            matches!(error, AppendError::NotRegularFile { kind: "a FIFO", .. }),
            "{error}"
        );
    }

    #[test]
    fn a_directory_is_refused() {
        let directory = tempfile::tempdir().unwrap();
        let error = append_line(directory.path(), "{}\n").unwrap_err();
        assert!(
            matches!(
                error,
                AppendError::NotRegularFile {
                    kind: "a directory",
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn a_missing_directory_is_a_clear_error() {
        let error = append_line(Path::new("/nonexistent/dir/comments.jsonl"), "{}\n").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("/nonexistent/dir/comments.jsonl"),
            "{error}"
        );
    }

    #[test]
    fn concurrent_large_appends_never_interleave() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("comments.jsonl");
        let writers: Vec<_> = (0..8u8)
            .map(|writer| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for round in 0..25 {
                        // 200 KiB lines: far above a pipe's PIPE_BUF, so this
                        // checks the regular-file guarantee we rely on.
                        let filler = char::from(b'a' + writer).to_string().repeat(200 * 1024);
                        append_line(&path, &format!("{writer}:{round}:{filler}\n")).unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 8 * 25);
        for line in lines {
            let mut parts = line.splitn(3, ':');
            let writer: u8 = parts.next().unwrap().parse().unwrap();
            let _round = parts.next().unwrap();
            let filler = parts.next().unwrap();
            let expected = char::from(b'a' + writer);
            assert_eq!(filler.len(), 200 * 1024);
            assert!(
                filler.chars().all(|c| c == expected),
                "line of writer {writer} was interleaved"
            );
        }
    }
}
