//! The path normaliser: turns the path an agent or a findings file gives for a
//! comment into the repository-relative path GitHub names the file by, or says
//! why it is unsafe.

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
    /// The path is absolute (`/…`, or a Windows drive such as `C:`).
    #[error("the path is absolute; give it relative to the repository root, like `src/main.rs`")]
    Absolute,
    /// The path has a `..` segment.
    #[error("the path has a `..` segment; give it relative to the repository root without `..`")]
    ParentSegment,
    /// The path has a backslash.
    #[error("the path has a backslash; separate directories with `/`")]
    Backslash,
    /// The path has a NUL or another control character.
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
/// empty segments (`a//b`, a trailing `/`), and rejects paths that are
/// absolute, climb with `..`, use backslashes, or hold NUL or other control
/// characters (C0, DEL, C1).
///
/// Unicode is kept as given (no NFC/NFD folding): git and GitHub compare path
/// bytes.
///
/// ```
/// use review_core::anchor::{normalize_path, PathProblem};
/// assert_eq!(normalize_path("./src//lib.rs").unwrap(), "src/lib.rs");
/// assert_eq!(normalize_path("../etc/passwd"), Err(PathProblem::ParentSegment));
/// ```
pub fn normalize_path(raw: &str) -> Result<String, PathProblem> {
    if let Some((byte, character)) = raw
        .char_indices()
        .find(|(_, character)| character.is_control())
    {
        return Err(PathProblem::ControlCharacter {
            code_point: u32::from(character),
            byte,
        });
    }
    if raw.contains('\\') {
        return Err(PathProblem::Backslash);
    }
    let bytes = raw.as_bytes();
    let windows_drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    if raw.starts_with('/') || windows_drive {
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
        assert_eq!(normalize_path("C:/x"), Err(PathProblem::Absolute));
        assert_eq!(normalize_path("a/../../b"), Err(PathProblem::ParentSegment));
        assert_eq!(normalize_path(".."), Err(PathProblem::ParentSegment));
        assert_eq!(normalize_path("src\\main.rs"), Err(PathProblem::Backslash));
        assert_eq!(
            normalize_path("a\0b"),
            Err(PathProblem::ControlCharacter {
                code_point: 0,
                byte: 1
            })
        );
        assert!(matches!(
            normalize_path("a\nb"),
            Err(PathProblem::ControlCharacter { code_point: 10, .. })
        ));
        assert!(matches!(
            normalize_path("a\u{7f}"),
            Err(PathProblem::ControlCharacter {
                code_point: 0x7f,
                ..
            })
        ));
        assert!(matches!(
            normalize_path("a\u{85}"),
            Err(PathProblem::ControlCharacter {
                code_point: 0x85,
                ..
            })
        ));
    }
}
