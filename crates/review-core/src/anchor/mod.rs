//! Line anchoring: can GitHub take an inline review comment at this place of
//! the pull request's diff, and if not, where should it go instead?
//!
//! GitHub rejects a whole review (422 "Pull request review thread line must be
//! part of the diff") when one of its comments is not on a line of the diff, so
//! every comment is checked here before posting (DESIGN.md invariant 6). For a
//! [`CommentLocation`] `(path, line, start_line?, side)`, [`anchor`] returns one
//! [`Verdict`]:
//!
//! - **`inline`** — post as given. On `RIGHT`, `line` is a new-file line of an
//!   added or context line inside a hunk; on `LEFT`, an old-file line of a
//!   removed or context line inside a hunk. For a range, `start_line` is in the
//!   same hunk and before `line`.
//! - **`moved`** — `line` is not commentable but lies within 3 lines of exactly
//!   one hunk of that file (on that side): the comment moves to the nearest
//!   commentable line of that hunk. A range whose `start_line` leaves the hunk
//!   is clamped to the hunk's first commentable line. The verdict carries the
//!   new place; the caller keeps the original to say where the comment was
//!   meant to be.
//! - **`outside_diff`** — the file is in the pull request but the line is not
//!   commentable and cannot be moved: farther than 3 lines from every hunk, or
//!   within 3 lines of two hunks (ambiguous), or a file side with no lines at
//!   all (binary files, omitted content, a deleted file's RIGHT side, a new
//!   file's LEFT side, mode-only changes, pure renames, a name two files share
//!   once their non-UTF-8 bytes are replaced), or line 0.
//! - **`not_in_pr`** — after [`normalize_path`] (which strips `./`), the path is
//!   not a file of the pull request, or it is unusable (empty, absolute, `..`,
//!   NUL). A miss whose path holds a control character, a backslash or a drive
//!   letter says so ([`path_mistake`]); a file of the pull request whose real
//!   name holds them (git can store any byte but NUL and `/` in a name) anchors
//!   like any other.
//!
//! `outside_diff` and `not_in_pr` comments are never dropped: the review body
//! lists them ("Outside the diff"). Every verdict that is not inline carries a
//! reason whose message says what to do, for the MCP server's corrective errors;
//! [`nearest_commentable_ranges`] lists where a comment could go.
//!
//! ## Decisions where GitHub or the issue is silent
//!
//! - **`start_line == line`**: GitHub answers 422 ("start line must precede the
//!   end line"), so the range is dropped and the comment is a single-line
//!   `inline` comment at `line` (it covers the same line).
//! - **`start_line > line`**: the range is reversed; it is swapped so it covers
//!   the same lines (`line` becomes the larger number), then checked like any
//!   range. The verdict is `moved`, since the comment now sits at another line.
//! - **`start_line` on the other side** is not expressible: a location has one
//!   `side`, used for both ends (`start_side == side` when posting).
//! - **Renamed and copied files**: GitHub names the file by its new path on
//!   both sides, so a `LEFT` comment on a renamed file uses the new path and an
//!   old-file line number. A comment on the old path is `not_in_pr`, with a
//!   reason naming the new path.
//! - **Binary files** are in the pull request but have no commentable lines.
//! - **Line 0** is never commentable and never moved (`outside_diff`).
//!
//! ## Speed
//!
//! The diff's index maps each path to its file in a hash map, and holds each
//! file's commentable ranges per side, sorted; a line is located by binary
//! search over them. Every hunk's lines on one side are consecutive and all
//! commentable, so a range per hunk is all the index needs.

mod path;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::diff::{ChangeKind, FileDiff, LineRange, PullRequestDiff};

pub use path::{PathProblem, normalize_path, path_mistake};

/// How far (in lines) from a hunk a comment may be and still be moved onto it.
pub const MOVE_DISTANCE: u32 = 3;

/// The side of the diff a comment is on: GitHub's `side` (and `start_side`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Side {
    /// The old file: removed and context lines, numbered as in the base.
    #[serde(rename = "LEFT")]
    Left,
    /// The new file: added and context lines, numbered as in the head.
    #[default]
    #[serde(rename = "RIGHT")]
    Right,
}

