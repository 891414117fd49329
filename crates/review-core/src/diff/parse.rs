//! The unified-diff parser behind [`super::PullRequestDiff::parse`] and
//! [`super::PullRequestDiff::from_changed_files`].
//!
//! A line-oriented state machine over the input: file headers (git's
//! `diff --git` line and extended headers, or plain `---`/`+++` lines), then
//! hunks, each read exactly as far as its header's counts say. After a file,
//! only the next file's header or the end of the input may follow; anything
//! else is an error naming its line.

use super::error::{DiffError, DiffProblem, excerpt};
use super::quoted;
use super::{ChangeKind, ChangedFile, DiffLine, FileDiff, FileMode, Hunk, LineKind};

/// A problem at a 1-based line, before it is put in context (whole diff or one
/// file's patch).
type Failure = (usize, DiffProblem);

/// The input's lines with `\n` removed (a `\r` before it is kept: it is
/// content), and a cursor.
struct Lines<'a> {
    /// Every line of the input.
    lines: Vec<&'a str>,
    /// The index of the next line to read.
    next: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        let mut lines: Vec<&str> = text.split('\n').collect();
        // A final `\n` ends the last line; it does not start an empty one.
        if text.is_empty() || text.ends_with('\n') {
            lines.pop();
        }
        Self { lines, next: 0 }
    }

    /// The next line, not consumed.
    fn peek(&self) -> Option<&'a str> {
        self.lines.get(self.next).copied()
    }

    /// The line after the next one, not consumed.
    fn peek_second(&self) -> Option<&'a str> {
        self.lines.get(self.next + 1).copied()
    }

    /// The 1-based number of the line [`Self::peek`] returns.
    fn number(&self) -> usize {
        self.next + 1
    }

    fn advance(&mut self) {
        self.next += 1;
    }

    /// Whether every line left is empty (trailing blank lines are tolerated).
    fn rest_is_blank(&self) -> bool {
        self.lines[self.next.min(self.lines.len())..]
            .iter()
            .all(|line| line.is_empty())
    }
}

/// Parses a whole unified diff into files, each with the line of its header.
pub(super) fn parse_unified(text: &str) -> Result<Vec<(usize, FileDiff)>, DiffError> {
    parse_files(&mut Lines::new(text)).map_err(|(line, problem)| DiffError::Diff { line, problem })
}

fn parse_files(lines: &mut Lines<'_>) -> Result<Vec<(usize, FileDiff)>, Failure> {
    let mut files = Vec::new();
    while let Some(line) = lines.peek() {
        let number = lines.number();
        if line.is_empty() && lines.rest_is_blank() {
            break;
        }
        let file = if line.starts_with("diff --git ") {
            parse_git_file(lines)?
        } else if is_plain_file_header(lines) {
            parse_plain_file(lines)?
        } else if line.starts_with("diff --cc ") || line.starts_with("diff --combined ") {
            return Err((number, DiffProblem::CombinedDiff));
        } else if files.is_empty() && line.starts_with("@@") {
            return Err((number, DiffProblem::HunkBeforeFileHeader));
        } else {
            return Err((
                number,
                DiffProblem::ExpectedFileHeader {
                    found: excerpt(line),
                },
            ));
        };
        files.push((number, file));
    }
    Ok(files)
}

/// Whether the next two lines are a plain unified diff's `---`/`+++` pair.
fn is_plain_file_header(lines: &Lines<'_>) -> bool {
    lines.peek().is_some_and(|line| line.starts_with("--- "))
        && lines
            .peek_second()
            .is_some_and(|line| line.starts_with("+++ "))
}

/// What git's extended headers (between `diff --git` and `---`) said.
#[derive(Default)]
struct GitHeaders {
    /// `new file mode`.
    created: bool,
    /// `deleted file mode`.
    deleted: bool,
    old_mode: Option<FileMode>,
    new_mode: Option<FileMode>,
    /// The mode on an `index` line (unchanged mode).
    index_mode: Option<FileMode>,
    rename_from: Option<String>,
    rename_to: Option<String>,
    copy_from: Option<String>,
    copy_to: Option<String>,
    similarity: Option<u8>,
    binary: bool,
}

