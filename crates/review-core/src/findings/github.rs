//! Findings → a GitHub create-review payload (seed 003's `review.json`).
//!
//! Each line comment is anchored against the pull request's diff:
//! - `inline` → an inline comment where the finding asked;
//! - `moved` → an inline comment on the line the anchorer chose, opening with
//!   a note saying which line it was aimed at;
//! - `outside_diff` / `not_in_pr` → an entry under **Outside the diff** in the
//!   review body, with its file, line and everything the comment would have
//!   said. Nothing is dropped.
//!
//! A comment reads: severity emoji and title, the confidence (🟢 🟡 🔵 ⚪) and
//! severity, the description, the code context as a fenced block, the
//! suggestion, then the footer. The suggestion is rendered as prose, never
//! as a GitHub ` ```suggestion ` block: the format does not say that the text
//! is replacement code for the commented lines (the seed's own example is
//! "Add null check: …"), and a wrong suggestion block offers a one-click commit
//! that breaks the file.
//!
//! The body carries the overview, counts (inline / outside the diff, per
//! confidence level, per severity), key findings, the security assessment, the
//! highlights, the Outside-the-diff section and the footer. Counts are taken
//! from the comments themselves, not from the reviewer's own breakdown.
//!
//! Every piece of text from the findings — titles, descriptions, code, the
//! file path under "Outside the diff" — goes through [`footer::defuse`]
//! (directly, or inside [`inline_code`] / [`code_block`]), so a finding cannot
//! plant a `review::`/`thread::` id (a path `docs/review::<uuid>.md` would
//! otherwise become the review's own id) nor reorder the text with
//! bidirectional controls. Ids come from the caller.
//! A finding whose inline comment would be longer than GitHub takes in one
//! comment goes to the body instead (under "Outside the diff", saying why).
//! The body itself may grow past GitHub's limit: the poster splits it into the
//! review and continuation comments ([`crate::payload::split_body`]), so no
//! finding is ever cut away.

use std::fmt::Write as _;

use crate::anchor::{CommentLocation, Verdict, anchor};
use crate::diff::PullRequestDiff;
use crate::footer::{self, Footer, ReviewId, ThreadId};
use crate::payload::{
    PayloadComment, ReviewPayload, code_block, describe_lines, fits_github, inline_code,
    single_line, with_footer,
};

use super::{ConfidenceLevel, Findings, LineComment, Severity};

/// A conversion's result: the payload and how each line comment was placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversion {
    /// The create-review request.
    pub payload: ReviewPayload,
    /// One verdict per line comment, in `line_comments` order.
    pub verdicts: Vec<Verdict>,
}

/// Converts valid findings into a create-review payload.
///
/// `review` goes into every footer. `next_thread` is called once for the
/// review body, then once per inline comment, in order.
pub fn to_review_payload(
    findings: &Findings,
    diff: &PullRequestDiff,
    review: ReviewId,
    mut next_thread: impl FnMut() -> ThreadId,
) -> Conversion {
    let body_footer = Footer::new(review, next_thread());
    let mut comments = Vec::new();
    let mut outside = Vec::new();
    let mut verdicts = Vec::new();
    for comment in &findings.line_comments {
        let location = comment.location();
        let verdict = anchor(diff, &location);
        let note = match &verdict {
            Verdict::Moved {
                line, start_line, ..
            } => {
                let placed = CommentLocation {
                    start_line: *start_line,
                    line: *line,
                    ..location.clone()
                };
                Some(format!(
                    "_Aimed at {} of this file, which GitHub does not accept comments on; \
                     shown on {}, the nearest {} that {} part of the diff._",
                    describe_lines(&location),
                    describe_lines(&placed),
                    if start_line.is_some() {
                        "lines"
                    } else {
                        "line"
                    },
                    if start_line.is_some() { "are" } else { "is" },
                ))
            }
            _ => None,
        };
        if verdict.is_postable_inline() {
            let footer = Footer::new(review, next_thread());
            let body = with_footer(&comment_body(comment, note.as_deref()), &footer.render());
            if fits_github(&body) {
                comments.extend(PayloadComment::anchored(&verdict, location.side, body));
            } else {
                outside.push((comment, OutsideReason::TooLong));
            }
        } else if verdict.name() == "not_in_pr" {
            outside.push((comment, OutsideReason::NotInPullRequest));
        } else {
            outside.push((comment, OutsideReason::NotInDiff));
        }
        verdicts.push(verdict);
    }
    let body = with_footer(
        &review_body(findings, comments.len(), &outside),
        &body_footer.render(),
    );
    Conversion {
        payload: ReviewPayload {
            commit_id: findings.pull_request.head_sha.clone(),
            body,
            event: findings.review_event,
            comments,
        },
        verdicts,
    }
}

/// Why a finding is listed in the body rather than inline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OutsideReason {
    /// The path is not a file of the pull request.
    NotInPullRequest,
    /// The line is not part of the diff.
    NotInDiff,
    /// Anchorable, but longer than GitHub takes in one inline comment.
    TooLong,
}

