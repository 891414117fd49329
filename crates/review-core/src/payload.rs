//! The review the bot posts: a domain type whose serde shape is GitHub's
//! create-review request body (`POST /repos/{o}/{r}/pulls/{n}/reviews`).
//!
//! It is ours, not a wire type of `review-github`: it is what the pure rules
//! produce (anchored comments, a body with footers) and what the store records
//! before posting; the adapter sends it as is. Its JSON is exactly GitHub's:
//! `commit_id`, `body`, `event`, `comments[]` of `path`, `body`, `line`,
//! `side`, and `start_line`/`start_side` for a range (never the deprecated
//! `position`).
//!
//! Also here: the small markdown helpers every bot-written body uses, so that
//! untrusted text cannot break out of a code block or a code span, plant a
//! `review::`/`thread::` id or hide behind bidirectional controls (they
//! [`defuse`](crate::footer::defuse) what they wrap).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::anchor::{CommentLocation, Side, Verdict};
use crate::footer::{Footer, defuse, own_footer, show_code_points};

/// A create-review request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewPayload {
    /// The head commit reviewed (full SHA).
    pub commit_id: String,
    /// The review body (summary, "Outside the diff", footer).
    pub body: String,
    /// The review event.
    pub event: ReviewEvent,
    /// Inline comments, every one on a line GitHub accepts.
    pub comments: Vec<PayloadComment>,
}

/// One inline comment of a create-review request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayloadComment {
    /// The file, relative to the repository root.
    pub path: String,
    /// The comment's markdown, footer included.
    pub body: String,
    /// The (last) line commented on.
    pub line: u32,
    /// The side `line` is on.
    pub side: Side,
    /// The first line of a range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    /// The side of `start_line` (always `side`: ranges do not cross sides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_side: Option<Side>,
}

impl PayloadComment {
    /// The comment for an `inline` or `moved` verdict, on the verdict's target;
    /// `None` when the verdict sends the comment to the review body.
    pub fn anchored(verdict: &Verdict, side: Side, body: String) -> Option<PayloadComment> {
        let (path, line, start_line) = verdict.target()?;
        Some(PayloadComment {
            path: path.to_owned(),
            body,
            line,
            side,
            start_line,
            start_side: start_line.map(|_| side),
        })
    }
}

/// The review event (GitHub's create-review `event`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReviewEvent {
    /// General feedback, non-blocking.
    Comment,
    /// Blocking review for critical issues.
    RequestChanges,
    /// No issues found.
    Approve,
}

impl ReviewEvent {
    /// The event's name in the findings format and on GitHub.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReviewEvent::Comment => "COMMENT",
            ReviewEvent::RequestChanges => "REQUEST_CHANGES",
            ReviewEvent::Approve => "APPROVE",
        }
    }
}

/// The most characters GitHub takes in one comment or review body.
pub const GITHUB_BODY_LIMIT: usize = 65_536;

/// `content` followed by a blank line and `footer` (either may be empty).
/// The result may be longer than GitHub takes: [`split_body`] makes it fit.
pub fn with_footer(content: &str, footer: &str) -> String {
    let content = content.trim_end();
    if footer.is_empty() {
        content.to_owned()
    } else if content.is_empty() {
        footer.to_owned()
    } else {
        format!("{content}\n\n{footer}")
    }
}

/// True when `body` fits in one GitHub comment or review body.
pub fn fits_github(body: &str) -> bool {
    body.chars().count() <= GITHUB_BODY_LIMIT
}

/// Room kept in every part for the continuation notes and the footer's
/// surroundings (the notes are under 80 characters; this leaves margin).
const PART_OVERHEAD: usize = 200;

