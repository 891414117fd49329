//! The path normaliser: turns the path an agent or a findings file gives for a
//! comment into the repository-relative path GitHub names the file by, or says
//! why it is unusable; and, for a path that names no file of the pull request,
//! what was probably wrong with it.

use thiserror::Error;

/// Why a comment's path is unsafe or unusable. Each message says what to give
/// instead.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PathProblem {
    /// The path is empty (or only `./` segments).
    #[error(
        "the path is empty; give the file's path relative to the repository root, like `src/main.rs`"
    )]
    Empty,
    /// The path is absolute (`/…`; or, as a likely mistake, a Windows drive
    /// such as `C:`).
    #[error("the path is absolute; give it relative to the repository root, like `src/main.rs`")]
    Absolute,
    /// The path has a `..` segment.
    #[error("the path has a `..` segment; give it relative to the repository root without `..`")]
    ParentSegment,
    /// The path has a backslash (a likely mistake when no file has it).
    #[error("the path has a backslash; separate directories with `/`")]
    Backslash,
    /// The path has a NUL (never in a git path), or another control
    /// character (a likely mistake when no file has it).
    #[error(
        "the path has a control character (U+{code_point:04X}) at byte {byte}; give the path as plain text"
    )]
    ControlCharacter {
        /// The character's code point.
        code_point: u32,
        /// Its byte offset in the path.
        byte: usize,
    },
}

/// Normalises a comment's path: strips `./` segments (leading or inner) and
/// empty segments (`a//b`, a trailing `/`), and rejects what cannot name a
/// file of a git repository: an empty path, an absolute one (`/…`), one that
/// climbs with `..`, or one holding NUL.
///
/// Everything else git can store is kept as given — tabs, newlines and other
/// control characters, backslashes, `C:` — because git writes such names
/// (C-quoted) in its diffs and a comment on such a file must anchor. Whether a
/// path that is *not* a file of the pull request looks like a mistake is
/// [`path_mistake`]'s question. Unicode is kept as given (no NFC/NFD folding):
/// git and GitHub compare path bytes.
///
/// ```
/// use review_core::anchor::{normalize_path, PathProblem};
/// assert_eq!(normalize_path("./src//lib.rs").unwrap(), "src/lib.rs");
/// assert_eq!(normalize_path("tab\there.txt").unwrap(), "tab\there.txt");
/// assert_eq!(normalize_path("../etc/passwd"), Err(PathProblem::ParentSegment));
/// ```
pub fn normalize_path(raw: &str) -> Result<String, PathProblem> {
    if let Some(byte) = raw.find('\0') {
        return Err(PathProblem::ControlCharacter {
            code_point: 0,
            byte,
        });
    }
    if raw.starts_with('/') {
        return Err(PathProblem::Absolute);
    }
    let mut normalized = String::with_capacity(raw.len());
    for segment in raw.split('/') {
        match segment {
            "" | "." => {}
            ".." => return Err(PathProblem::ParentSegment),
            segment => {
                if !normalized.is_empty() {
                    normalized.push('/');
                }
                normalized.push_str(segment);
            }
        }
    }
    if normalized.is_empty() {
        return Err(PathProblem::Empty);
    }
    Ok(normalized)
}

/// Why a path that names no file of the pull request was probably written
/// wrong: a control character (a newline pasted in), a backslash (a Windows
/// separator) or a drive letter (`C:`). `None` when it looks like a plain
/// path. Used only to explain a miss: a file of the pull request whose real
/// name holds such characters is still found by [`normalize_path`]'s result.
pub fn path_mistake(path: &str) -> Option<PathProblem> {
    if let Some((byte, character)) = path
        .char_indices()
        .find(|(_, character)| character.is_control())
    {
        return Some(PathProblem::ControlCharacter {
            code_point: u32::from(character),
            byte,
        });
    }
    if path.contains('\\') {
        return Some(PathProblem::Backslash);
    }
    let bytes = path.as_bytes();
    (bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':')
        .then_some(PathProblem::Absolute)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_segments_and_empty_segments_are_removed() {
        assert_eq!(normalize_path("src/main.rs").unwrap(), "src/main.rs");
        assert_eq!(normalize_path("./src/main.rs").unwrap(), "src/main.rs");
        assert_eq!(normalize_path("././a").unwrap(), "a");
        assert_eq!(normalize_path("src/./a//b/").unwrap(), "src/a/b");
        assert_eq!(normalize_path("ä/ß.txt").unwrap(), "ä/ß.txt");
        assert_eq!(normalize_path("with space.txt").unwrap(), "with space.txt");
        assert_eq!(normalize_path("..hidden/x..y").unwrap(), "..hidden/x..y");
    }

    #[test]
    fn unsafe_paths_are_rejected_with_a_reason() {
        assert_eq!(normalize_path(""), Err(PathProblem::Empty));
        assert_eq!(normalize_path("./"), Err(PathProblem::Empty));
        assert_eq!(normalize_path("/etc/passwd"), Err(PathProblem::Absolute));
        assert_eq!(normalize_path("a/../../b"), Err(PathProblem::ParentSegment));
        assert_eq!(normalize_path(".."), Err(PathProblem::ParentSegment));
        assert_eq!(
            normalize_path("a\0b"),
            Err(PathProblem::ControlCharacter {
                code_point: 0,
                byte: 1
            })
        );
    }

    #[test]
    fn every_name_git_can_store_is_kept() {
        for name in [
            "tab\there.txt",
            "new\nline",
            "back\\slash",
            "C:/x",
            "a\u{7f}\u{85}",
            "q\"uote",
            "\u{202e}txt.exe",
        ] {
            assert_eq!(normalize_path(name).as_deref(), Ok(name), "{name:?}");
        }
    }

    #[test]
    fn mistakes_are_named_for_paths_that_miss() {
        assert_eq!(path_mistake("src/main.rs"), None);
        assert_eq!(path_mistake("src\\main.rs"), Some(PathProblem::Backslash));
        assert_eq!(path_mistake("C:/x"), Some(PathProblem::Absolute));
        assert!(matches!(
            path_mistake("a\nb"),
            Some(PathProblem::ControlCharacter { code_point: 10, .. })
        ));
        assert!(matches!(
            path_mistake("a\u{85}"),
            Some(PathProblem::ControlCharacter {
                code_point: 0x85,
                ..
            })
        ));
    }
}