impl Side {
    /// `"LEFT"` or `"RIGHT"`, as GitHub spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Left => "LEFT",
            Self::Right => "RIGHT",
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// Where a comment wants to go: GitHub's `path`, `line`, `start_line`, `side`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CommentLocation {
    /// The file, relative to the repository root (normalised by [`anchor`]).
    pub path: String,
    /// The line the comment is on (the last line of a range).
    pub line: u32,
    /// The first line of a multi-line comment; `None` for one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    /// The side both `line` and `start_line` are on.
    #[serde(default)]
    pub side: Side,
}

impl CommentLocation {
    /// A single-line location on the RIGHT side.
    pub fn new(path: impl Into<String>, line: u32) -> Self {
        Self {
            path: path.into(),
            line,
            start_line: None,
            side: Side::Right,
        }
    }

    /// The same location as a range starting at `start_line`.
    #[must_use]
    pub fn with_start_line(mut self, start_line: u32) -> Self {
        self.start_line = Some(start_line);
        self
    }

    /// The same location on `side`.
    #[must_use]
    pub fn on_side(mut self, side: Side) -> Self {
        self.side = side;
        self
    }
}

/// The anchoring decision for one comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Post at exactly these values.
    Inline {
        /// The normalised path to post with.
        path: String,
        /// The line to post at.
        line: u32,
        /// The range's first line, if the comment is a range.
        start_line: Option<u32>,
    },
    /// Not commentable where asked; post at these values instead (and say
    /// where it was meant to be).
    Moved {
        /// The normalised path to post with.
        path: String,
        /// The line to post at.
        line: u32,
        /// The range's first line, if the comment is still a range.
        start_line: Option<u32>,
    },
    /// The file is in the pull request, but the comment cannot be inline: it
    /// goes into the review body.
    OutsideDiff {
        /// Why.
        reason: OutsideDiffReason,
    },
    /// The path is not a file of the pull request, or is unsafe: the comment
    /// goes into the review body.
    NotInPr {
        /// Why.
        reason: NotInPrReason,
    },
}

impl Verdict {
    /// The verdict's name as the `findings validate --json` output spells it:
    /// `inline`, `moved`, `outside_diff` or `not_in_pr`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Inline { .. } => "inline",
            Self::Moved { .. } => "moved",
            Self::OutsideDiff { .. } => "outside_diff",
            Self::NotInPr { .. } => "not_in_pr",
        }
    }

    /// Where to post inline — `(path, line, start_line)` — for `inline` and
    /// `moved`; `None` when the comment belongs in the review body.
    pub fn target(&self) -> Option<(&str, u32, Option<u32>)> {
        match self {
            Self::Inline {
                path,
                line,
                start_line,
            }
            | Self::Moved {
                path,
                line,
                start_line,
            } => Some((path, *line, *start_line)),
            Self::OutsideDiff { .. } | Self::NotInPr { .. } => None,
        }
    }

    /// Whether the comment can be posted inline (as given or moved).
    pub fn is_postable_inline(&self) -> bool {
        self.target().is_some()
    }
}

/// Why a comment on a file of the pull request cannot be inline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutsideDiffReason {
    /// The file has no commentable lines on that side at all.
    NoCommentableLines {
        /// The side asked for.
        side: Side,
        /// Why that side has no lines.
        cause: NoLinesCause,
    },
    /// Line 0 (lines are numbered from 1).
    InvalidLine,
    /// More than [`MOVE_DISTANCE`] lines from every hunk.
    NotNearAHunk {
        /// The side asked for.
        side: Side,
        /// The commentable range nearest to the line.
        nearest: LineRange,
    },
    /// Within [`MOVE_DISTANCE`] lines of two hunks: moving would be a guess.
    BetweenHunks {
        /// The side asked for.
        side: Side,
        /// The commentable range just before the line.
        before: LineRange,
        /// The commentable range just after it.
        after: LineRange,
    },
}

/// Why a file has no commentable lines on a side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoLinesCause {
    /// A binary file.
    Binary,
    /// The source left the content out (GitHub omits `patch` for binary and
    /// very large files).
    ContentOmitted,
    /// A deleted file's new side.
    DeletedFile,
    /// A new file's old side.
    AddedFile,
    /// No content change: a mode-only change, a pure rename or copy, an empty
    /// new file.
    NoContentChange,
    /// The hunks have no lines on that side (only additions, or only
    /// removals).
    NoLinesOnSide,
    /// Two files of the pull request have this name once bytes that are not
    /// UTF-8 are replaced with U+FFFD: a comment cannot say which one it means.
    AmbiguousName,
}

