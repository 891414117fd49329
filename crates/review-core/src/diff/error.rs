//! Errors of the diff model: where the input went wrong (a 1-based line) and
//! what was expected there.

use thiserror::Error;

/// A diff that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DiffError {
    /// A whole unified diff ([`super::PullRequestDiff::parse`]) is malformed.
    #[error("line {line} of the diff: {problem}")]
    Diff {
        /// The 1-based line of the input where the problem is.
        line: usize,
        /// What was wrong, and what was expected.
        problem: DiffProblem,
    },
    /// One file's `patch` ([`super::PullRequestDiff::from_changed_files`]) is
    /// malformed.
    #[error("line {line} of the patch of `{path}`: {problem}")]
    Patch {
        /// The file whose patch is malformed.
        path: String,
        /// The 1-based line of that patch where the problem is.
        line: usize,
        /// What was wrong, and what was expected.
        problem: DiffProblem,
    },
    /// The same path appears as two files of a unified diff (other than git's
    /// deletion + addition for a type change, which is merged).
    #[error(
        "`{path}` appears twice in the diff (file headers at lines {first_line} and {line}); \
         give the diff of one base and one head, as `git diff BASE...HEAD` prints it"
    )]
    DuplicatePath {
        /// The repeated path.
        path: String,
        /// The line of the first file header with that path.
        first_line: usize,
        /// The line of the second.
        line: usize,
    },
    /// The same path appears in two per-file entries.
    #[error("`{path}` is listed twice among the changed files (entries {first_entry} and {entry})")]
    DuplicateChangedFile {
        /// The repeated path.
        path: String,
        /// The 1-based position of the first entry with that path.
        first_entry: usize,
        /// The position of the second.
        entry: usize,
    },
}

impl DiffError {
    /// The 1-based input line (or entry position) the error points at.
    pub fn line(&self) -> usize {
        match self {
            Self::Diff { line, .. }
            | Self::Patch { line, .. }
            | Self::DuplicatePath { line, .. } => *line,
            Self::DuplicateChangedFile { entry, .. } => *entry,
        }
    }
}

