//! The diff model: a pull request's changes as files → hunks → lines, with the
//! old- and new-file line number of every line.
//!
//! Two constructors feed it, one per source GitHub offers:
//!
//! - [`PullRequestDiff::parse`] reads a whole unified diff in git's format: the
//!   output of `git diff` or GitHub's `.diff` media type. It understands git's
//!   extended headers (renames and copies with their `similarity index`, new and
//!   deleted files, mode changes, `Binary files … differ` and `GIT binary
//!   patch`), C-quoted paths (`"a/\303\244.txt"`, `\t`, `\"`, octal escapes),
//!   `/dev/null`, `\ No newline at end of file`, and plain `---`/`+++` unified
//!   diffs without a `diff --git` line. Empty input is an empty diff.
//! - [`PullRequestDiff::from_changed_files`] takes GitHub's per-file entries
//!   ("list pull request files"): path, previous path, status and the optional
//!   `patch`, which holds hunks only (no headers) and is absent for binary or
//!   very large files.
//!
//! Both build the same model and the same index, so anchoring
//! ([`crate::anchor`]) does not care where the diff came from.
//!
//! ## Content is kept byte-exact
//!
//! A line's [`DiffLine::text`] is the line without its one-character prefix and
//! without the `\n` that ends it. A `\r` before that `\n` is content (a CRLF
//! file), not a separator problem: it stays in the text. Whether the file's last
//! line lacks a newline is recorded from git's `\ No newline at end of file`
//! marker in [`DiffLine::no_newline_at_end`], never guessed from the input's
//! final byte (GitHub's `patch` strings never end in a newline).
//!
//! ## Malformed input
//!
//! Every problem is a [`DiffError`] that names the 1-based line of the input
//! and says what was expected there. The parser never panics, whatever the input
//! (property-tested), and never silently drops a line: a hunk with more lines
//! than its header declares is an error, not trailing garbage.
//!
//! ## Why not diffy's parser
//!
//! DESIGN.md suggests diffy 0.5. Trying it (0.5.2) on the cases we must handle
//! showed four problems that matter for anchoring, so the parser here is our
//! own, and diffy is a test oracle instead: a property test checks that both
//! read the same hunks and lines from well-formed random diffs.
//!
//! 1. Lines after a hunk's declared count are skipped as "trailing garbage"
//!    (GNU patch leniency), so a hunk whose header under-counts silently loses
//!    lines and every later anchor of that file is wrong.
//! 2. Errors carry a byte offset in their `Display` text only (the kind and span
//!    are private), some pointing at the file's `diff --git` line instead of the
//!    offending one; we must name the line and say what was expected.
//! 3. One quoted path that is not UTF-8 fails with no position at all; we decode
//!    such paths lossily and keep going.
//! 4. Empty input is an error ("no valid patches found"); for us it is a pull
//!    request with no changes.
//!
//! ## What is not supported
//!
//! Combined diffs of merges (`diff --cc`, `@@@`) are rejected with an error
//! saying to diff base against head. Text before the first file header (a
//! commit message from `git show` or `git format-patch`) is rejected rather
//! than skipped, so an error page or a truncated download never reads as an
//! empty diff.
//!
//! ## Paths that are not UTF-8
//!
//! Paths are `String`s throughout (GitHub's API names files in JSON strings,
//! which are Unicode). A name git writes with bytes that are not UTF-8 — C-quoted
//! as octal escapes with `core.quotePath` on, raw with it off (callers read the
//! diff with `String::from_utf8_lossy`) — becomes the same lossy name either
//! way: each invalid sequence is U+FFFD. Such a file is in the model and its
//! lines anchor under that name. When two files of one diff differ only in
//! those bytes, their lossy names collide: both stay in [`PullRequestDiff::files`],
//! the name is marked ambiguous, and a comment on it is `outside_diff`
//! ([`NoLinesCause::AmbiguousName`](crate::anchor::NoLinesCause)) — listed in the
//! review body rather than posted on a file we cannot tell apart, and never
//! failing the whole diff.
//!
//! ## The index
//!
//! Construction indexes the files by path (a hash map, plus one for the old
//! paths of renames and copies) and keeps, per file and side, the sorted line
//! ranges of its hunks: all a comment lookup needs (see [`crate::anchor`]).
//! Parsing and indexing a 3,000-file, 100,000-changed-line diff takes about a
//! tenth of a second and holds about 16 MiB (`benches/anchor.rs`,
//! `examples/diff_memory.rs`).

