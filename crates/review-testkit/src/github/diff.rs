//! The simulator's own reading of a pull request's diff: GitHub's "is this line part of the
//! diff" oracle.
//!
//! GitHub accepts an inline comment only on a line inside a hunk of the pull request's diff
//! (`RIGHT`: an added or context line, by its new-file number; `LEFT`: a removed or context
//! line, by its old-file number), a multi-line comment only when both ends sit in the same
//! hunk, and the legacy `position` counts lines below the file's first `@@` header. This module
//! parses git's own unified diff output (hunk headers and line prefixes) to answer those
//! questions. It deliberately shares no code with `review-core`'s anchoring, so the bot's
//! anchoring is tested against an independent oracle rather than against itself.

use super::SimError;
use super::git::{LineCounts, RawEntry};

/// Which side of a split diff a line is on, as GitHub names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The base (old) file: removed and context lines.
    Left,
    /// The head (new) file: added and context lines.
    Right,
}

impl Side {
    /// Parses GitHub's `LEFT`/`RIGHT`.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "LEFT" => Some(Self::Left),
            "RIGHT" => Some(Self::Right),
            _ => None,
        }
    }

    /// GitHub's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Left => "LEFT",
            Self::Right => "RIGHT",
        }
    }
}

/// What one line of a hunk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineKind {
    Context,
    Added,
    Removed,
    /// `\ No newline at end of file`: takes a position, cannot be commented on.
    NoNewlineMarker,
}

/// One line inside a hunk.
#[derive(Debug, Clone)]
pub(crate) struct DiffLine {
    pub kind: LineKind,
    /// Line number in the old file (removed and context lines).
    pub old_line: Option<u64>,
    /// Line number in the new file (added and context lines).
    pub new_line: Option<u64>,
    /// GitHub's `position`: lines below the file's first `@@` header.
    pub position: u64,
    /// The line as it appears in the patch, prefix included.
    pub text: String,
}

/// One hunk of a file's patch.
#[derive(Debug, Clone)]
pub(crate) struct Hunk {
    /// The `@@ -a,b +c,d @@ …` line.
    pub header: String,
    pub lines: Vec<DiffLine>,
}

/// GitHub's `status` of a changed file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileStatus {
    Added,
    Removed,
    Modified,
    Renamed,
    Copied,
    Changed,
}

impl FileStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Removed => "removed",
            Self::Modified => "modified",
            Self::Renamed => "renamed",
            Self::Copied => "copied",
            Self::Changed => "changed",
        }
    }
}

/// One changed file of a pull request.
#[derive(Debug, Clone)]
pub(crate) struct DiffFile {
    pub path: String,
    pub previous_path: Option<String>,
    pub status: FileStatus,
    pub additions: u64,
    pub deletions: u64,
    pub binary: bool,
    /// The blob SHA GitHub reports: the new blob, or the old one for a removed file.
    pub blob_sha: String,
    /// The per-file patch (hunks only, no `diff --git` headers); `None` when git printed no
    /// hunk (binary files, pure renames, mode changes, empty files).
    pub patch: Option<String>,
    pub hunks: Vec<Hunk>,
}

/// Everything about a diff between two commits that the API needs.
#[derive(Debug, Clone)]
pub(crate) struct PullDiff {
    /// git's unified diff, verbatim (the `application/vnd.github.diff` body).
    pub text: String,
    pub files: Vec<DiffFile>,
}

/// Where an anchor landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AnchorHit {
    /// Index of the hunk in the file.
    pub hunk: usize,
    /// Index of the line inside the hunk.
    pub line: usize,
}

impl PullDiff {
    /// Builds the model from git's raw, numstat and patch outputs of the same diff.
    pub fn from_git(
        raw: Vec<RawEntry>,
        counts: Vec<Option<LineCounts>>,
        text: String,
    ) -> Result<Self, SimError> {
        if raw.len() != counts.len() {
            return Err(SimError::Unexpected(format!(
                "git listed {} files in --raw but {} in --numstat",
                raw.len(),
                counts.len()
            )));
        }
        let sections = split_sections(&text);
        if sections.len() != raw.len() {
            return Err(SimError::Unexpected(format!(
                "git printed {} file sections in its patch but listed {} files",
                sections.len(),
                raw.len()
            )));
        }
        let mut files = Vec::with_capacity(raw.len());
        for ((entry, count), section) in raw.into_iter().zip(counts).zip(sections) {
            let status = match entry.status {
                'A' => FileStatus::Added,
                'D' => FileStatus::Removed,
                'R' => FileStatus::Renamed,
                'C' => FileStatus::Copied,
                'T' => FileStatus::Changed,
                _ => FileStatus::Modified,
            };
            let blob_sha = if status == FileStatus::Removed {
                entry.old_blob.clone()
            } else {
                entry.new_blob.clone()
            };
            let (patch, hunks) = parse_section(section)?;
            files.push(DiffFile {
                path: entry.path,
                previous_path: entry.previous_path,
                status,
                additions: count.map_or(0, |count| count.additions),
                deletions: count.map_or(0, |count| count.deletions),
                binary: count.is_none(),
                blob_sha,
                patch,
                hunks,
            });
        }
        Ok(Self { text, files })
    }