/// Parses one file that starts with a `diff --git` line.
fn parse_git_file(lines: &mut Lines<'_>) -> Result<FileDiff, Failure> {
    let header_line = lines.number();
    let diff_git = lines.peek().unwrap_or_default();
    let diff_git_paths = quoted::split_diff_git_paths(&diff_git["diff --git ".len()..]);
    lines.advance();

    let headers = parse_extended_headers(lines)?;
    // Inside a git file's headers a `--- ` line can only be the old path, so a
    // missing `+++ ` after it is reported as such.
    let names = if lines.peek().is_some_and(|line| line.starts_with("--- ")) {
        Some(parse_minus_plus(lines)?)
    } else {
        None
    };
    let hunks = parse_hunks(lines)?;
    expect_file_end(lines, &hunks)?;

    let problem_here = |problem| (header_line, problem);
    let (old_path, new_path, change) = if headers.rename_from.is_some()
        || headers.rename_to.is_some()
    {
        let (from, to) =
            pair(headers.rename_from, headers.rename_to, "rename").map_err(problem_here)?;
        (Some(from), Some(to), ChangeKind::Renamed)
    } else if headers.copy_from.is_some() || headers.copy_to.is_some() {
        let (from, to) = pair(headers.copy_from, headers.copy_to, "copy").map_err(problem_here)?;
        (Some(from), Some(to), ChangeKind::Copied)
    } else {
        let (old, new) = if let Some(names) = names {
            names
        } else {
            let (old, new) =
                diff_git_paths.ok_or((header_line, DiffProblem::UnreadableDiffGitLine))?;
            let (old_prefix, new_prefix) = quoted::prefixes(&old, &new);
            let (old_prefix, new_prefix) = (old_prefix.to_owned(), new_prefix.to_owned());
            (
                (!headers.created).then(|| quoted::strip_prefix(old, &old_prefix)),
                (!headers.deleted).then(|| quoted::strip_prefix(new, &new_prefix)),
            )
        };
        let change = if headers.created || old.is_none() {
            ChangeKind::Added
        } else if headers.deleted || new.is_none() {
            ChangeKind::Deleted
        } else if hunks.is_empty()
            && !headers.binary
            && headers.old_mode.is_some()
            && headers.new_mode.is_some()
            && headers.old_mode != headers.new_mode
        {
            ChangeKind::ModeOnly
        } else {
            ChangeKind::Modified
        };
        (old, new, change)
    };

    let (path, previous_path) = match (old_path, new_path) {
        (None, None) => return Err((header_line, DiffProblem::BothSidesDevNull)),
        (Some(old), None) => (old, None),
        (None, Some(new)) => (new, None),
        (Some(old), Some(new)) => match change {
            ChangeKind::Renamed | ChangeKind::Copied => (new, Some(old)),
            _ => (new, None),
        },
    };
    let old_mode = headers.old_mode.or((change != ChangeKind::Added)
        .then_some(headers.index_mode)
        .flatten());
    let new_mode = headers.new_mode.or((change != ChangeKind::Deleted)
        .then_some(headers.index_mode)
        .flatten());
    Ok(FileDiff {
        path,
        previous_path,
        change,
        similarity: headers.similarity,
        old_mode,
        new_mode,
        binary: headers.binary,
        content_omitted: false,
        hunks: hunks.into_iter().map(|(_, hunk)| hunk).collect(),
    })
}

/// Both halves of a `rename from`/`rename to` (or copy) pair.
fn pair(
    from: Option<String>,
    to: Option<String>,
    what: &'static str,
) -> Result<(String, String), DiffProblem> {
    let (from_header, to_header) = if what == "rename" {
        ("rename from", "rename to")
    } else {
        ("copy from", "copy to")
    };
    match (from, to) {
        (Some(from), Some(to)) => Ok((from, to)),
        (Some(_), None) => Err(DiffProblem::IncompleteRenameOrCopy {
            present: from_header,
            missing: to_header,
        }),
        _ => Err(DiffProblem::IncompleteRenameOrCopy {
            present: to_header,
            missing: from_header,
        }),
    }
}