/// What was wrong at the line a [`DiffError`] names.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DiffProblem {
    /// Something other than a file header where one was expected.
    #[error(
        "expected a file header (`diff --git a/PATH b/PATH`, or a `--- PATH` line followed by \
         `+++ PATH`), found {found:?}"
    )]
    ExpectedFileHeader {
        /// The offending line (shortened).
        found: String,
    },
    /// A combined diff of a merge commit.
    #[error(
        "combined diffs of merges (`diff --cc`, `@@@`) are not supported; diff the pull \
         request's base against its head (`git diff BASE...HEAD`) instead"
    )]
    CombinedDiff,
    /// A hunk header before any file header.
    #[error(
        "a hunk header before any file header: this looks like one file's patch (GitHub's \
         `patch` field), not a whole diff; give the whole `git diff` output, or build the diff \
         from per-file entries"
    )]
    HunkBeforeFileHeader,
    /// A `--- ` line not followed by `+++ `.
    #[error("expected a `+++ PATH` line after the `--- PATH` line, found {found:?}")]
    ExpectedNewFileLine {
        /// The offending line (shortened).
        found: String,
    },
    /// A path that cannot be read (bad quoting).
    #[error("cannot read the path {found:?}: {detail}")]
    InvalidPath {
        /// The path as written (shortened).
        found: String,
        /// What is wrong with it.
        detail: &'static str,
    },
    /// A `diff --git` line whose two paths cannot be told apart, in a file
    /// that has no other header naming them.
    #[error(
        "cannot read the two paths of this `diff --git` line (expected `diff --git a/PATH \
         b/PATH`), and no `---`/`+++` or rename/copy header names them"
    )]
    UnreadableDiffGitLine,
    /// Half of a rename or copy header pair.
    #[error("`{present}` without `{missing}` in the file's headers")]
    IncompleteRenameOrCopy {
        /// The header that is present.
        present: &'static str,
        /// The header that is missing.
        missing: &'static str,
    },
    /// Both sides are `/dev/null`.
    #[error("both the old and the new path are /dev/null")]
    BothSidesDevNull,
    /// A mode header with something other than an octal mode.
    #[error("expected an octal file mode such as 100644, found {found:?}")]
    InvalidMode {
        /// The offending text (shortened).
        found: String,
    },
    /// A similarity header with something other than a percentage.
    #[error("expected a similarity such as `87%` (0–100), found {found:?}")]
    InvalidSimilarity {
        /// The offending text (shortened).
        found: String,
    },
    /// A malformed hunk header.
    #[error("expected a hunk header `@@ -START[,COUNT] +START[,COUNT] @@`, found {found:?}")]
    InvalidHunkHeader {
        /// The offending line (shortened).
        found: String,
    },
    /// A hunk range whose last line does not fit in a line number.
    #[error("the hunk header's range is too large (its last line number exceeds {max})", max = u32::MAX)]
    HunkRangeTooLarge,
    /// A hunk side that starts at line 0 but claims lines.
    #[error(
        "the hunk header says the {side} side starts at line 0 but holds {count} lines; line \
         numbers start at 1"
    )]
    ZeroStartWithLines {
        /// `old` or `new`.
        side: &'static str,
        /// The declared count.
        count: u32,
    },
    /// A hunk that overlaps or precedes the previous hunk of the file.
    #[error(
        "this hunk overlaps or comes before the previous hunk of the file; hunks must be in file order"
    )]
    HunkOutOfOrder,
    /// The input ended inside a hunk.
    #[error(
        "the input ends inside the hunk that starts at line {header_line}: it still needs \
         {old_missing} old-file and {new_missing} new-file lines (was the diff truncated?)"
    )]
    UnexpectedEndOfHunk {
        /// The line of the hunk's header.
        header_line: usize,
        /// Old-side lines still expected.
        old_missing: u32,
        /// New-side lines still expected.
        new_missing: u32,
    },
    /// A line inside a hunk that is not a hunk line.
    #[error(
        "expected a hunk line starting with ` `, `+`, `-` or `\\` (the hunk that starts at line \
         {header_line} still needs {old_missing} old-file and {new_missing} new-file lines), \
         found {found:?}"
    )]
    UnexpectedHunkLine {
        /// The offending line (shortened).
        found: String,
        /// The line of the hunk's header.
        header_line: usize,
        /// Old-side lines still expected.
        old_missing: u32,
        /// New-side lines still expected.
        new_missing: u32,
    },
    /// A hunk line the hunk's header has no room for.
    #[error(
        "one {kind} line more than the hunk header at line {header_line} declares (it still \
         needs {old_missing} old-file and {new_missing} new-file lines); the header's counts are \
         wrong or the diff was edited by hand"
    )]
    TooManyHunkLines {
        /// `added`, `removed` or `context`.
        kind: &'static str,
        /// The line of the hunk's header.
        header_line: usize,
        /// Old-side lines still expected.
        old_missing: u32,
        /// New-side lines still expected.
        new_missing: u32,
    },
    /// A hunk line after a hunk that already has all its lines.
    #[error(
        "this looks like a hunk line, but the hunk that starts at line {header_line} already has \
         all the lines its header declares; the header's counts are wrong or the diff was \
         edited by hand"
    )]
    LineAfterCompleteHunk {
        /// The line of the hunk's header.
        header_line: usize,
    },
    /// A `\ No newline at end of file` marker that follows no line, or follows
    /// another marker.
    #[error("`\\ No newline at end of file` must directly follow a hunk line")]
    MisplacedNoNewlineMarker,
    /// A line on a side after that side's line marked `\ No newline at end of
    /// file` (which must be the side's last line).
    #[error(
        "a line after the one marked `\\ No newline at end of file`, which must be the last \
         line of its file"
    )]
    LineAfterNoNewlineMarker,
    /// A line inside a `GIT binary patch` that is not part of one.
    #[error(
        "expected a line of a `GIT binary patch` (`literal N`, `delta N`, a base85 data line or \
         an empty line), found {found:?}"
    )]
    InvalidBinaryPatch {
        /// The offending line (shortened).
        found: String,
    },
    /// Something after a file's headers or hunks that belongs to neither.
    #[error(
        "expected a hunk header (`@@ -START,COUNT +START,COUNT @@`), the next file's `diff --git` \
         line, or the end of the diff; found {found:?}"
    )]
    ExpectedHunkOrNextFile {
        /// The offending line (shortened).
        found: String,
    },
    /// Something after a GitHub `patch`'s hunks that is not a hunk.
    #[error(
        "expected a hunk header (`@@ -START,COUNT +START,COUNT @@`) or the end of the patch, found {found:?}"
    )]
    ExpectedHunkOrEndOfPatch {
        /// The offending line (shortened).
        found: String,
    },
    /// A GitHub `patch` that does not start with a hunk header.
    #[error(
        "a file's `patch` must start with a hunk header `@@ -START,COUNT +START,COUNT @@`, found {found:?}"
    )]
    ExpectedHunkHeader {
        /// The offending line (shortened).
        found: String,
    },
}

/// The offending line as shown in an error: at most 80 characters.
pub(super) fn excerpt(line: &str) -> String {
    const LIMIT: usize = 80;
    match line.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}
