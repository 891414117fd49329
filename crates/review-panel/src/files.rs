//! Reading a file a review references, only from under the review's base directory.
//!
//! The path comes from the agent and the request from the browser: both are
//! untrusted. A path with a `..` component is refused as written; an absolute
//! path must lie under the base; the path is canonicalised (every link
//! resolved) and must still lie under the (canonical) base, so a symbolic link
//! out of it is refused; the file is opened with `O_NOFOLLOW | O_NONBLOCK`, must
//! be a regular file no larger than the limit, and the descriptor's own path
//! (`/proc/self/fd/N`) is checked once more, so swapping a directory for a link
//! between the check and the open does not escape either.

use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Component, Path, PathBuf};

/// Why a file cannot be shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// The path names a parent directory.
    #[error("refused: `..` is not allowed in a file reference")]
    ParentDirectory,
    /// The path leads outside the base directory.
    #[error("refused: {0} is outside the review's base directory")]
    OutsideBase(String),
    /// A symbolic link leads outside the base directory.
    #[error("refused: a symbolic link leads outside the review's base directory")]
    LinkOutsideBase,
    /// No such file.
    #[error("no such file: {0}")]
    Missing(String),
    /// A directory, device, socket …
    #[error("not a regular file: {0}")]
    NotRegular(String),
    /// Over the size limit.
    #[error(
        "{path} is too large to show ({size} bytes; the panel shows files up to {limit} bytes)"
    )]
    TooLarge {
        /// The path.
        path: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// Binary content.
    #[error("{0} is not a text file")]
    NotText(String),
    /// Any other failure.
    #[error("could not read {path}: {reason}")]
    Unreadable {
        /// The path.
        path: String,
        /// The cause.
        reason: String,
    },
}

impl FileError {
    /// Whether the file was refused for safety (as opposed to missing or unreadable).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Self::ParentDirectory | Self::OutsideBase(_) | Self::LinkOutsideBase
        )
    }
}

/// A file read from under the base.
#[derive(Debug, Clone)]
pub struct TextFile {
    /// The canonical absolute path.
    pub absolute: PathBuf,
    /// The path relative to the base, for display.
    pub relative: String,
    /// The content.
    pub text: String,
}

impl TextFile {
    /// The number of lines (a final line without newline counts).
    pub fn line_count(&self) -> usize {
        line_count(&self.text)
    }
}

/// The number of lines of `text`.
pub fn line_count(text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        text.lines().count()
    }
}

/// The canonical form of a review's base directory, which must be an
/// existing absolute directory (`file://` URLs accepted).
pub fn canonical_base(base_uri: &str) -> Result<PathBuf, String> {
    let raw = base_uri.strip_prefix("file://").unwrap_or(base_uri);
    let raw = percent_encoding::percent_decode_str(raw).decode_utf8_lossy();
    let path = Path::new(raw.as_ref());
    if !path.is_absolute() {
        return Err(format!(
            "baseUri {base_uri:?} is not an absolute directory path"
        ));
    }
    let canonical = path
        .canonicalize()
        .map_err(|error| format!("baseUri {base_uri:?} cannot be used: {error}"))?;
    if !canonical.is_dir() {
        return Err(format!("baseUri {base_uri:?} is not a directory"));
    }
    Ok(canonical)
}

/// Reads `requested` (relative to `base`, or absolute under it). `base` must
/// be canonical ([`canonical_base`]).
pub fn read_under(base: &Path, requested: &str, max_bytes: u64) -> Result<TextFile, FileError> {
    let canonical = resolve_under(base, requested)?;
    read_resolved(base, &canonical, requested, max_bytes)
}

