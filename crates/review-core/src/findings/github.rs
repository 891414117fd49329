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
//! suggestion, then the footer. A suggestion is prose (the seed's own example
//! is "Add null check: …") unless it is written as a ` ```suggestion ` fenced
//! block — the exact replacement text of the commented lines, as the prompts
//! ask for where the fix is local (issue 28, item 4). Such a block is posted
//! as GitHub's one-click suggestion only when GitHub applies it to exactly
//! those lines: the comment is inline where it was aimed (not moved), on the
//! RIGHT side, spans at most [`MAX_SUGGESTION_LINES`] lines inside one hunk,
//! and defusing leaves the text unchanged. Anything else keeps the code as a
//! plain fenced block saying why it is not offered as a one-click change, so
//! a wrong suggestion block never offers a commit that breaks the file.
//!
//! At most [`PayloadOptions::max_inline_comments`] findings become inline
//! comments, the most serious first ([`super::noise::rank`]); the rest are
//! listed in the body under **More findings** in that order, with file and
//! line (issue 28, item 3).
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

use super::noise::rank;
use super::{ConfidenceLevel, Findings, LineComment, Severity};

/// The most lines a one-click suggestion may replace.
pub const MAX_SUGGESTION_LINES: u32 = 10;

/// How findings become a payload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PayloadOptions {
    /// At most this many inline comments; `None`: no cap.
    pub max_inline_comments: Option<usize>,
}

/// A conversion's result: the payload and how each line comment was placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversion {
    /// The create-review request.
    pub payload: ReviewPayload,
    /// One verdict per line comment, in `line_comments` order.
    pub verdicts: Vec<Verdict>,
}

/// Converts valid findings into a create-review payload, every anchorable
/// finding inline ([`to_review_payload_with`] with no cap).
///
/// `review` goes into every footer. `next_thread` is called once for the
/// review body, then once per inline comment, in order.
pub fn to_review_payload(
    findings: &Findings,
    diff: &PullRequestDiff,
    review: ReviewId,
    next_thread: impl FnMut() -> ThreadId,
) -> Conversion {
    to_review_payload_with(
        findings,
        diff,
        review,
        PayloadOptions::default(),
        next_thread,
    )
}

/// Where one finding goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Placement {
    /// Inline, with this body (footer not yet added).
    Inline(String),
    /// In the body, under "Outside the diff".
    Outside(OutsideReason),
    /// In the body, under "More findings": past the inline cap.
    PastCap,
}