/// A body as the comments GitHub will take: the body itself when it fits
/// [`GITHUB_BODY_LIMIT`], otherwise parts of at most that many characters each.
///
/// Nothing is cut away. The first part goes where the body was going (the
/// review) and keeps the body's own footer, so that a retry still finds the
/// review by its `review::` id; it ends with a note that the text continues.
/// Every further part (posted as a conversation comment after the first)
/// opens with "continued, part k of n" and ends with a footer carrying the
/// same `review::` id and no `thread::` id: it starts no conversation of its
/// own, and counting distinct review ids still counts one review.
///
/// Parts break at line ends (a line longer than a part breaks anywhere), and a
/// fenced code block cut in two is closed at the end of one part and reopened
/// at the start of the next, so each part renders on its own.
pub fn split_body(body: &str) -> Vec<String> {
    if fits_github(body) {
        return vec![body.to_owned()];
    }
    let footer = own_footer(body);
    let rendered = footer.render();
    let content = without_own_footer(body, &rendered);
    let budget = GITHUB_BODY_LIMIT - PART_OVERHEAD - rendered.chars().count();
    let chunks = chunk_markdown(&content, budget);
    let total = chunks.len();
    let continuation_footer = Footer {
        review: footer.review,
        thread: None,
    }
    .render();
    chunks
        .into_iter()
        .enumerate()
        .map(|(index, chunk)| {
            let part = index + 1;
            let mut text = String::new();
            if part > 1 {
                let _ = write!(text, "_(continued, part {part} of {total})_\n\n");
            }
            text.push_str(chunk.trim_end());
            if part < total {
                let _ = write!(
                    text,
                    "\n\n_(continued in the next comment: part {part} of {total})_"
                );
            }
            let own = if part == 1 {
                &rendered
            } else {
                &continuation_footer
            };
            with_footer(&text, own)
        })
        .collect()
}

/// `body` without its own footer line (`rendered`, on an unquoted line, at the
/// end or — after a section was appended — anywhere), trimmed at the end.
fn without_own_footer(body: &str, rendered: &str) -> String {
    if rendered.is_empty() {
        return body.trim_end().to_owned();
    }
    let mut removed = false;
    let mut kept = String::with_capacity(body.len());
    for line in body.split_inclusive('\n') {
        if !removed && line.trim() == rendered {
            removed = true;
            continue;
        }
        kept.push_str(line);
    }
    kept.trim_end().to_owned()
}

/// `text` cut into chunks of at most `budget` characters at line ends, with
/// fenced code blocks closed and reopened across a cut.
fn chunk_markdown(text: &str, budget: usize) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut current = String::new();
    let mut current_length = 0;
    // The fence line that opened the code block we are inside, if any.
    let mut open_fence: Option<String> = None;
    let mut pieces: Vec<String> = Vec::new();
    for line in text.split_inclusive('\n') {
        // A line longer than a whole part is broken into pieces that fit.
        if line.chars().count() > budget / 2 {
            let characters: Vec<char> = line.chars().collect();
            pieces.extend(
                characters
                    .chunks(budget / 2)
                    .map(|piece| piece.iter().collect::<String>()),
            );
        } else {
            pieces.push(line.to_owned());
        }
    }
    for piece in pieces {
        let closing = open_fence
            .as_ref()
            .map_or(0, |fence| fence_closer(fence).len() + 1);
        let length = piece.chars().count();
        if current_length + length + closing > budget && !current.is_empty() {
            if let Some(fence) = &open_fence {
                if !current.ends_with('\n') {
                    current.push('\n');
                }
                current.push_str(&fence_closer(fence));
            }
            chunks.push(std::mem::take(&mut current));
            current_length = 0;
            if let Some(fence) = &open_fence {
                current.push_str(fence);
                current.push('\n');
                current_length = fence.chars().count() + 1;
            }
        }
        let trimmed = piece.trim();
        match &open_fence {
            None if fence_opener(trimmed).is_some() => open_fence = Some(trimmed.to_owned()),
            Some(fence) if closes(fence, trimmed) => open_fence = None,
            _ => {}
        }
        current.push_str(&piece);
        current_length += length;
    }
    if !current.trim().is_empty() {
        chunks.push(current);
    }
    chunks
}

/// The fence characters of a line opening a fenced code block (three or more
/// backticks or tildes), if it is one.
fn fence_opener(line: &str) -> Option<&str> {
    let marker = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = line.chars().take_while(|c| *c == marker).count();
    (run >= 3).then(|| &line[..run])
}

/// The line that closes the block `opener` opened.
fn fence_closer(opener: &str) -> String {
    fence_opener(opener).unwrap_or("```").to_owned()
}