/// Reads git's extended header lines, stopping at the first line that is not
/// one (usually `---`, or the next file's `diff --git`).
fn parse_extended_headers(lines: &mut Lines<'_>) -> Result<GitHeaders, Failure> {
    let mut headers = GitHeaders::default();
    while let Some(line) = lines.peek() {
        let number = lines.number();
        let at = |problem| (number, problem);
        let value = line.strip_suffix('\r').unwrap_or(line);
        if let Some(mode) = value.strip_prefix("old mode ") {
            headers.old_mode = Some(parse_mode(mode).map_err(at)?);
        } else if let Some(mode) = value.strip_prefix("new mode ") {
            headers.new_mode = Some(parse_mode(mode).map_err(at)?);
        } else if let Some(mode) = value.strip_prefix("deleted file mode ") {
            headers.deleted = true;
            headers.old_mode = Some(parse_mode(mode).map_err(at)?);
        } else if let Some(mode) = value.strip_prefix("new file mode ") {
            headers.created = true;
            headers.new_mode = Some(parse_mode(mode).map_err(at)?);
        } else if let Some(path) = value.strip_prefix("rename from ") {
            headers.rename_from = Some(header_value_path(path).map_err(at)?);
        } else if let Some(path) = value.strip_prefix("rename to ") {
            headers.rename_to = Some(header_value_path(path).map_err(at)?);
        } else if let Some(path) = value.strip_prefix("copy from ") {
            headers.copy_from = Some(header_value_path(path).map_err(at)?);
        } else if let Some(path) = value.strip_prefix("copy to ") {
            headers.copy_to = Some(header_value_path(path).map_err(at)?);
        } else if let Some(percent) = value.strip_prefix("similarity index ") {
            headers.similarity = Some(parse_percent(percent).map_err(at)?);
        } else if let Some(percent) = value.strip_prefix("dissimilarity index ") {
            parse_percent(percent).map_err(at)?;
        } else if let Some(index) = value.strip_prefix("index ") {
            // `index 1a2b3c4..5d6e7f8 100644`: the mode is there when unchanged.
            if let Some((_, mode)) = index.split_once(' ') {
                headers.index_mode = Some(parse_mode(mode).map_err(at)?);
            }
        } else if value.starts_with("Binary files ") {
            headers.binary = true;
        } else if value == "GIT binary patch" {
            headers.binary = true;
            lines.advance();
            skip_binary_patch(lines)?;
            continue;
        } else {
            break;
        }
        lines.advance();
    }
    Ok(headers)
}

fn header_value_path(text: &str) -> Result<String, DiffProblem> {
    quoted::header_value_path(text).map_err(|detail| DiffProblem::InvalidPath {
        found: excerpt(text),
        detail,
    })
}

fn parse_mode(text: &str) -> Result<FileMode, DiffProblem> {
    let invalid = || DiffProblem::InvalidMode {
        found: excerpt(text),
    };
    if text.is_empty() || text.len() > 7 || !text.bytes().all(|byte| (b'0'..=b'7').contains(&byte))
    {
        return Err(invalid());
    }
    u32::from_str_radix(text, 8)
        .map(FileMode)
        .map_err(|_| invalid())
}

fn parse_percent(text: &str) -> Result<u8, DiffProblem> {
    text.strip_suffix('%')
        .filter(|digits| !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit()))
        .and_then(|digits| digits.parse::<u8>().ok())
        .filter(|percent| *percent <= 100)
        .ok_or_else(|| DiffProblem::InvalidSimilarity {
            found: excerpt(text),
        })
}