    /// The changed file at `path` (its new path for renames).
    pub fn file(&self, path: &str) -> Option<&DiffFile> {
        self.files.iter().find(|file| file.path == path)
    }

    /// Lines of the whole diff, as GitHub counts them for the 20,000-line limit.
    pub fn line_count(&self) -> usize {
        self.text.lines().count()
    }
}

impl DiffFile {
    /// The hunk and line where a comment on `line` of `side` lands, if that line is part of
    /// the diff.
    pub fn find(&self, side: Side, line: u64) -> Option<AnchorHit> {
        for (hunk_index, hunk) in self.hunks.iter().enumerate() {
            for (line_index, diff_line) in hunk.lines.iter().enumerate() {
                let hit = match (side, diff_line.kind) {
                    (Side::Right, LineKind::Added | LineKind::Context) => {
                        diff_line.new_line == Some(line)
                    }
                    (Side::Left, LineKind::Removed | LineKind::Context) => {
                        diff_line.old_line == Some(line)
                    }
                    _ => false,
                };
                if hit {
                    return Some(AnchorHit {
                        hunk: hunk_index,
                        line: line_index,
                    });
                }
            }
        }
        None
    }

    /// The side and line a legacy `position` points at, if it points at a commentable line.
    pub fn at_position(&self, position: u64) -> Option<(Side, u64, AnchorHit)> {
        for (hunk_index, hunk) in self.hunks.iter().enumerate() {
            for (line_index, diff_line) in hunk.lines.iter().enumerate() {
                if diff_line.position != position {
                    continue;
                }
                let hit = AnchorHit {
                    hunk: hunk_index,
                    line: line_index,
                };
                return match diff_line.kind {
                    LineKind::Removed => diff_line.old_line.map(|line| (Side::Left, line, hit)),
                    LineKind::Added | LineKind::Context => {
                        diff_line.new_line.map(|line| (Side::Right, line, hit))
                    }
                    LineKind::NoNewlineMarker => None,
                };
            }
        }
        None
    }

    /// The line at a hit.
    pub fn line_at(&self, hit: AnchorHit) -> &DiffLine {
        &self.hunks[hit.hunk].lines[hit.line]
    }

    /// GitHub's `diff_hunk` for a comment: the hunk header and the hunk's lines up to and
    /// including the commented one.
    pub fn diff_hunk(&self, hit: AnchorHit) -> String {
        let hunk = &self.hunks[hit.hunk];
        let mut out = hunk.header.clone();
        for line in &hunk.lines[..=hit.line] {
            out.push('\n');
            out.push_str(&line.text);
        }
        out
    }
}

/// Splits git's patch output into one section per file (each starting at `diff --git`).
fn split_sections(text: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("diff --git ") {
            starts.push(offset);
        }
        offset += line.len();
    }
    let mut sections = Vec::with_capacity(starts.len());
    for (index, &start) in starts.iter().enumerate() {
        let end = starts.get(index + 1).copied().unwrap_or(text.len());
        sections.push(&text[start..end]);
    }
    sections
}

/// The hunk header numbers: `@@ -old_start[,old_count] +new_start[,new_count] @@`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HunkRange {
    pub old_start: u64,
    pub old_count: u64,
    pub new_start: u64,
    pub new_count: u64,
}

/// Parses a hunk header line; `None` if it is not one.
pub(crate) fn parse_hunk_header(line: &str) -> Option<HunkRange> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |text: &str| -> Option<(u64, u64)> {
        match text.split_once(',') {
            Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
            None => Some((text.parse().ok()?, 1)),
        }
    };
    let (old_start, old_count) = range(old)?;
    let (new_start, new_count) = range(new)?;
    Some(HunkRange {
        old_start,
        old_count,
        new_start,
        new_count,
    })
}