mod error;
mod parse;
mod quoted;

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::anchor::Side;

pub use error::{DiffError, DiffProblem};

/// A pull request's diff: its changed files, indexed for anchoring.
///
/// Build it with [`PullRequestDiff::parse`] or
/// [`PullRequestDiff::from_changed_files`]; it cannot be modified afterwards,
/// so the index always matches the files.
#[derive(Debug, Clone, Default)]
pub struct PullRequestDiff {
    /// The changed files, in the order the input listed them.
    files: Vec<FileDiff>,
    /// Where each file's path ([`FileDiff::path`]) is in `files`.
    by_path: HashMap<String, usize>,
    /// Where each renamed or copied file's previous path is in `files`, to tell
    /// a caller who used the old name which name to use.
    by_previous_path: HashMap<String, usize>,
    /// For each file (same index as `files`), the commentable line ranges of
    /// each side, sorted, so a line is found by binary search.
    commentable: Vec<SideRanges>,
    /// Lossy paths (holding U+FFFD) that name two or more files: their bytes
    /// differed only where they were not UTF-8, so no comment can say which.
    ambiguous: std::collections::HashSet<String>,
}

/// The commentable ranges of one file, one sorted list per side.
#[derive(Debug, Clone, Default)]
struct SideRanges {
    /// Old-file ranges (LEFT): one per hunk that has old-side lines.
    left: Vec<LineRange>,
    /// New-file ranges (RIGHT): one per hunk that has new-side lines.
    right: Vec<LineRange>,
}

impl PullRequestDiff {
    /// Parses a whole unified diff in git's format (`git diff`, GitHub's `.diff`).
    ///
    /// Empty input (or input of blank lines only) is a diff with no files.
    pub fn parse(unified_text: &str) -> Result<Self, DiffError> {
        let files = parse::parse_unified(unified_text)?;
        Self::from_parsed(files, |path, first_line, line| DiffError::DuplicatePath {
            path,
            first_line,
            line,
        })
    }

    /// Builds the diff from GitHub's per-file entries (the "list pull request
    /// files" endpoint), in their order.
    ///
    /// A missing `patch` marks the file's content as omitted (GitHub leaves it
    /// out for binary and very large files): the file is in the pull request but
    /// has no commentable lines.
    pub fn from_changed_files<'a, I>(files: I) -> Result<Self, DiffError>
    where
        I: IntoIterator<Item = ChangedFile<'a>>,
    {
        let mut parsed = Vec::new();
        for (position, changed) in files.into_iter().enumerate() {
            parsed.push((position + 1, parse::file_from_changed(&changed)?));
        }
        Self::from_parsed(parsed, |path, first_entry, entry| {
            DiffError::DuplicateChangedFile {
                path,
                first_entry,
                entry,
            }
        })
    }

    /// Indexes parsed files, each with its position in the input (a line of
    /// the diff, or an entry number). `duplicate` builds the error for a path
    /// listed twice, from the path and its two positions.
    fn from_parsed(
        files: Vec<(usize, FileDiff)>,
        duplicate: impl Fn(String, usize, usize) -> DiffError,
    ) -> Result<Self, DiffError> {
        let mut diff = Self::default();
        let mut positions: Vec<usize> = Vec::new();
        for (position, file) in files {
            if let Some(&existing) = diff.by_path.get(&file.path) {
                let previous = &mut diff.files[existing];
                // git shows a type change (file ↔ symlink) as a deletion and an
                // addition of the same path; that is one change to GitHub.
                if previous.change == ChangeKind::Deleted && file.change == ChangeKind::Added {
                    previous.merge_type_change(file);
                    diff.commentable[existing] = SideRanges::of(previous);
                    continue;
                }
                // Two names that were different bytes, made equal by lossy
                // decoding: keep both, anchor on neither.
                if file.path.contains(char::REPLACEMENT_CHARACTER) {
                    diff.ambiguous.insert(file.path.clone());
                    diff.commentable.push(SideRanges::default());
                    diff.files.push(file);
                    positions.push(position);
                    continue;
                }
                return Err(duplicate(file.path, positions[existing], position));
            }
            diff.by_path.insert(file.path.clone(), diff.files.len());
            if let Some(previous_path) = &file.previous_path {
                diff.by_previous_path
                    .entry(previous_path.clone())
                    .or_insert(diff.files.len());
            }
            diff.commentable.push(SideRanges::of(&file));
            diff.files.push(file);
            positions.push(position);
        }
        Ok(diff)
    }