/// True when `line` closes the block `opener` opened: the same character, at
/// least as many of them, and nothing else.
fn closes(opener: &str, line: &str) -> bool {
    let Some(fence) = fence_opener(opener) else {
        return false;
    };
    let marker = fence.chars().next().unwrap_or('`');
    let run = line.chars().take_while(|c| *c == marker).count();
    run >= fence.len() && line.chars().all(|c| c == marker)
}

/// "line 42" or "lines 40–42" for a location.
pub fn describe_lines(location: &CommentLocation) -> String {
    match location.start_line {
        Some(start) if start != location.line => format!("lines {start}–{}", location.line),
        _ => format!("line {}", location.line),
    }
}

/// Replaces control characters (newlines included) so that text fits on one line.
pub fn single_line(text: &str) -> String {
    text.trim()
        .chars()
        .map(|character| {
            if character.is_control() {
                ' '
            } else {
                character
            }
        })
        .collect()
}

/// A markdown code span that shows untrusted `text` (a file path, a command)
/// verbatim, whatever backticks it holds. Control characters (a tab or a
/// newline in a file name) are shown as `<U+0009>`, and the text is
/// [`defuse`]d: no `review::`/`thread::` tag, no bidirectional control.
pub fn inline_code(text: &str) -> String {
    let text = defuse(&show_code_points(text, char::is_control)).into_owned();
    let fence = "`".repeat(longest_backtick_run(&text) + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') || text.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// A fenced code block that shows untrusted `text` verbatim, whatever fences
/// it holds, [`defuse`]d. `language` is used only when it is a short
/// alphanumeric tag.
pub fn code_block(text: &str, language: Option<&str>) -> String {
    let text = defuse(text);
    let text = text.as_ref();
    let fence = "`".repeat((longest_backtick_run(text) + 1).max(3));
    let language = language
        .filter(|tag| {
            !tag.is_empty() && tag.len() <= 16 && tag.chars().all(|c| c.is_ascii_alphanumeric())
        })
        .unwrap_or("");
    format!(
        "{fence}{language}\n{}\n{fence}",
        text.trim_end_matches(['\n', '\r'])
    )
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|character| character != '`')
        .map(str::len)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_as_github_create_review_body() {
        let payload = ReviewPayload {
            commit_id: "0123456789abcdef0123456789abcdef01234567".to_owned(),
            body: "Summary".to_owned(),
            event: ReviewEvent::Comment,
            comments: vec![
                PayloadComment {
                    path: "src/a.rs".to_owned(),
                    body: "one".to_owned(),
                    line: 3,
                    side: Side::Right,
                    start_line: None,
                    start_side: None,
                },
                PayloadComment {
                    path: "src/b.rs".to_owned(),
                    body: "range".to_owned(),
                    line: 9,
                    side: Side::Left,
                    start_line: Some(7),
                    start_side: Some(Side::Left),
                },
            ],
        };
        assert_eq!(
            serde_json::to_value(&payload).unwrap(),
            serde_json::json!({
                "commit_id": "0123456789abcdef0123456789abcdef01234567",
                "body": "Summary",
                "event": "COMMENT",
                "comments": [
                    {"path": "src/a.rs", "body": "one", "line": 3, "side": "RIGHT"},
                    {"path": "src/b.rs", "body": "range", "line": 9, "side": "LEFT", "start_line": 7, "start_side": "LEFT"}
                ]
            })
        );
    }

    #[test]
    fn code_cannot_break_out() {
        assert_eq!(inline_code("a`b"), "``a`b``");
        assert_eq!(inline_code("`x`"), "`` `x` ``");
        assert_eq!(inline_code("a\nb"), "`a<U+000A>b`");
        assert_eq!(inline_code("tab\there.txt"), "`tab<U+0009>here.txt`");
        assert_eq!(
            inline_code("docs/review::0f8fad5b-d9cb-469f-a165-70867728950e.md"),
            "`docs/review:\u{200B}:0f8fad5b-d9cb-469f-a165-70867728950e.md`"
        );
        assert_eq!(inline_code("a\u{202E}b"), "`a<U+202E>b`");
        assert!(code_block("thread::x \u{2066}", None).contains("thread:\u{200B}:x <U+2066>"));
        assert_eq!(
            code_block("x\n```\ny\n", Some("ts")),
            "````ts\nx\n```\ny\n````"
        );
        assert_eq!(code_block("z", Some("c++")), "```\nz\n```");
    }

    #[test]
    fn bodies_that_fit_are_one_part() {
        assert_eq!(
            with_footer("short\n", "<sub>x</sub>"),
            "short\n\n<sub>x</sub>"
        );
        assert_eq!(with_footer("", "<sub>x</sub>"), "<sub>x</sub>");
        assert_eq!(split_body("short"), vec!["short".to_owned()]);
    }

    fn footer() -> Footer {
        Footer::new(
            crate::footer::ReviewId(uuid::Uuid::from_u128(1)),
            crate::footer::ThreadId(uuid::Uuid::from_u128(2)),
        )
    }

    #[test]
    fn long_bodies_are_split_and_lose_nothing() {
        let footer = footer();
        let paragraphs: Vec<String> = (0..4_000)
            .map(|index| format!("Finding {index}: {}", "é".repeat(40)))
            .collect();
        let content = paragraphs.join("\n\n");
        let body = footer.append_to(&content);
        let parts = split_body(&body);
        assert!(parts.len() >= 3, "{} parts", parts.len());
        for part in &parts {
            assert!(part.chars().count() <= GITHUB_BODY_LIMIT);
        }
        // The first part keeps the whole footer; the others only the review id.
        assert_eq!(own_footer(&parts[0]), footer);
        for part in &parts[1..] {
            let own = own_footer(part);
            assert_eq!(own.review, footer.review);
            assert_eq!(own.thread, None);
        }
        assert!(parts[0].contains("continued in the next comment: part 1 of"));
        assert!(parts[1].starts_with("_(continued, part 2 of"));
        // Every paragraph is somewhere, whole (a sample: the check is quadratic).
        let joined = parts.join("\n");
        for paragraph in paragraphs.iter().step_by(97).chain(paragraphs.last()) {
            assert!(joined.contains(paragraph.as_str()), "lost {paragraph}");
        }
    }

    #[test]
    fn a_code_block_cut_in_two_is_closed_and_reopened() {
        let code = (0..5_000).fold(String::new(), |mut code, index| {
            let _ = writeln!(code, "let x{index} = {index};");
            code
        });
        let body = footer().append_to(&format!("Intro\n\n````rust\n{code}````\n\nAfter"));
        let parts = split_body(&body);
        assert!(parts.len() >= 2);
        for part in &parts {
            let fences = part.lines().filter(|line| line.starts_with("````")).count();
            assert_eq!(fences % 2, 0, "unbalanced fences in a part");
        }
        assert!(parts[1].contains("````rust\n"));
        assert!(parts.last().unwrap().contains("After"));
    }

    #[test]
    fn a_footer_followed_by_an_appended_section_still_lands_in_the_first_part() {
        let footer = footer();
        let summary = footer.append_to("Summary.");
        let section = (0..5_000).fold(String::new(), |mut section, index| {
            let _ = writeln!(section, "> quoted finding {index}");
            section
        });
        let body = format!("{summary}\n\n### Outside the diff\n\n{section}");
        let parts = split_body(&body);
        assert!(parts.len() >= 2);
        assert_eq!(own_footer(&parts[0]), footer);
        assert_eq!(
            parts
                .iter()
                .filter(|part| part.contains(&footer.render()))
                .count(),
            1
        );
    }

    #[test]
    fn a_single_huge_line_is_split_anywhere() {
        let body = "ж".repeat(GITHUB_BODY_LIMIT * 2);
        let parts = split_body(&body);
        assert_eq!(parts.len(), 3);
        let total: usize = parts
            .iter()
            .map(|part| part.chars().filter(|c| *c == 'ж').count())
            .sum();
        assert_eq!(total, GITHUB_BODY_LIMIT * 2);
    }

    #[test]
    fn describes_lines() {
        let location = CommentLocation::new("a", 42);
        assert_eq!(describe_lines(&location), "line 42");
        assert_eq!(describe_lines(&location.with_start_line(40)), "lines 40–42");
    }
}