/// Converts valid findings into a create-review payload with `options`.
///
/// `review` goes into every footer. `next_thread` is called once for the
/// review body, then once per inline comment, in order.
pub fn to_review_payload_with(
    findings: &Findings,
    diff: &PullRequestDiff,
    review: ReviewId,
    options: PayloadOptions,
    mut next_thread: impl FnMut() -> ThreadId,
) -> Conversion {
    let body_footer = Footer::new(review, next_thread());
    let verdicts: Vec<Verdict> = findings
        .line_comments
        .iter()
        .map(|comment| anchor(diff, &comment.location()))
        .collect();
    // Decide in rank order, so the cap keeps the most serious findings inline.
    let mut ranked: Vec<usize> = (0..findings.line_comments.len()).collect();
    ranked.sort_by_key(|&index| rank(&findings.line_comments[index]));
    let cap = options.max_inline_comments.unwrap_or(usize::MAX);
    let sized_footer = Footer::new(review, ThreadId(uuid::Uuid::nil())).render();
    let mut placements: Vec<Option<Placement>> = vec![None; findings.line_comments.len()];
    let mut inline_count = 0usize;
    let mut past_cap = Vec::new();
    for &index in &ranked {
        let comment = &findings.line_comments[index];
        let verdict = &verdicts[index];
        let placement = if verdict.is_postable_inline() {
            let body = comment_body(
                comment,
                moved_note(comment, verdict).as_deref(),
                Some(verdict),
            );
            if !fits_github(&with_footer(&body, &sized_footer)) {
                Placement::Outside(OutsideReason::TooLong)
            } else if inline_count >= cap {
                past_cap.push(index);
                Placement::PastCap
            } else {
                inline_count += 1;
                Placement::Inline(body)
            }
        } else if verdict.name() == "not_in_pr" {
            Placement::Outside(OutsideReason::NotInPullRequest)
        } else {
            Placement::Outside(OutsideReason::NotInDiff)
        };
        placements[index] = Some(placement);
    }
    let mut comments = Vec::new();
    let mut outside = Vec::new();
    for (index, comment) in findings.line_comments.iter().enumerate() {
        match placements[index].take() {
            Some(Placement::Inline(body)) => {
                let footer = Footer::new(review, next_thread());
                let body = with_footer(&body, &footer.render());
                comments.extend(PayloadComment::anchored(
                    &verdicts[index],
                    comment.location().side,
                    body,
                ));
            }
            Some(Placement::Outside(reason)) => outside.push((comment, reason)),
            Some(Placement::PastCap) | None => {}
        }
    }
    let past_cap: Vec<&LineComment> = past_cap
        .into_iter()
        .map(|index| &findings.line_comments[index])
        .collect();
    let body = with_footer(
        &review_body(findings, comments.len(), &outside, &past_cap, cap),
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

/// The note opening a comment the anchorer moved.
fn moved_note(comment: &LineComment, verdict: &Verdict) -> Option<String> {
    let Verdict::Moved {
        line, start_line, ..
    } = verdict
    else {
        return None;
    };
    let location = comment.location();
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
///
/// `inline`: the verdict when the finding is posted inline (a suggestion
/// block is possible only then); `None` when it is listed in the body.
fn comment_body(comment: &LineComment, note: Option<&str>, inline: Option<&Verdict>) -> String {
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
        if let Some(replacement) = replacement_text(suggestion) {
            body.push_str("\n\n");
            body.push_str(&suggestion_section(comment, replacement, inline));
            return body;
        }
        let suggestion = footer::defuse(suggestion);
        if suggestion.contains('\n') {
            let _ = write!(body, "\n\n**Suggestion:**\n\n{suggestion}");
        } else {
            let _ = write!(body, "\n\n**Suggestion:** {suggestion}");
        }
    }
    body
}

/// The replacement text of a suggestion written as a ` ```suggestion `
/// fenced block (three or more backticks, closed by the same fence), or
/// `None` when the suggestion is prose.
pub fn replacement_text(suggestion: &str) -> Option<&str> {
    let text = suggestion.trim();
    let fence_length = text
        .chars()
        .take_while(|&character| character == '`')
        .count();
    if fence_length < 3 {
        return None;
    }
    let fence = &text[..fence_length];
    let (opening, rest) = text[fence_length..].split_once('\n')?;
    if opening.trim() != "suggestion" {
        return None;
    }
    let inner = rest.strip_suffix(fence)?;
    let inner = inner
        .strip_suffix('\n')
        .or_else(|| inner.is_empty().then_some(inner))?;
    let inner = inner.strip_suffix('\r').unwrap_or(inner);
    let closes_early = inner
        .lines()
        .any(|line| line.trim_start().starts_with(fence));
    (!closes_early).then_some(inner)
}

/// Why a replacement cannot be a one-click suggestion on `inline`'s lines,
/// or `None` when it can.
fn suggestion_refusal(
    comment: &LineComment,
    replacement: &str,
    inline: Option<&Verdict>,
) -> Option<&'static str> {
    let Some(verdict) = inline else {
        return Some("the finding is not an inline comment");
    };
    if !matches!(verdict, Verdict::Inline { .. }) {
        return Some("the comment is not on the lines it was aimed at");
    }
    if comment.side() != crate::anchor::Side::Right {
        return Some("it is about the old side of the diff");
    }
    let (_, line, start_line) = verdict.target()?;
    let lines = line - start_line.unwrap_or(line) + 1;
    if lines > MAX_SUGGESTION_LINES {
        return Some("it would replace more than 10 lines");
    }
    if footer::defuse(replacement) != replacement {
        return Some("the text holds characters review-bot does not post as code");
    }
    None
}

/// The suggestion section for a replacement: GitHub's one-click block when
/// it applies to the commented lines, else the code as a plain block and why.
fn suggestion_section(
    comment: &LineComment,
    replacement: &str,
    inline: Option<&Verdict>,
) -> String {
    if let Some(reason) = suggestion_refusal(comment, replacement, inline) {
        let language = comment
            .file
            .rsplit_once('.')
            .map(|(_, extension)| extension);
        let location = comment.location();
        return format!(
            "**Suggested replacement for {}** (not offered as a one-click change: {reason}):\n\n{}",
            describe_lines(&location),
            code_block(replacement, language),
        );
    }
    let longest_run = replacement
        .split(|character| character != '`')
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat((longest_run + 1).max(3));
    if replacement.is_empty() {
        // GitHub's way of suggesting that the lines be deleted.
        return format!("**Suggested change** (delete these lines):\n\n{fence}suggestion\n{fence}");
    }
    format!("**Suggested change:**\n\n{fence}suggestion\n{replacement}\n{fence}")
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
    past_cap: &[&LineComment],
    cap: usize,
) -> String {
    let summary = &findings.review_summary;
    let mut body = String::from("## Review summary\n\n");
    let overview = summary.overview.trim();
    if !overview.is_empty() {
        let _ = write!(body, "{}\n\n", footer::defuse(overview));
    }
    body.push_str(&counts(findings, inline, outside.len(), past_cap.len()));
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
    if !past_cap.is_empty() {
        let _ = write!(
            body,
            "\n\n### More findings\n\nThis review posts at most {cap} inline comment{} \
             (`review.max_inline_comments`); the other {} finding{} follow, most serious first.",
            if cap == 1 { "" } else { "s" },
            past_cap.len(),
            if past_cap.len() == 1 { "" } else { "s" },
        );
        for comment in past_cap {
            let location = comment.location();
            let _ = write!(
                body,
                "\n\n---\n\n{} {} ({})\n\n{}",
                inline_code(&comment.file),
                describe_lines(&location),
                location.side,
                comment_body(comment, None, None),
            );
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
                comment_body(comment, None, None),
            );
        }
    }
    body
}

/// The counts paragraph.
fn counts(findings: &Findings, inline: usize, outside: usize, past_cap: usize) -> String {
    let comments = &findings.line_comments;
    let total = comments.len();
    if total == 0 {
        return "No line comments.".to_owned();
    }
    let mut text = format!(
        "- **{total} line comment{}**: {inline} inline, {outside} outside the diff",
        if total == 1 { "" } else { "s" }
    );
    if past_cap > 0 {
        let _ = write!(text, ", {past_cap} past the inline cap (in the body)");
    }
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