/// Skips the payload of a `GIT binary patch`: `literal N` / `delta N` lines,
/// base85 data lines (a length letter, then groups of five characters) and
/// blank separators, up to the next file or the end.
fn skip_binary_patch(lines: &mut Lines<'_>) -> Result<(), Failure> {
    while let Some(line) = lines.peek() {
        if line.starts_with("diff --git ") || is_plain_file_header(lines) {
            break;
        }
        let value = line.strip_suffix('\r').unwrap_or(line);
        let is_size_line = ["literal ", "delta "].iter().any(|keyword| {
            value.strip_prefix(keyword).is_some_and(|digits| {
                !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit())
            })
        });
        if !(value.is_empty() || is_size_line || is_base85_data_line(value)) {
            return Err((
                lines.number(),
                DiffProblem::InvalidBinaryPatch {
                    found: excerpt(line),
                },
            ));
        }
        lines.advance();
    }
    Ok(())
}

fn is_base85_data_line(line: &str) -> bool {
    let bytes = line.as_bytes();
    let Some((&length, data)) = bytes.split_first() else {
        return false;
    };
    length.is_ascii_alphabetic()
        && !data.is_empty()
        && data.len() % 5 == 0
        && data
            .iter()
            .all(|&byte| byte.is_ascii_alphanumeric() || b"!#$%&()*+-;<=>?@^_`{|}~".contains(&byte))
}

/// Reads a `---`/`+++` pair; returns the old and new path (`None` for
/// `/dev/null`) with git's `a/` and `b/` prefixes removed.
fn parse_minus_plus(lines: &mut Lines<'_>) -> Result<(Option<String>, Option<String>), Failure> {
    let mut read = |prefix: &str| -> Result<Option<String>, Failure> {
        let number = lines.number();
        let line = lines.peek().unwrap_or_default();
        let Some(text) = line.strip_prefix(prefix) else {
            return Err((
                number,
                DiffProblem::ExpectedNewFileLine {
                    found: excerpt(line),
                },
            ));
        };
        let path = quoted::header_path(text).map_err(|detail| {
            (
                number,
                DiffProblem::InvalidPath {
                    found: excerpt(text),
                    detail,
                },
            )
        })?;
        lines.advance();
        Ok(path)
    };
    let old = read("--- ")?;
    let new = read("+++ ")?;
    Ok(match (old, new) {
        (Some(old), Some(new)) => {
            let (old_prefix, new_prefix) = quoted::prefixes(&old, &new);
            let (old_prefix, new_prefix) = (old_prefix.to_owned(), new_prefix.to_owned());
            (
                Some(quoted::strip_prefix(old, &old_prefix)),
                Some(quoted::strip_prefix(new, &new_prefix)),
            )
        }
        (Some(old), None) => (Some(quoted::strip_prefix(old, "a/")), None),
        (None, Some(new)) => (None, Some(quoted::strip_prefix(new, "b/"))),
        (None, None) => (None, None),
    })
}

/// Parses one file of a plain unified diff (no `diff --git` line).
fn parse_plain_file(lines: &mut Lines<'_>) -> Result<FileDiff, Failure> {
    let header_line = lines.number();
    let (old, new) = parse_minus_plus(lines)?;
    let hunks = parse_hunks(lines)?;
    expect_file_end(lines, &hunks)?;
    let (path, previous_path, change) = match (old, new) {
        (None, None) => return Err((header_line, DiffProblem::BothSidesDevNull)),
        (None, Some(new)) => (new, None, ChangeKind::Added),
        (Some(old), None) => (old, None, ChangeKind::Deleted),
        (Some(old), Some(new)) if old == new => (new, None, ChangeKind::Modified),
        (Some(old), Some(new)) => (new, Some(old), ChangeKind::Renamed),
    };
    Ok(FileDiff {
        path,
        previous_path,
        change,
        similarity: None,
        old_mode: None,
        new_mode: None,
        binary: false,
        content_omitted: false,
        hunks: hunks.into_iter().map(|(_, hunk)| hunk).collect(),
    })
}

/// After a file: the input must end (blank lines allowed) or the next file
/// must start.
fn expect_file_end(lines: &Lines<'_>, hunks: &[(usize, Hunk)]) -> Result<(), Failure> {
    let Some(line) = lines.peek() else {
        return Ok(());
    };
    if line.starts_with("diff --") || is_plain_file_header(lines) || lines.rest_is_blank() {
        return Ok(());
    }
    Err((lines.number(), after_last_hunk(line, hunks)))
}