/// Where `requested` leads under `base` (canonical, every link resolved),
/// without opening it; refused when it leads outside.
pub fn resolve_under(base: &Path, requested: &str) -> Result<PathBuf, FileError> {
    let requested_path = Path::new(requested);
    if requested_path
        .components()
        .any(|component| component == Component::ParentDir)
    {
        return Err(FileError::ParentDirectory);
    }
    let candidate = if requested_path.is_absolute() {
        requested_path.to_owned()
    } else {
        base.join(requested_path)
    };
    if !candidate.starts_with(base) {
        return Err(FileError::OutsideBase(requested.to_owned()));
    }
    let canonical = match candidate.canonicalize() {
        Ok(canonical) => canonical,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(FileError::Missing(requested.to_owned()));
        }
        Err(error) => {
            return Err(FileError::Unreadable {
                path: requested.to_owned(),
                reason: error.to_string(),
            });
        }
    };
    if !canonical.starts_with(base) {
        return Err(FileError::LinkOutsideBase);
    }
    Ok(canonical)
}

/// Opens `canonical` ([`resolve_under`]) without following a link or
/// blocking: a regular file of at most `max_bytes`, still under `base` by its
/// descriptor's own path.
fn open_checked(
    base: &Path,
    canonical: &Path,
    requested: &str,
    max_bytes: u64,
) -> Result<std::fs::File, FileError> {
    let unreadable = |error: std::io::Error| FileError::Unreadable {
        path: requested.to_owned(),
        reason: error.to_string(),
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(canonical)
        .map_err(|error| match error.raw_os_error() {
            Some(libc::ELOOP) => FileError::LinkOutsideBase,
            Some(libc::ENOENT) => FileError::Missing(requested.to_owned()),
            _ => unreadable(error),
        })?;
    let metadata = file.metadata().map_err(unreadable)?;
    if !metadata.is_file() {
        return Err(FileError::NotRegular(requested.to_owned()));
    }
    if metadata.len() > max_bytes {
        return Err(FileError::TooLarge {
            path: requested.to_owned(),
            size: metadata.len(),
            limit: max_bytes,
        });
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        let opened = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(unreadable)?;
        if !opened.starts_with(base) {
            return Err(FileError::LinkOutsideBase);
        }
    }
    Ok(file)
}

/// Reads the file at `canonical` ([`resolve_under`]); `requested` names it in errors.
pub fn read_resolved(
    base: &Path,
    canonical: &Path,
    requested: &str,
    max_bytes: u64,
) -> Result<TextFile, FileError> {
    let file = open_checked(base, canonical, requested, max_bytes)?;
    let unreadable = |error: std::io::Error| FileError::Unreadable {
        path: requested.to_owned(),
        reason: error.to_string(),
    };
    let mut bytes = Vec::new();
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > max_bytes {
        return Err(FileError::TooLarge {
            path: requested.to_owned(),
            size: bytes.len() as u64,
            limit: max_bytes,
        });
    }
    if bytes[..bytes.len().min(BINARY_PROBE_BYTES)].contains(&0) {
        return Err(FileError::NotText(requested.to_owned()));
    }
    let relative = canonical
        .strip_prefix(base)
        .map_or_else(|_| requested.to_owned(), |path| path.display().to_string());
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    };
    Ok(TextFile {
        absolute: canonical.to_owned(),
        relative,
        text,
    })
}

/// The number of lines of the file at `canonical` ([`resolve_under`]), counted
/// as [`line_count`] does, reading it in small pieces rather than whole.
#[allow(
    clippy::naive_bytecount,
    reason = "one pass over a 64 KiB buffer does not need the bytecount crate"
)]
pub fn count_lines(
    base: &Path,
    canonical: &Path,
    requested: &str,
    max_bytes: u64,
) -> Result<usize, FileError> {
    let mut file = open_checked(base, canonical, requested, max_bytes)?;
    let mut buffer = vec![0_u8; 64 * 1024];
    let mut total: u64 = 0;
    let mut newlines = 0;
    let mut last = None;
    loop {
        let read = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => {
                return Err(FileError::Unreadable {
                    path: requested.to_owned(),
                    reason: error.to_string(),
                });
            }
        };
        let chunk = &buffer[..read];
        if total < BINARY_PROBE_BYTES as u64 {
            let probe = usize::try_from(BINARY_PROBE_BYTES as u64 - total).unwrap_or(read);
            if chunk[..read.min(probe)].contains(&0) {
                return Err(FileError::NotText(requested.to_owned()));
            }
        }
        total += read as u64;
        if total > max_bytes {
            return Err(FileError::TooLarge {
                path: requested.to_owned(),
                size: total,
                limit: max_bytes,
            });
        }
        newlines += chunk.iter().filter(|byte| **byte == b'\n').count();
        last = chunk.last().copied();
    }
    Ok(match last {
        None => 0,
        Some(b'\n') => newlines,
        Some(_) => newlines + 1,
    })
}

