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
//! untrusted text cannot break out of a code block or a code span.

use serde::{Deserialize, Serialize};

use crate::anchor::{CommentLocation, Side, Verdict};

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

/// `content` followed by `footer`, cut so the whole fits [`GITHUB_BODY_LIMIT`].
/// The footer always survives whole (the review id in it is how a retry knows
/// the review was posted); a cut says how much was left out.
pub fn fit_body(content: &str, footer: &str) -> String {
    let joined = |content: &str| {
        if footer.is_empty() {
            content.to_owned()
        } else if content.is_empty() {
            footer.to_owned()
        } else {
            format!("{content}\n\n{footer}")
        }
    };
    let whole = joined(content.trim_end());
    let total = whole.chars().count();
    if total <= GITHUB_BODY_LIMIT {
        return whole;
    }
    let notice_room = 120; // the notice below, with room for its numbers
    let keep = GITHUB_BODY_LIMIT
        .saturating_sub(footer.chars().count() + notice_room)
        .min(content.chars().count());
    let kept: String = content.chars().take(keep).collect();
    let left_out = content.chars().count() - keep;
    joined(&format!(
        "{kept}\n\n… _({left_out} characters left out: GitHub takes at most {GITHUB_BODY_LIMIT} per comment)_"
    ))
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

/// A markdown code span that shows `text` verbatim, whatever backticks it holds.
pub fn inline_code(text: &str) -> String {
    let text = single_line(text);
    let fence = "`".repeat(longest_backtick_run(&text) + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') || text.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// A fenced code block that shows `text` verbatim, whatever fences it holds.
/// `language` is used only when it is a short alphanumeric tag.
pub fn code_block(text: &str, language: Option<&str>) -> String {
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
        assert_eq!(inline_code("a\nb"), "`a b`");
        assert_eq!(
            code_block("x\n```\ny\n", Some("ts")),
            "````ts\nx\n```\ny\n````"
        );
        assert_eq!(code_block("z", Some("c++")), "```\nz\n```");
    }

    #[test]
    fn long_bodies_are_cut_but_keep_their_footer() {
        let footer = "<sub>review::x</sub>";
        assert_eq!(fit_body("short\n", footer), "short\n\n<sub>review::x</sub>");
        let long = "é".repeat(GITHUB_BODY_LIMIT);
        let fitted = fit_body(&long, footer);
        assert!(fitted.chars().count() <= GITHUB_BODY_LIMIT);
        assert!(fitted.ends_with(footer));
        assert!(fitted.contains("characters left out"));
    }

    #[test]
    fn describes_lines() {
        let location = CommentLocation::new("a", 42);
        assert_eq!(describe_lines(&location), "line 42");
        assert_eq!(describe_lines(&location.with_start_line(40)), "lines 40–42");
    }
}