/// The problem with an unexpected `line` after a file's (or patch's) hunks.
fn after_last_hunk(line: &str, hunks: &[(usize, Hunk)]) -> DiffProblem {
    match hunks.last() {
        Some(&(header_line, _)) if line.starts_with([' ', '+', '-', '\\']) || line.is_empty() => {
            DiffProblem::LineAfterCompleteHunk { header_line }
        }
        _ => DiffProblem::ExpectedHunkOrNextFile {
            found: excerpt(line),
        },
    }
}

/// Reads consecutive hunks, each with the line of its header; checks they are
/// in order on both sides.
fn parse_hunks(lines: &mut Lines<'_>) -> Result<Vec<(usize, Hunk)>, Failure> {
    let mut hunks: Vec<(usize, Hunk)> = Vec::new();
    let mut last_old: Option<u32> = None;
    let mut last_new: Option<u32> = None;
    while let Some(line) = lines.peek() {
        if line.starts_with("@@@") {
            return Err((lines.number(), DiffProblem::CombinedDiff));
        }
        if !line.starts_with("@@") {
            break;
        }
        let header_line = lines.number();
        let hunk = parse_hunk(lines)?;
        for (range, last) in [
            (hunk.range(crate::anchor::Side::Left), &mut last_old),
            (hunk.range(crate::anchor::Side::Right), &mut last_new),
        ] {
            if let Some(range) = range {
                if last.is_some_and(|last| range.first <= last) {
                    return Err((header_line, DiffProblem::HunkOutOfOrder));
                }
                *last = Some(range.last);
            }
        }
        hunks.push((header_line, hunk));
    }
    Ok(hunks)
}

/// Parses `@@ -a[,b] +c[,d] @@[ section]`.
fn parse_hunk_header(line: &str) -> Option<(u32, u32, u32, u32, &str)> {
    let rest = line.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(" +")?;
    let (new, rest) = rest.split_once(" @@")?;
    let section = rest.strip_prefix(' ').unwrap_or(rest);
    let (old_start, old_count) = parse_range(old)?;
    let (new_start, new_count) = parse_range(new)?;
    Some((old_start, old_count, new_start, new_count, section))
}

/// Parses `START[,COUNT]` (COUNT defaults to 1).
fn parse_range(text: &str) -> Option<(u32, u32)> {
    let number = |digits: &str| {
        (!digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit()))
            .then(|| digits.parse::<u32>().ok())
            .flatten()
    };
    match text.split_once(',') {
        Some((start, count)) => Some((number(start)?, number(count)?)),
        None => Some((number(text)?, 1)),
    }
}

/// Reads one hunk: its header, then exactly as many lines as the header
/// declares (plus `\ No newline at end of file` markers).
fn parse_hunk(lines: &mut Lines<'_>) -> Result<Hunk, Failure> {
    let mut hunk = HunkReader::start(lines)?;
    loop {
        let complete = hunk.old_missing == 0 && hunk.new_missing == 0;
        let Some(line) = lines.peek() else {
            if complete {
                break;
            }
            return Err((lines.number(), hunk.problem_at_end()));
        };
        let number = lines.number();
        if line.starts_with('\\') {
            hunk.mark_no_newline()
                .map_err(|problem| (number, problem))?;
        } else if complete {
            break;
        } else {
            hunk.push(line).map_err(|problem| (number, problem))?;
        }
        lines.advance();
    }
    Ok(hunk.hunk)
}

/// A hunk being read: what it still needs and where each side is.
struct HunkReader {
    /// The hunk so far (header values, lines read).
    hunk: Hunk,
    /// The line of the hunk's header, for error messages.
    header_line: usize,
    /// Old-side lines the header declares that have not been read yet.
    old_missing: u32,
    /// New-side lines still to read.
    new_missing: u32,
    /// The old-file number of the next old-side line.
    old_line: u32,
    /// The new-file number of the next new-side line.
    new_line: u32,
    /// Whether the old side's last line was marked `\ No newline at end of file`.
    old_ended: bool,
    /// Whether the new side's last line was so marked.
    new_ended: bool,
}