/// How much of a file is looked at for a NUL byte to call it binary.
const BINARY_PROBE_BYTES: usize = 8192;

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> (tempfile::TempDir, PathBuf) {
        let directory = tempfile::tempdir().unwrap();
        let base = directory.path().join("repo");
        std::fs::create_dir_all(base.join("src")).unwrap();
        std::fs::write(base.join("src/a.rs"), "fn a() {}\nfn b() {}\n").unwrap();
        std::fs::write(directory.path().join("secret"), "outside\n").unwrap();
        let base = base.canonicalize().unwrap();
        (directory, base)
    }

    #[test]
    fn files_under_the_base_are_read() {
        let (_directory, base) = base();
        let file = read_under(&base, "src/a.rs", 1024).unwrap();
        assert_eq!(file.relative, "src/a.rs");
        assert_eq!(file.line_count(), 2);
        let absolute = base.join("src/a.rs");
        assert!(read_under(&base, absolute.to_str().unwrap(), 1024).is_ok());
    }

    #[test]
    fn escapes_are_refused() {
        let (directory, base) = base();
        assert_eq!(
            read_under(&base, "../secret", 1024).unwrap_err(),
            FileError::ParentDirectory
        );
        assert_eq!(
            read_under(&base, "src/../../secret", 1024).unwrap_err(),
            FileError::ParentDirectory
        );
        assert!(matches!(
            read_under(&base, "/etc/passwd", 1024).unwrap_err(),
            FileError::OutsideBase(_)
        ));
        std::os::unix::fs::symlink(directory.path().join("secret"), base.join("link")).unwrap();
        assert_eq!(
            read_under(&base, "link", 1024).unwrap_err(),
            FileError::LinkOutsideBase
        );
        std::os::unix::fs::symlink(directory.path(), base.join("up")).unwrap();
        assert_eq!(
            read_under(&base, "up/secret", 1024).unwrap_err(),
            FileError::LinkOutsideBase
        );
    }

    #[test]
    fn missing_large_binary_and_directories_are_reported() {
        let (_directory, base) = base();
        assert!(matches!(
            read_under(&base, "nope.rs", 1024),
            Err(FileError::Missing(_))
        ));
        assert!(matches!(
            read_under(&base, "src", 1024),
            Err(FileError::NotRegular(_))
        ));
        assert!(matches!(
            read_under(&base, "src/a.rs", 4),
            Err(FileError::TooLarge { .. })
        ));
        std::fs::write(base.join("b.bin"), b"\0\x01").unwrap();
        assert!(matches!(
            read_under(&base, "b.bin", 1024),
            Err(FileError::NotText(_))
        ));
    }

    #[test]
    fn lines_are_counted_as_the_text_counts_them() {
        let (_directory, base) = base();
        for text in ["", "a", "a\n", "a\nb", "a\r\nb\r\n", "\n\n"] {
            std::fs::write(base.join("c.txt"), text).unwrap();
            let canonical = resolve_under(&base, "c.txt").unwrap();
            assert_eq!(
                count_lines(&base, &canonical, "c.txt", 1024).unwrap(),
                line_count(text),
                "{text:?}"
            );
        }
    }

    #[test]
    fn the_base_must_be_an_absolute_directory() {
        let (_directory, base) = base();
        assert!(canonical_base("relative/dir").is_err());
        assert!(canonical_base(base.join("src/a.rs").to_str().unwrap()).is_err());
        assert_eq!(canonical_base(base.to_str().unwrap()).unwrap(), base);
        assert_eq!(
            canonical_base(&format!("file://{}", base.display())).unwrap(),
            base
        );
    }
}