    /// The changed files, in input order.
    pub fn files(&self) -> &[FileDiff] {
        &self.files
    }

    /// The file whose [`FileDiff::path`] is exactly `path` (already normalised:
    /// see [`crate::anchor::normalize_path`]).
    pub fn file(&self, path: &str) -> Option<&FileDiff> {
        self.by_path.get(path).map(|&index| &self.files[index])
    }

    /// Whether `path` names two files whose names differed only in bytes that
    /// are not UTF-8 (see the module docs): comments on it cannot be inline.
    pub fn is_ambiguous(&self, path: &str) -> bool {
        self.ambiguous.contains(path)
    }

    /// The renamed or copied file whose previous path is `previous_path`.
    pub fn file_by_previous_path(&self, previous_path: &str) -> Option<&FileDiff> {
        self.by_previous_path
            .get(previous_path)
            .map(|&index| &self.files[index])
    }

    /// The number of changed files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether the diff changes no file.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The sorted, disjoint commentable ranges of the file at `path` on `side`
    /// (`None` when the path is not a file of the diff). Used by the anchorer.
    pub(crate) fn commentable_ranges(&self, path: &str, side: Side) -> Option<&[LineRange]> {
        let index = *self.by_path.get(path)?;
        if self.ambiguous.contains(path) {
            return Some(&[]);
        }
        let ranges = &self.commentable[index];
        Some(match side {
            Side::Left => &ranges.left,
            Side::Right => &ranges.right,
        })
    }
}

impl SideRanges {
    /// Collects a file's per-side ranges, sorted by first line.
    fn of(file: &FileDiff) -> Self {
        let mut left: Vec<LineRange> = file
            .hunks
            .iter()
            .filter_map(|hunk| hunk.range(Side::Left))
            .collect();
        let mut right: Vec<LineRange> = file
            .hunks
            .iter()
            .filter_map(|hunk| hunk.range(Side::Right))
            .collect();
        // Hunks are in order on each side already; a merged type change puts a
        // whole-file deletion before a whole-file addition, which is also in
        // order per side. Sorting keeps the binary search honest regardless.
        left.sort_unstable_by_key(|range| range.first);
        right.sort_unstable_by_key(|range| range.first);
        Self { left, right }
    }
}

/// One entry of GitHub's "list pull request files", in domain terms (the
/// adapter maps GitHub's JSON onto it; `review-core` never sees wire types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangedFile<'a> {
    /// The file's path: the new path, or the old path of a deleted file
    /// (GitHub's `filename`).
    pub path: &'a str,
    /// The path before a rename or copy (GitHub's `previous_filename`).
    pub previous_path: Option<&'a str>,
    /// What happened to the file (map GitHub's `status` with
    /// [`ChangeKind::from_github_status`]).
    pub change: ChangeKind,
    /// The hunks of the change, without file headers (GitHub's `patch`);
    /// `None` when GitHub omitted it (binary or very large files).
    pub patch: Option<&'a str>,
}

/// What a diff did to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A new file (`new file mode`, `--- /dev/null`; GitHub `added`).
    Added,
    /// A deleted file (`deleted file mode`, `+++ /dev/null`; GitHub `removed`).
    Deleted,
    /// A file changed in place (GitHub `modified`). Its mode may have changed
    /// too: compare [`FileDiff::old_mode`] and [`FileDiff::new_mode`].
    Modified,
    /// A renamed file, with or without content changes (GitHub `renamed`).
    Renamed,
    /// A copy of another file, with or without content changes (GitHub `copied`).
    Copied,
    /// Only the file's mode changed (e.g. made executable); no content change.
    ModeOnly,
    /// The file's type changed (regular file ↔ symlink). git shows this as a
    /// deletion plus an addition of the same path; the model merges them.
    TypeChanged,
}