impl HunkReader {
    /// Reads and checks the hunk header at the cursor.
    fn start(lines: &mut Lines<'_>) -> Result<Self, Failure> {
        let header_line = lines.number();
        let header = lines.peek().unwrap_or_default();
        let header_value = header.strip_suffix('\r').unwrap_or(header);
        let (old_start, old_count, new_start, new_count, section) = parse_hunk_header(header_value)
            .ok_or_else(|| {
                (
                    header_line,
                    DiffProblem::InvalidHunkHeader {
                        found: excerpt(header),
                    },
                )
            })?;
        for (side, start, count) in [("old", old_start, old_count), ("new", new_start, new_count)] {
            if start == 0 && count > 0 {
                return Err((header_line, DiffProblem::ZeroStartWithLines { side, count }));
            }
            if count > 0 && start.checked_add(count - 1).is_none() {
                return Err((header_line, DiffProblem::HunkRangeTooLarge));
            }
        }
        lines.advance();
        // Hostile headers may declare billions of lines: never trust them for
        // the allocation.
        let capacity = usize::try_from(old_count.saturating_add(new_count))
            .unwrap_or(usize::MAX)
            .min(1024);
        Ok(Self {
            hunk: Hunk {
                old_start,
                old_count,
                new_start,
                new_count,
                section: section.to_owned(),
                lines: Vec::with_capacity(capacity),
            },
            header_line,
            old_missing: old_count,
            new_missing: new_count,
            old_line: old_start,
            new_line: new_start,
            old_ended: false,
            new_ended: false,
        })
    }

    /// The problem when the input ends before the hunk is complete.
    fn problem_at_end(&self) -> DiffProblem {
        DiffProblem::UnexpectedEndOfHunk {
            header_line: self.header_line,
            old_missing: self.old_missing,
            new_missing: self.new_missing,
        }
    }

    /// Applies a `\ No newline at end of file` marker to the last line.
    fn mark_no_newline(&mut self) -> Result<(), DiffProblem> {
        let Some(last) = self
            .hunk
            .lines
            .last_mut()
            .filter(|last| !last.no_newline_at_end)
        else {
            return Err(DiffProblem::MisplacedNoNewlineMarker);
        };
        last.no_newline_at_end = true;
        match last.kind {
            LineKind::Context => (self.old_ended, self.new_ended) = (true, true),
            LineKind::Removed => self.old_ended = true,
            LineKind::Added => self.new_ended = true,
        }
        Ok(())
    }

    /// Reads one content line of the hunk.
    fn push(&mut self, line: &str) -> Result<(), DiffProblem> {
        let (kind, text) = match line.as_bytes().first() {
            Some(b' ') => (LineKind::Context, &line[1..]),
            Some(b'+') => (LineKind::Added, &line[1..]),
            Some(b'-') => (LineKind::Removed, &line[1..]),
            // An empty line where a context line is due: whitespace-damaged
            // context (an editor or mail client stripped the lone space).
            None => (LineKind::Context, ""),
            Some(_) => {
                return Err(DiffProblem::UnexpectedHunkLine {
                    found: excerpt(line),
                    header_line: self.header_line,
                    old_missing: self.old_missing,
                    new_missing: self.new_missing,
                });
            }
        };
        let (needs_old, needs_new, name) = match kind {
            LineKind::Context => (true, true, "context"),
            LineKind::Added => (false, true, "added"),
            LineKind::Removed => (true, false, "removed"),
        };
        if (needs_old && self.old_missing == 0) || (needs_new && self.new_missing == 0) {
            return Err(DiffProblem::TooManyHunkLines {
                kind: name,
                header_line: self.header_line,
                old_missing: self.old_missing,
                new_missing: self.new_missing,
            });
        }
        if (needs_old && self.old_ended) || (needs_new && self.new_ended) {
            return Err(DiffProblem::LineAfterNoNewlineMarker);
        }
        self.hunk.lines.push(DiffLine {
            kind,
            old_line: needs_old.then_some(self.old_line),
            new_line: needs_new.then_some(self.new_line),
            text: text.to_owned(),
            no_newline_at_end: false,
        });
        if needs_old {
            self.old_missing -= 1;
            self.old_line = self.old_line.saturating_add(1);
        }
        if needs_new {
            self.new_missing -= 1;
            self.new_line = self.new_line.saturating_add(1);
        }
        Ok(())
    }
}