/// Parses one file section into its GitHub-style patch text and hunks.
fn parse_section(section: &str) -> Result<(Option<String>, Vec<Hunk>), SimError> {
    let lines: Vec<&str> = section.lines().collect();
    let Some(first_hunk) = lines.iter().position(|line| line.starts_with("@@ ")) else {
        return Ok((None, Vec::new()));
    };
    let body = &lines[first_hunk..];
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut position = 0_u64;
    let mut old_line = 0_u64;
    let mut new_line = 0_u64;
    for (index, line) in body.iter().enumerate() {
        if index > 0 {
            position += 1;
        }
        if line.starts_with("@@ ") {
            let range = parse_hunk_header(line).ok_or_else(|| {
                SimError::Unexpected(format!("git printed an unreadable hunk header {line:?}"))
            })?;
            old_line = range.old_start;
            new_line = range.new_start;
            hunks.push(Hunk {
                header: (*line).to_owned(),
                lines: Vec::new(),
            });
            continue;
        }
        let Some(hunk) = hunks.last_mut() else {
            continue;
        };
        let (kind, old, new) = match line.as_bytes().first() {
            Some(b'+') => {
                new_line += 1;
                (LineKind::Added, None, Some(new_line - 1))
            }
            Some(b'-') => {
                old_line += 1;
                (LineKind::Removed, Some(old_line - 1), None)
            }
            Some(b'\\') => (LineKind::NoNewlineMarker, None, None),
            // A context line (' '), or an empty line git printed for an empty context line.
            _ => {
                old_line += 1;
                new_line += 1;
                (LineKind::Context, Some(old_line - 1), Some(new_line - 1))
            }
        };
        hunk.lines.push(DiffLine {
            kind,
            old_line: old,
            new_line: new,
            position,
            text: (*line).to_owned(),
        });
    }
    Ok((Some(body.join("\n")), hunks))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECTION: &str = "diff --git a/src/lib.rs b/src/lib.rs\nindex 1111111..2222222 100644\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@ fn header()\n one\n-two\n+TWO\n+two and a half\n three\n@@ -10,2 +11,2 @@\n ten\n-eleven\n+ELEVEN\n";

    #[test]
    fn hunk_headers_with_and_without_counts() {
        assert_eq!(
            parse_hunk_header("@@ -1 +1,2 @@"),
            Some(HunkRange {
                old_start: 1,
                old_count: 1,
                new_start: 1,
                new_count: 2
            })
        );
        assert_eq!(
            parse_hunk_header("@@ -0,0 +1,3 @@ section"),
            Some(HunkRange {
                old_start: 0,
                old_count: 0,
                new_start: 1,
                new_count: 3
            })
        );
        assert_eq!(parse_hunk_header("@@ nonsense @@"), None);
    }

    #[test]
    fn lines_sides_and_positions() {
        let (patch, hunks) = parse_section(SECTION).unwrap();
        let file = DiffFile {
            path: "src/lib.rs".into(),
            previous_path: None,
            status: FileStatus::Modified,
            additions: 3,
            deletions: 2,
            binary: false,
            blob_sha: String::new(),
            patch,
            hunks,
        };
        assert!(
            file.patch
                .as_deref()
                .unwrap()
                .starts_with("@@ -1,3 +1,4 @@")
        );
        // RIGHT: context 1, added 2 and 3, context 4; second hunk: context 11, added 12.
        for line in [1, 2, 3, 4, 11, 12] {
            assert!(file.find(Side::Right, line).is_some(), "RIGHT {line}");
        }
        for line in [5, 10, 13] {
            assert!(file.find(Side::Right, line).is_none(), "RIGHT {line}");
        }
        // LEFT: context 1, removed 2, context 3; second hunk: context 10, removed 11.
        for line in [1, 2, 3, 10, 11] {
            assert!(file.find(Side::Left, line).is_some(), "LEFT {line}");
        }
        assert!(file.find(Side::Left, 4).is_none());
        assert_ne!(
            file.find(Side::Right, 4).unwrap().hunk,
            file.find(Side::Right, 11).unwrap().hunk
        );
        // Position 1 is " one"; the second @@ line is position 6; "+ELEVEN" is position 9.
        assert_eq!(
            file.at_position(1).map(|(side, line, _)| (side, line)),
            Some((Side::Right, 1))
        );
        assert_eq!(
            file.at_position(2).map(|(side, line, _)| (side, line)),
            Some((Side::Left, 2))
        );
        assert_eq!(file.at_position(6), None);
        assert_eq!(
            file.at_position(9).map(|(side, line, _)| (side, line)),
            Some((Side::Right, 12))
        );
        let hit = file.find(Side::Right, 3).unwrap();
        assert_eq!(
            file.diff_hunk(hit),
            "@@ -1,3 +1,4 @@ fn header()\n one\n-two\n+TWO\n+two and a half"
        );
    }

    #[test]
    fn binary_and_rename_sections_have_no_patch() {
        let (patch, hunks) = parse_section(
            "diff --git a/x.png b/x.png\nindex 1..2 100644\nBinary files a/x.png and b/x.png differ\n",
        )
        .unwrap();
        assert!(patch.is_none());
        assert!(hunks.is_empty());
    }
}