impl fmt::Display for OutsideDiffReason {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoCommentableLines { side, cause } => match cause {
                NoLinesCause::Binary => {
                    write!(
                        formatter,
                        "the file is binary: it has no lines to comment on"
                    )
                }
                NoLinesCause::ContentOmitted => write!(
                    formatter,
                    "GitHub did not include this file's changes (binary or too large): no line \
                     of it can take a comment"
                ),
                NoLinesCause::DeletedFile => write!(
                    formatter,
                    "the file is deleted: only LEFT (old-file) lines can take comments, not {side}"
                ),
                NoLinesCause::AddedFile => write!(
                    formatter,
                    "the file is new: only RIGHT (new-file) lines can take comments, not {side}"
                ),
                NoLinesCause::NoContentChange => write!(
                    formatter,
                    "the file's content did not change (mode change, pure rename or empty file): \
                     it has no lines to comment on"
                ),
                NoLinesCause::AmbiguousName => write!(
                    formatter,
                    "two files of the pull request have this name once their bytes that are not \
                     UTF-8 are shown as U+FFFD, so a comment cannot say which one it means; the \
                     finding is listed in the review body"
                ),
                NoLinesCause::NoLinesOnSide => {
                    let other = match side {
                        Side::Left => Side::Right,
                        Side::Right => Side::Left,
                    };
                    write!(
                        formatter,
                        "the file's hunks have no {side} lines; comment on {other} lines instead"
                    )
                }
            },
            Self::InvalidLine => write!(formatter, "line 0 does not exist; lines start at 1"),
            Self::NotNearAHunk { side, nearest } => write!(
                formatter,
                "the line is not part of the diff and more than {MOVE_DISTANCE} lines from any \
                 hunk; the nearest commentable {side} lines are {nearest}"
            ),
            Self::BetweenHunks {
                side,
                before,
                after,
            } => write!(
                formatter,
                "the line is not part of the diff and within {MOVE_DISTANCE} lines of two hunks \
                 ({side} lines {before} and {after}); pick a line in one of them"
            ),
        }
    }
}

impl Serialize for OutsideDiffReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Why a comment's path is not a file of the pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotInPrReason {
    /// The path is unsafe or unusable.
    UnsafePath(PathProblem),
    /// The pull request does not change this file.
    NotChanged {
        /// The normalised path.
        path: String,
    },
    /// The path is the old name of a renamed file (or the source of a copy);
    /// comments use the new name on both sides.
    PreviousPathOf {
        /// The file's path in the pull request.
        path: String,
        /// Renamed or copied.
        change: ChangeKind,
    },
}

impl fmt::Display for NotInPrReason {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsafePath(problem) => write!(formatter, "{problem}"),
            Self::NotChanged { path } => write!(
                formatter,
                "`{path}` is not a file this pull request changes; comment only on changed files"
            ),
            Self::PreviousPathOf { path, change } => {
                let verb = if *change == ChangeKind::Copied {
                    "copied"
                } else {
                    "renamed"
                };
                write!(
                    formatter,
                    "this is the old name of a file {verb} to `{path}` in this pull request; \
                     comment on `{path}` (GitHub uses the new name on both sides)"
                )
            }
        }
    }
}