/// Builds a file from one of GitHub's per-file entries.
pub(super) fn file_from_changed(changed: &ChangedFile<'_>) -> Result<FileDiff, DiffError> {
    let hunks = match changed.patch {
        None => None,
        Some(patch) => Some(
            parse_patch(patch).map_err(|(line, problem)| DiffError::Patch {
                path: changed.path.to_owned(),
                line,
                problem,
            })?,
        ),
    };
    let content_omitted = hunks.is_none();
    let hunks = hunks.unwrap_or_default();
    let change = if changed.change == ChangeKind::ModeOnly && !hunks.is_empty() {
        ChangeKind::Modified
    } else {
        changed.change
    };
    Ok(FileDiff {
        path: changed.path.to_owned(),
        previous_path: changed.previous_path.map(str::to_owned),
        change,
        similarity: None,
        old_mode: None,
        new_mode: None,
        binary: false,
        content_omitted,
        hunks,
    })
}

/// Parses a GitHub `patch`: hunks only, no file headers, usually without a
/// final newline.
fn parse_patch(patch: &str) -> Result<Vec<Hunk>, Failure> {
    let mut lines = Lines::new(patch);
    if lines.rest_is_blank() {
        return Ok(Vec::new());
    }
    if let Some(line) = lines.peek().filter(|line| !line.starts_with("@@")) {
        return Err((
            1,
            DiffProblem::ExpectedHunkHeader {
                found: excerpt(line),
            },
        ));
    }
    let hunks = parse_hunks(&mut lines)?;
    if let Some(line) = lines.peek().filter(|_| !lines.rest_is_blank()) {
        let problem = match after_last_hunk(line, &hunks) {
            DiffProblem::ExpectedHunkOrNextFile { found } => {
                DiffProblem::ExpectedHunkOrEndOfPatch { found }
            }
            other => other,
        };
        return Err((lines.number(), problem));
    }
    Ok(hunks.into_iter().map(|(_, hunk)| hunk).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunk_headers_parse_with_and_without_counts() {
        assert_eq!(
            parse_hunk_header("@@ -1,3 +1,4 @@ fn main() {"),
            Some((1, 3, 1, 4, "fn main() {"))
        );
        assert_eq!(parse_hunk_header("@@ -5 +5 @@"), Some((5, 1, 5, 1, "")));
        assert_eq!(parse_hunk_header("@@ -0,0 +1 @@"), Some((0, 0, 1, 1, "")));
        assert_eq!(parse_hunk_header("@@ -+1 +1 @@"), None);
        assert_eq!(parse_hunk_header("@@ -1 +1"), None);
        assert_eq!(parse_hunk_header("@@ -1,x +1 @@"), None);
        assert_eq!(parse_hunk_header("@@ -99999999999 +1 @@"), None);
    }

    #[test]
    fn lines_keep_carriage_returns_and_drop_one_final_newline() {
        let lines = Lines::new("a\r\nb\n");
        assert_eq!(lines.lines, vec!["a\r", "b"]);
        assert!(Lines::new("").lines.is_empty());
        assert_eq!(Lines::new("a").lines, vec!["a"]);
        assert_eq!(Lines::new("\n").lines, vec![""]);
    }

    #[test]
    fn base85_data_lines_are_recognised() {
        assert!(is_base85_data_line("zcmV-J0KET+"));
        assert!(!is_base85_data_line("zcmV"));
        assert!(!is_base85_data_line("hello world"));
        assert!(!is_base85_data_line(""));
    }
}