impl ChangeKind {
    /// Maps GitHub's file `status` (`added`, `removed`, `modified`, `renamed`,
    /// `copied`, `changed`, `unchanged`) to a change kind; `None` for a status
    /// GitHub does not document.
    ///
    /// `changed` (GitHub's word for a mode or type change) becomes
    /// [`ChangeKind::ModeOnly`]; when its entry carries a patch, the file model
    /// records it as [`ChangeKind::Modified`]. `unchanged` becomes
    /// [`ChangeKind::Modified`] (with no hunks).
    pub fn from_github_status(status: &str) -> Option<Self> {
        Some(match status {
            "added" => Self::Added,
            "removed" => Self::Deleted,
            "modified" | "unchanged" => Self::Modified,
            "renamed" => Self::Renamed,
            "copied" => Self::Copied,
            "changed" => Self::ModeOnly,
            _ => return None,
        })
    }

    /// The word `git diff --name-status` prints for this kind, first letter
    /// only (`A`, `D`, `M`, `R`, `C`, `T`); a mode-only change is `M`.
    pub fn name_status_letter(self) -> char {
        match self {
            Self::Added => 'A',
            Self::Deleted => 'D',
            Self::Modified | Self::ModeOnly => 'M',
            Self::Renamed => 'R',
            Self::Copied => 'C',
            Self::TypeChanged => 'T',
        }
    }
}

/// A git file mode such as `100644` (regular), `100755` (executable),
/// `120000` (symlink) or `160000` (submodule). Stored as the number whose
/// octal digits git prints; displays and serialises as those digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileMode(pub u32);

impl FileMode {
    /// Whether the mode is an executable regular file (`100755`).
    pub fn is_executable(self) -> bool {
        self.0 == 0o100_755
    }

    /// Whether the mode is a symbolic link (`120000`).
    pub fn is_symlink(self) -> bool {
        self.0 == 0o120_000
    }

    /// Whether the mode is a submodule commit (`160000`).
    pub fn is_submodule(self) -> bool {
        self.0 == 0o160_000
    }
}

impl fmt::Display for FileMode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{:06o}", self.0)
    }
}

impl Serialize for FileMode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One changed file of a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDiff {
    /// The path GitHub names the file by, and the `path` of every review
    /// comment on it, either side: the new path, or the old path of a deleted
    /// file. Relative to the repository root, `/`-separated, unquoted.
    pub path: String,
    /// The path before a rename or copy; `None` otherwise.
    pub previous_path: Option<String>,
    /// What happened to the file.
    pub change: ChangeKind,
    /// git's `similarity index` for a rename or copy, in percent.
    pub similarity: Option<u8>,
    /// The mode before the change, when the diff says (git diffs do; GitHub's
    /// per-file entries do not).
    pub old_mode: Option<FileMode>,
    /// The mode after the change, when the diff says.
    pub new_mode: Option<FileMode>,
    /// Whether git reported the file as binary (`Binary files … differ` or a
    /// `GIT binary patch`). A binary file has no commentable lines.
    pub binary: bool,
    /// Whether the source left the content out (a GitHub entry without
    /// `patch`: binary or too large). Such a file has no commentable lines.
    pub content_omitted: bool,
    /// The hunks, in order; empty for binary files, pure renames, mode-only
    /// changes, empty new files and omitted content.
    pub hunks: Vec<Hunk>,
}

impl FileDiff {
    /// The old path: `None` for an added file.
    pub fn old_path(&self) -> Option<&str> {
        match self.change {
            ChangeKind::Added => None,
            _ => Some(self.previous_path.as_deref().unwrap_or(&self.path)),
        }
    }

    /// The new path: `None` for a deleted file.
    pub fn new_path(&self) -> Option<&str> {
        match self.change {
            ChangeKind::Deleted => None,
            _ => Some(&self.path),
        }
    }