impl Serialize for NotInPrReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Decides where (and whether) a comment can be posted inline. See the module
/// documentation for the rules.
pub fn anchor(diff: &PullRequestDiff, location: &CommentLocation) -> Verdict {
    let side = location.side;
    let (path, ranges) = match file_ranges(diff, &location.path, side) {
        Ok(found) => found,
        Err(reason) => return Verdict::NotInPr { reason },
    };
    if ranges.is_empty() {
        let cause = diff
            .file(&path)
            .map_or(NoLinesCause::NoContentChange, |file| {
                no_lines_cause(diff, file, side)
            });
        return Verdict::OutsideDiff {
            reason: OutsideDiffReason::NoCommentableLines { side, cause },
        };
    }
    if location.line == 0 {
        return Verdict::OutsideDiff {
            reason: OutsideDiffReason::InvalidLine,
        };
    }

    // Normalise the range: equal ends are one line, reversed ends are swapped.
    let (mut line, start_line, mut moved) = match location.start_line {
        Some(start) if start == location.line => (location.line, None, false),
        Some(start) if start > location.line => (start, Some(location.line), true),
        start => (location.line, start, false),
    };

    let index = ranges.partition_point(|range| range.last < line);
    let hunk = match ranges.get(index) {
        Some(&range) if range.first <= line => range,
        after => {
            let near = |range: &&LineRange| range.distance_to(line) <= MOVE_DISTANCE;
            let before = index
                .checked_sub(1)
                .and_then(|previous| ranges.get(previous));
            match (before.filter(near), after.filter(near)) {
                (Some(&before), Some(&after)) => {
                    return Verdict::OutsideDiff {
                        reason: OutsideDiffReason::BetweenHunks {
                            side,
                            before,
                            after,
                        },
                    };
                }
                (Some(&range), None) | (None, Some(&range)) => {
                    line = range.nearest_line(line);
                    moved = true;
                    range
                }
                (None, None) => {
                    let nearest = before
                        .into_iter()
                        .chain(after)
                        .min_by_key(|range| range.distance_to(line))
                        .copied()
                        .unwrap_or(ranges[0]);
                    return Verdict::OutsideDiff {
                        reason: OutsideDiffReason::NotNearAHunk { side, nearest },
                    };
                }
            }
        }
    };

    // A range must start in the same hunk, before `line`.
    let start_line = start_line.and_then(|start| {
        let clamped = if hunk.contains(start) {
            start
        } else {
            hunk.first
        };
        if clamped != start {
            moved = true;
        }
        (clamped < line).then_some(clamped)
    });

    if moved {
        Verdict::Moved {
            path,
            line,
            start_line,
        }
    } else {
        Verdict::Inline {
            path,
            line,
            start_line,
        }
    }
}

/// The commentable line ranges of `path` on `side`, nearest to `line` first
/// (ties: the earlier range first), at most `limit` of them: what a corrective
/// error message offers ("nearest commentable lines: 60-75, 40-52").
///
/// An empty list means the file is in the pull request but has no commentable
/// lines on that side.
pub fn nearest_commentable_ranges(
    diff: &PullRequestDiff,
    path: &str,
    line: u32,
    side: Side,
    limit: usize,
) -> Result<Vec<LineRange>, NotInPrReason> {
    let (_, ranges) = file_ranges(diff, path, side)?;
    let mut nearest = ranges.to_vec();
    nearest.sort_by_key(|range| (range.distance_to(line), range.first));
    nearest.truncate(limit);
    Ok(nearest)
}

/// Normalises `raw_path` and finds the file's commentable ranges on `side`.
fn file_ranges<'d>(
    diff: &'d PullRequestDiff,
    raw_path: &str,
    side: Side,
) -> Result<(String, &'d [LineRange]), NotInPrReason> {
    let path = normalize_path(raw_path).map_err(NotInPrReason::UnsafePath)?;
    if let Some(ranges) = diff.commentable_ranges(&path, side) {
        return Ok((path, ranges));
    }
    // Stray white space around a path (` src/a.rs\n`) is forgiven when the
    // path as given is no file (a name may really start or end with a space).
    let trimmed = raw_path.trim();
    if trimmed != raw_path
        && let Ok(trimmed) = normalize_path(trimmed)
        && let Some(ranges) = diff.commentable_ranges(&trimmed, side)
    {
        return Ok((trimmed, ranges));
    }
    Err(match diff.file_by_previous_path(&path) {
        Some(file) => NotInPrReason::PreviousPathOf {
            path: file.path.clone(),
            change: file.change,
        },
        None => match path_mistake(&path) {
            Some(problem) => NotInPrReason::UnsafePath(problem),
            None => NotInPrReason::NotChanged { path },
        },
    })
}

/// Why `file` has no commentable lines on `side`.
fn no_lines_cause(diff: &PullRequestDiff, file: &FileDiff, side: Side) -> NoLinesCause {
    if diff.is_ambiguous(&file.path) {
        NoLinesCause::AmbiguousName
    } else if file.binary {
        NoLinesCause::Binary
    } else if file.content_omitted {
        NoLinesCause::ContentOmitted
    } else if file.change == ChangeKind::Deleted && side == Side::Right {
        NoLinesCause::DeletedFile
    } else if file.change == ChangeKind::Added && side == Side::Left {
        NoLinesCause::AddedFile
    } else if file.hunks.is_empty() {
        NoLinesCause::NoContentChange
    } else {
        NoLinesCause::NoLinesOnSide
    }
}