impl OutsideReason {
    fn describe(self) -> &'static str {
        match self {
            OutsideReason::NotInPullRequest => "not a file this pull request changes",
            OutsideReason::NotInDiff => "not part of the diff",
            OutsideReason::TooLong => "too long for one inline comment",
        }
    }
}

/// The markdown of one finding (without footer), opening with `note` if any.
fn comment_body(comment: &LineComment, note: Option<&str>) -> String {
    let mut body = String::new();
    if let Some(note) = note {
        body.push_str(note);
        body.push_str("\n\n");
    }
    let _ = writeln!(
        body,
        "{} **{}**\n",
        comment.severity.emoji(),
        footer::defuse(&single_line(&comment.title))
    );
    let _ = writeln!(body, "{}\n", confidence_line(comment));
    body.push_str(footer::defuse(comment.description.trim()).as_ref());
    if let Some(context) = comment
        .code_context
        .as_deref()
        .filter(|text| !text.trim().is_empty())
    {
        let language = comment
            .file
            .rsplit_once('.')
            .map(|(_, extension)| extension);
        body.push_str("\n\n");
        body.push_str(&code_block(context, language));
    }
    if let Some(suggestion) = comment
        .suggestion
        .as_deref()
        .map(str::trim)
        .filter(|text| !text.is_empty())
    {
        let suggestion = footer::defuse(suggestion);
        if suggestion.contains('\n') {
            let _ = write!(body, "\n\n**Suggestion:**\n\n{suggestion}");
        } else {
            let _ = write!(body, "\n\n**Suggestion:** {suggestion}");
        }
    }
    body
}

/// `🟢 High confidence (95) · 🚨 Critical`.
fn confidence_line(comment: &LineComment) -> String {
    let level = comment.confidence_level;
    let name = match level {
        ConfidenceLevel::High => "High confidence",
        ConfidenceLevel::Medium => "Medium confidence",
        ConfidenceLevel::Low => "Low confidence",
        ConfidenceLevel::Suggestion => "Suggestion",
    };
    format!(
        "{} {name} ({}) · {}",
        level.emoji(),
        comment.confidence,
        comment.severity.title()
    )
}

/// The review body, without footer.
fn review_body(
    findings: &Findings,
    inline: usize,
    outside: &[(&LineComment, OutsideReason)],
) -> String {
    let summary = &findings.review_summary;
    let mut body = String::from("## Review summary\n\n");
    let overview = summary.overview.trim();
    if !overview.is_empty() {
        let _ = write!(body, "{}\n\n", footer::defuse(overview));
    }
    body.push_str(&counts(findings, inline, outside.len()));
    let key_findings: Vec<&str> = summary
        .key_findings
        .iter()
        .map(|finding| finding.trim())
        .filter(|finding| !finding.is_empty())
        .collect();
    if !key_findings.is_empty() {
        body.push_str("\n\n### Key findings\n");
        for finding in key_findings {
            let _ = write!(body, "\n- {}", footer::defuse(&single_line(finding)));
        }
    }
    for (title, text) in [
        ("Security", &summary.security_assessment),
        ("Highlights", &summary.positive_highlights),
    ] {
        if !text.trim().is_empty() {
            let _ = write!(body, "\n\n### {title}\n\n{}", footer::defuse(text.trim()));
        }
    }
    if !outside.is_empty() {
        body.push_str(
            "\n\n### Outside the diff\n\nGitHub accepts review comments only on lines of the diff \
             and of limited length, so these findings are listed here.",
        );
        for (comment, reason) in outside {
            let reason = reason.describe();
            let location = comment.location();
            let _ = write!(
                body,
                "\n\n---\n\n{} {} ({}, {reason})\n\n{}",
                inline_code(&comment.file),
                describe_lines(&location),
                location.side,
                comment_body(comment, None),
            );
        }
    }
    body
}

/// The counts paragraph.
fn counts(findings: &Findings, inline: usize, outside: usize) -> String {
    let comments = &findings.line_comments;
    let total = comments.len();
    if total == 0 {
        return "No line comments.".to_owned();
    }
    let mut text = format!(
        "- **{total} line comment{}**: {inline} inline, {outside} outside the diff",
        if total == 1 { "" } else { "s" }
    );
    let levels: Vec<String> = ConfidenceLevel::ALL
        .into_iter()
        .filter_map(|level| {
            let count = comments
                .iter()
                .filter(|c| c.confidence_level == level)
                .count();
            (count > 0).then(|| format!("{} {count} {level}", level.emoji()))
        })
        .collect();
    let severities: Vec<String> = Severity::ALL
        .into_iter()
        .filter_map(|severity| {
            let count = comments.iter().filter(|c| c.severity == severity).count();
            (count > 0).then(|| format!("{} {count} {severity}", severity.emoji()))
        })
        .collect();
    let _ = write!(text, "\n- Confidence: {}", levels.join(" · "));
    let _ = write!(text, "\n- Severity: {}", severities.join(" · "));
    text
}