    /// The commentable line ranges on `side`, one per hunk that has lines on
    /// that side, in order.
    pub fn commentable_ranges(&self, side: Side) -> impl Iterator<Item = LineRange> + '_ {
        self.hunks.iter().filter_map(move |hunk| hunk.range(side))
    }

    /// The number of added lines (what `git diff --numstat` counts first).
    pub fn added_lines(&self) -> usize {
        self.count_lines(LineKind::Added)
    }

    /// The number of removed lines (what `git diff --numstat` counts second).
    pub fn removed_lines(&self) -> usize {
        self.count_lines(LineKind::Removed)
    }

    fn count_lines(&self, kind: LineKind) -> usize {
        self.hunks
            .iter()
            .flat_map(|hunk| &hunk.lines)
            .filter(|line| line.kind == kind)
            .count()
    }

    /// Folds git's "added" half of a type change into this "deleted" half.
    fn merge_type_change(&mut self, added: Self) {
        self.change = ChangeKind::TypeChanged;
        self.new_mode = added.new_mode;
        self.binary |= added.binary;
        self.content_omitted |= added.content_omitted;
        self.hunks.extend(added.hunks);
    }
}

/// One hunk: a run of lines around a change, introduced by
/// `@@ -old_start,old_count +new_start,new_count @@ section`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    /// The first old-file line the hunk covers (the line before the change when
    /// `old_count` is 0, and 0 for a new file).
    pub old_start: u32,
    /// How many old-file lines (context and removed) the hunk holds.
    pub old_count: u32,
    /// The first new-file line the hunk covers (the line before the change when
    /// `new_count` is 0, and 0 for a deleted file).
    pub new_start: u32,
    /// How many new-file lines (context and added) the hunk holds.
    pub new_count: u32,
    /// The text after the closing `@@` (git's function context), without the
    /// separating space; empty when there is none.
    pub section: String,
    /// The hunk's lines, in order.
    pub lines: Vec<DiffLine>,
}

impl Hunk {
    /// The lines this hunk holds on `side` (old-file lines for LEFT, new-file
    /// lines for RIGHT), or `None` when it has none there (a new file's old
    /// side, a deleted file's new side, a pure insertion's old side).
    ///
    /// Every line in the range is commentable on that side: a hunk's new-side
    /// lines are exactly its context and added lines, numbered consecutively,
    /// and its old-side lines exactly its context and removed lines.
    pub fn range(&self, side: Side) -> Option<LineRange> {
        let (start, count) = match side {
            Side::Left => (self.old_start, self.old_count),
            Side::Right => (self.new_start, self.new_count),
        };
        (count > 0).then(|| LineRange {
            first: start,
            // The parser guarantees start + count - 1 fits in a u32.
            last: start.saturating_add(count - 1),
        })
    }
}

/// A kind of diff line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    /// An unchanged line shown for context (prefix ` `): on both sides.
    Context,
    /// A line only the new file has (prefix `+`): RIGHT side.
    Added,
    /// A line only the old file had (prefix `-`): LEFT side.
    Removed,
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffLine {
    /// Context, added or removed.
    pub kind: LineKind,
    /// The old-file line number (context and removed lines).
    pub old_line: Option<u32>,
    /// The new-file line number (context and added lines).
    pub new_line: Option<u32>,
    /// The content, without the prefix character and the terminating `\n`;
    /// a `\r` of a CRLF file is kept.
    pub text: String,
    /// Whether git marked this line `\ No newline at end of file`: it is the
    /// last line of its side's file and has no newline.
    pub no_newline_at_end: bool,
}

/// An inclusive range of line numbers on one side of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LineRange {
    /// The first line of the range.
    pub first: u32,
    /// The last line of the range (`>= first`).
    pub last: u32,
}

impl LineRange {
    /// Whether `line` is in the range.
    pub fn contains(self, line: u32) -> bool {
        self.first <= line && line <= self.last
    }

    /// How many lines `line` is away from the range (0 inside it).
    pub fn distance_to(self, line: u32) -> u32 {
        if line < self.first {
            self.first - line
        } else {
            line.saturating_sub(self.last)
        }
    }

    /// The line of the range nearest to `line`.
    pub fn nearest_line(self, line: u32) -> u32 {
        line.clamp(self.first, self.last)
    }
}

impl fmt::Display for LineRange {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(formatter, "{}", self.first)
        } else {
            write!(formatter, "{}-{}", self.first, self.last)
        }
    }
}
