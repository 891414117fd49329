//! From what the two passes asked for to the review the bot will post.
//!
//! Pure functions: the agent's collected requests (per pass) become
//! `review_core::passes::PassOutput`s, are merged (duplicates dropped, one
//! answer per thread, the architecture pass winning), turned into a findings
//! document (seed 003, schema v1.0) and then into one create-review payload
//! through `review_core::findings::github`, which anchors every comment and
//! lists the ones GitHub would refuse under "Outside the diff". Findings
//! already posted in an earlier cycle (by fingerprint) are not posted again
//! but still count as unresolved. Replies get deterministic thread ids (a
//! UUID v5 of the review id and the comment replied to), so a rerun of the
//! same review finds the reply it already posted instead of posting another.
//!
//! Noise control (issue 28, item 3): findings below the repository's
//! `min_severity`/`min_confidence` are left out (the body says how many and
//! why) and do not keep the pull request in `bot-changes-needed`; past
//! `max_inline_comments` the rest go into the body, most serious first.
//! A review that posts no new finding says what is still open and why the
//! label is what it is (issue 25, item 10).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use review_core::agent_requests::{AgentRequest, ReplyTarget};
use review_core::diff::PullRequestDiff;
use review_core::findings::github::{PayloadOptions, to_review_payload_with};
use review_core::findings::noise::NoiseControl;
use review_core::findings::{
    ConfidenceBreakdown, ConfidenceLevel, Findings, LineComment, Metadata, PullRequestInfo,
    ReviewEvent, ReviewSummary, SCHEMA_VERSION, Severity,
};
use review_core::footer::{self, Footer, ReviewId, ThreadId};
use review_core::passes::{self, MergedReview, Pass, PassOutput, ThreadKey, ThreadResponse};
use review_core::payload::ReviewPayload;
use review_core::snapshot::{CommentLookup, PullRequestSnapshot};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The text a reply starts with when the agent considers a thread resolved.
pub const RESOLVED_MARKER: &str = "REVIEW BOT RESOLVED";

/// Confidence given to an inline comment whose pass did not say (medium).
pub const DEFAULT_CONFIDENCE: u8 = 60;

/// Severity given to an inline comment whose pass did not say.
pub const DEFAULT_SEVERITY: Severity = Severity::Improvement;

/// The longest title made from a comment's first words.
const TITLE_WORDS: usize = 10;

/// How the review ended, as far as the labels are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReviewOutcome {
    /// Findings or threads are left for the author: `bot-changes-needed`.
    ChangesRequested,
    /// Nothing unresolved: an LGTM review and `human-review-needed`.
    Approved,
    /// The build or the tests failed: a failure comment and `bot-changes-needed`.
    BuildFailed,
}

impl ReviewOutcome {
    /// The word stored as the run's outcome.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ChangesRequested => "changes-requested",
            Self::Approved => "approved",
            Self::BuildFailed => "build-failed",
        }
    }

    /// The label-state-machine outcome.
    pub const fn label_outcome(self) -> review_core::labels::Outcome {
        match self {
            Self::ChangesRequested => review_core::labels::Outcome::ChangesRequested,
            Self::Approved => review_core::labels::Outcome::Approved,
            Self::BuildFailed => review_core::labels::Outcome::BuildFailed,
        }
    }

    /// The outcomes that complete a review of a head commit.
    pub const COMPLETED: [ReviewOutcome; 3] = [
        ReviewOutcome::ChangesRequested,
        ReviewOutcome::Approved,
        ReviewOutcome::BuildFailed,
    ];
}

/// A reply the bot will post for the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedReply {
    /// The comment replied to: a review thread's first comment, or an issue comment.
    pub comment_id: u64,
    /// Which kind `comment_id` is.
    pub target: ReplyTarget,
    /// The body to post, footer included.
    pub body: String,
    /// The `thread::` id in its footer (how a rerun finds it).
    pub thread_id: Uuid,
    /// Whether the agent marked the thread resolved.
    pub resolved: bool,
}

/// An inline finding as recorded for fingerprinting once posted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostedFinding {
    /// The file.
    pub path: String,
    /// The line.
    pub line: u32,
    /// The agent's text (what the fingerprint hashes).
    pub body: String,
}

/// A bot thread this review resolves (issue 28, item 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadToResolve {
    /// GraphQL's node id of the thread.
    pub id: String,
    /// The REST id of its first comment (the bot's finding).
    pub comment_id: u64,
    /// The file.
    pub path: String,
    /// The line the finding was made on.
    pub line: Option<u32>,
    /// The finding's title.
    pub title: String,
}

/// The marker, in a review body, listing the threads that review resolved
/// (by first comment id): a thread the bot resolved once and a person
/// reopened is never resolved again.
pub const RESOLVED_MARKER_PREFIX: &str = "<!-- review-bot resolved:";

/// The comment ids an earlier review body says the bot resolved.
pub fn resolved_before(body: &str) -> Vec<u64> {
    body.lines()
        .filter_map(|line| line.trim().strip_prefix(RESOLVED_MARKER_PREFIX))
        .filter_map(|rest| rest.strip_suffix("-->"))
        .flat_map(|ids| {
            ids.split_whitespace()
                .filter_map(|id| id.parse().ok())
                .collect::<Vec<u64>>()
        })
        .collect()
}

/// The finding's title in a bot comment: the first `**…**` of its first lines.
pub(crate) fn title_of(body: &str) -> Option<String> {
    let start = body.find("**")? + 2;
    let end = start + body[start..].find("**")?;
    Some(body[start..end].trim().to_owned()).filter(|title| !title.is_empty())
}

/// The bot threads to resolve: started by the bot with one of its findings
/// (a `thread::` footer), not resolved, nobody but the bot has written in it
/// since the bot's last comment (and every comment was read), the lines it
/// points at changed since (`isOutdated`), never resolved by the bot before
/// (a person who reopened it decides), and not raised again by this review
/// (no finding on the same file with the same title).
pub fn threads_to_resolve(
    threads: &[review_github::GraphQlThread],
    bot: &str,
    findings: &[LineComment],
    resolved_earlier: &BTreeSet<u64>,
) -> Vec<ThreadToResolve> {
    threads
        .iter()
        .filter(|thread| !thread.is_resolved && thread.is_outdated && !thread.comments_truncated)
        .filter_map(|thread| {
            let first = thread.comments.first()?;
            let last = thread.comments.last()?;
            let by_bot =
                |author: Option<&str>| author.is_some_and(|login| login.eq_ignore_ascii_case(bot));
            if !by_bot(first.author.as_deref()) || !by_bot(last.author.as_deref()) {
                return None;
            }
            footer::own_footer(&first.body).thread?;
            let comment_id = first.database_id?;
            if resolved_earlier.contains(&comment_id) {
                return None;
            }
            let title = title_of(&first.body).unwrap_or_else(|| "Finding".to_owned());
            let raised_again = findings.iter().any(|finding| {
                finding.file == thread.path
                    && review_core::payload::single_line(&finding.title)
                        .eq_ignore_ascii_case(&title)
            });
            (!raised_again).then(|| ThreadToResolve {
                id: thread.id.clone(),
                comment_id,
                path: thread.path.clone(),
                line: thread.original_line,
                title,
            })
        })
        .collect()
}

/// The review body's paragraph listing the threads resolved, with the marker.
fn resolved_note(resolved: &[ThreadToResolve]) -> Option<String> {
    if resolved.is_empty() {
        return None;
    }
    let mut text = String::from(
        "### Resolved\n\nThe lines these earlier findings point at have changed and this review \
         does not raise them again, so their threads are resolved:\n",
    );
    for thread in resolved {
        let _ = write!(
            text,
            "\n- {}{}: {}",
            review_core::payload::inline_code(&thread.path),
            thread
                .line
                .map(|line| format!(" line {line}"))
                .unwrap_or_default(),
            footer::defuse(&review_core::payload::single_line(&thread.title)),
        );
    }
    let ids: Vec<String> = resolved
        .iter()
        .map(|thread| thread.comment_id.to_string())
        .collect();
    let _ = write!(text, "\n\n{RESOLVED_MARKER_PREFIX} {} -->", ids.join(" "));
    Some(text)
}

/// The review composed from the passes.
#[derive(Debug, Clone, PartialEq)]
pub struct Composed {
    /// The findings document (every finding, repeated ones included).
    pub findings: Findings,
    /// The create-review request (repeated findings left out).
    pub payload: ReviewPayload,
    /// Replies to post after the review.
    pub replies: Vec<PlannedReply>,
    /// The findings this review posts, to fingerprint.
    pub posted: Vec<PostedFinding>,
    /// Label outcome: changes requested or approved.
    pub outcome: ReviewOutcome,
    /// Findings not posted because an earlier review posted them.
    pub repeated: usize,
    /// Inline comments dropped as duplicates of another pass's.
    pub duplicates: usize,
    /// Unresolved threads no pass answered.
    pub unanswered: Vec<u64>,
    /// Findings left out as below the repository's thresholds.
    pub hidden: usize,
    /// Bot threads to resolve once the review is posted.
    pub resolve: Vec<ThreadToResolve>,
}

/// What [`compose`] needs.
pub struct ComposeInput<'a> {
    /// The review's id (every footer of the review carries it).
    pub review_id: ReviewId,
    /// The pull request as the agent saw it.
    pub snapshot: &'a PullRequestSnapshot,
    /// Its diff, parsed.
    pub diff: &'a PullRequestDiff,
    /// Each pass's valid requests, in pass order.
    pub passes: &'a [(Pass, Vec<AgentRequest>)],
    /// Whether an inline finding `(path, line, text)` was posted in an earlier cycle.
    pub already_posted: &'a dyn Fn(&str, u32, &str) -> bool,
    /// Paragraphs for the review body beyond the agents' own (notes about the
    /// build gate, files not reviewed, …).
    pub notes: Vec<String>,
    /// When the review was made (ISO 8601), for the findings' metadata.
    pub reviewed_at: String,
    /// Who reviewed (`claude-code/MODEL`).
    pub reviewer: String,
    /// The repository's thresholds and inline cap.
    pub noise: NoiseControl,
    /// The pull request's review threads (GraphQL), when they could be read.
    pub threads: &'a [review_github::GraphQlThread],
    /// Threads the bot resolved in earlier reviews (first comment ids).
    pub resolved_earlier: &'a BTreeSet<u64>,
    /// The paragraph that opens the overview: what this review covered
    /// ("Changes since …" of an incremental re-review, or why it is a full
    /// one; issue 28, item 2).
    pub scope: Option<String>,
}

/// The threads the agent was asked to answer: every review thread and every
/// conversation comment of someone else that the bot has not replied to.
pub fn unresolved_threads(snapshot: &PullRequestSnapshot) -> Vec<ThreadKey> {
    let bot = |user: &str| snapshot.written_by_bot(user);
    snapshot
        .review_threads
        .iter()
        .filter(|thread| !thread.replied)
        .map(|thread| ThreadKey::Comment(thread.root().id))
        .chain(
            snapshot
                .issue_comments
                .iter()
                .filter(|comment| !comment.replied && !bot(&comment.user))
                .map(|comment| ThreadKey::Comment(comment.id)),
        )
        .collect()
}

/// One pass's requests as a `PassOutput`, and the inline requests in the same order.
fn pass_output(
    pass: Pass,
    requests: &[AgentRequest],
) -> (PassOutput, Vec<&review_core::agent_requests::InlineComment>) {
    let mut output = PassOutput {
        pass,
        inline_comments: Vec::new(),
        general_comments: Vec::new(),
        thread_responses: Vec::new(),
    };
    let mut inline = Vec::new();
    for request in requests {
        match request {
            AgentRequest::Inline(comment) => {
                output.inline_comments.push(passes::InlineComment {
                    location: review_core::anchor::CommentLocation {
                        path: comment.path.clone(),
                        line: comment.line,
                        start_line: comment.start_line,
                        side: comment.side_or_default(),
                    },
                    body: comment.message.clone(),
                });
                inline.push(comment);
            }
            AgentRequest::General(comment) => output.general_comments.push(comment.message.clone()),
            AgentRequest::Reply(reply) => output.thread_responses.push(ThreadResponse {
                thread: ThreadKey::Comment(reply.comment_id),
                body: reply.message.clone(),
                resolved: is_resolved(&reply.message),
            }),
        }
    }
    (output, inline)
}

/// Whether a reply says the thread is resolved (the marker at its start,
/// ignoring markdown emphasis and white space).
pub fn is_resolved(message: &str) -> bool {
    message
        .trim_start()
        .trim_start_matches(['*', '_', '`', '#', '>', ' '])
        .to_uppercase()
        .starts_with(RESOLVED_MARKER)
}

/// Composes the review. Pure.
#[allow(clippy::too_many_lines)] // one linear recipe: merge, filter, partition, convert, collect
pub fn compose(input: &ComposeInput<'_>) -> Composed {
    let outputs: Vec<_> = input
        .passes
        .iter()
        .map(|(pass, requests)| pass_output(*pass, requests))
        .collect();
    let pass_outputs: Vec<PassOutput> = outputs.iter().map(|(output, _)| output.clone()).collect();
    let unresolved = unresolved_threads(input.snapshot);
    let merged = passes::merge_passes(&pass_outputs, &unresolved);

    let (line_comments, hidden): (Vec<LineComment>, Vec<LineComment>) =
        kept_line_comments(&merged, &outputs)
            .into_iter()
            .partition(|comment| input.noise.shows(comment));
    // As `merged.has_unresolved()`, but counting only the findings shown.
    let unresolved_left = !line_comments.is_empty()
        || !merged.unanswered.is_empty()
        || merged
            .thread_responses
            .iter()
            .any(|response| !response.item.resolved);
    let outcome = if unresolved_left {
        ReviewOutcome::ChangesRequested
    } else {
        ReviewOutcome::Approved
    };

    let (fresh, repeated): (Vec<LineComment>, Vec<LineComment>) =
        line_comments.iter().cloned().partition(|comment| {
            !(input.already_posted)(&comment.file, comment.line, &comment.description)
        });

    let unanswered: Vec<u64> = merged
        .unanswered
        .iter()
        .filter_map(|key| match key {
            ThreadKey::Comment(id) => Some(*id),
            ThreadKey::Footer(_) => None,
        })
        .collect();

    let resolve = match input.snapshot.bot_login.as_deref() {
        Some(bot) => threads_to_resolve(input.threads, bot, &line_comments, input.resolved_earlier),
        None => Vec::new(),
    };
    let overview = overview(
        input,
        &merged,
        outcome,
        &Tally {
            fresh: fresh.len(),
            repeated: &repeated,
            hidden: hidden.len(),
            unanswered: &unanswered,
        },
        resolved_note(&resolve),
    );
    let info = &input.snapshot.pull_request;
    let findings_for = |comments: Vec<LineComment>| Findings {
        version: SCHEMA_VERSION.to_owned(),
        pull_request: PullRequestInfo {
            number: info.number,
            repository: input.snapshot.repository.clone(),
            title: info.title.clone(),
            description: info.body.clone(),
            head_sha: info.head_sha.clone(),
        },
        review_summary: ReviewSummary {
            overview: overview.clone(),
            confidence_breakdown: breakdown(&comments),
            key_findings: key_findings(&comments),
            security_assessment: String::new(),
            positive_highlights: String::new(),
        },
        metadata: Metadata {
            reviewed_at: input.reviewed_at.clone(),
            reviewer_agent: input.reviewer.clone(),
            files_analyzed: input.diff.len() as u64,
            total_issues: comments.len() as u64,
        },
        line_comments: comments,
        review_event: ReviewEvent::Comment,
    };
    let posted_findings = findings_for(fresh.clone());
    let mut counter = 0u32;
    let review_uuid = input.review_id.0;
    let options = PayloadOptions {
        max_inline_comments: Some(
            usize::try_from(input.noise.max_inline_comments).unwrap_or(usize::MAX),
        ),
    };
    let conversion = to_review_payload_with(
        &posted_findings,
        input.diff,
        input.review_id,
        options,
        || {
            counter += 1;
            ThreadId(Uuid::new_v5(
                &review_uuid,
                format!("comment:{counter}").as_bytes(),
            ))
        },
    );

    let replies = merged
        .thread_responses
        .iter()
        .filter_map(|kept| planned_reply(input, &kept.item))
        .collect();

    Composed {
        findings: findings_for(line_comments),
        payload: conversion.payload,
        replies,
        posted: fresh
            .iter()
            .map(|comment| PostedFinding {
                path: comment.file.clone(),
                line: comment.line,
                body: comment.description.clone(),
            })
            .collect(),
        outcome,
        repeated: repeated.len(),
        duplicates: merged.duplicate_comments.len(),
        unanswered,
        hidden: hidden.len(),
        resolve,
    }
}

/// The kept inline comments as findings, with the fields their requests gave.
fn kept_line_comments(
    merged: &MergedReview,
    outputs: &[(PassOutput, Vec<&review_core::agent_requests::InlineComment>)],
) -> Vec<LineComment> {
    let mut used: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut comments = Vec::new();
    for kept in &merged.inline_comments {
        let found = outputs
            .iter()
            .enumerate()
            .find_map(|(pass_index, (output, requests))| {
                if output.pass != kept.pass {
                    return None;
                }
                output
                    .inline_comments
                    .iter()
                    .enumerate()
                    .find(|(index, comment)| {
                        **comment == kept.item && !used.contains(&(pass_index, *index))
                    })
                    .map(|(index, _)| (pass_index, index, requests[index]))
            });
        let Some((pass_index, index, request)) = found else {
            continue; // merge only keeps what a pass produced
        };
        used.insert((pass_index, index));
        let confidence = request.confidence.unwrap_or(DEFAULT_CONFIDENCE).min(100);
        comments.push(LineComment {
            file: request.path.clone(),
            line: request.line,
            confidence,
            confidence_level: ConfidenceLevel::for_confidence(confidence),
            severity: request.severity.unwrap_or(DEFAULT_SEVERITY),
            title: request
                .title
                .clone()
                .filter(|title| !title.trim().is_empty())
                .unwrap_or_else(|| title_from(&request.message)),
            description: request.message.clone(),
            code_context: None,
            suggestion: request.suggestion.clone(),
            side: request.side,
            start_line: request.start_line,
        });
    }
    comments
}

/// A title from a comment's first words (its first line, markdown marks removed).
fn title_from(message: &str) -> String {
    let first_line = message
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("Finding");
    let words: Vec<&str> = first_line
        .split_whitespace()
        .map(|word| word.trim_matches(['*', '_', '`', '#']))
        .filter(|word| !word.is_empty())
        .collect();
    let mut title = words
        .iter()
        .take(TITLE_WORDS)
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    if words.len() > TITLE_WORDS {
        title.push('…');
    }
    if title.is_empty() {
        "Finding".to_owned()
    } else {
        title
    }
}

/// Counts per confidence level (also after the verification pass withheld some).
pub(crate) fn breakdown(comments: &[LineComment]) -> ConfidenceBreakdown {
    let count = |level| {
        comments
            .iter()
            .filter(|comment| comment.confidence_level == level)
            .count() as u64
    };
    ConfidenceBreakdown {
        high: count(ConfidenceLevel::High),
        medium: count(ConfidenceLevel::Medium),
        low: count(ConfidenceLevel::Low),
        suggestions: count(ConfidenceLevel::Suggestion),
    }
}

/// The titles of the most serious findings (at most five).
fn key_findings(comments: &[LineComment]) -> Vec<String> {
    let mut serious: Vec<&LineComment> = comments
        .iter()
        .filter(|comment| {
            matches!(
                comment.severity,
                Severity::Critical | Severity::Security | Severity::Logic
            ) && comment.confidence_level != ConfidenceLevel::Suggestion
        })
        .collect();
    serious.sort_by_key(|comment| (comment.severity, std::cmp::Reverse(comment.confidence)));
    serious
        .into_iter()
        .take(5)
        .map(|comment| format!("{} ({}:{})", comment.title, comment.file, comment.line))
        .collect()
}

/// What the review found, for its overview.
struct Tally<'a> {
    /// Findings posted by this review.
    fresh: usize,
    /// Findings an earlier review posted, raised again.
    repeated: &'a [LineComment],
    /// Findings below the thresholds.
    hidden: usize,
    /// Threads no pass answered.
    unanswered: &'a [u64],
}

/// The review's overview: the verdict, the agents' general comments, what is
/// still open when nothing is new, the notes.
fn overview(
    input: &ComposeInput<'_>,
    merged: &MergedReview,
    outcome: ReviewOutcome,
    tally: &Tally<'_>,
    resolved: Option<String>,
) -> String {
    let mut text = String::new();
    if let Some(scope) = &input.scope {
        let _ = write!(text, "{}\n\n", scope.trim());
    }
    if outcome == ReviewOutcome::Approved {
        text.push_str("**LGTM** — no unresolved findings. Handing over to a human reviewer.\n\n");
    }
    for general in &merged.general_comments {
        let general = general.item.trim();
        if !general.is_empty() {
            let _ = write!(text, "{general}\n\n");
        }
    }
    let repeated = tally.repeated.len();
    if outcome == ReviewOutcome::ChangesRequested && tally.fresh == 0 {
        text.push_str(&still_open(input, merged, tally));
    } else if repeated > 0 {
        let _ = write!(
            text,
            "_{repeated} finding{} raised in an earlier review {} still open and not repeated here._\n\n",
            if repeated == 1 { "" } else { "s" },
            if repeated == 1 { "is" } else { "are" },
        );
    }
    if !tally.unanswered.is_empty() && tally.fresh > 0 {
        let ids: Vec<String> = tally.unanswered.iter().map(|id| format!("#{id}")).collect();
        let _ = write!(
            text,
            "_Earlier comments the review did not answer (comment ids): {}._\n\n",
            ids.join(", ")
        );
    }
    if tally.hidden > 0 {
        let _ = write!(
            text,
            "_{} finding{} below this repository's thresholds ({}) {} not shown; the \
             thresholds are `review.min_severity` and `review.min_confidence`._\n\n",
            tally.hidden,
            if tally.hidden == 1 { "" } else { "s" },
            input.noise,
            if tally.hidden == 1 { "is" } else { "are" },
        );
    }
    for note in &input.notes {
        let _ = write!(text, "{}\n\n", note.trim());
    }
    if let Some(resolved) = resolved {
        let _ = write!(text, "{resolved}\n\n");
    }
    text.trim_end().to_owned()
}

/// For a review that posts no new finding but leaves the label at
/// `bot-changes-needed`: what is still open, and that this is why.
fn still_open(input: &ComposeInput<'_>, merged: &MergedReview, tally: &Tally<'_>) -> String {
    let mut items = Vec::new();
    for finding in tally.repeated {
        items.push(format!(
            "- {} line {}: {} (raised in an earlier review, not fixed yet)",
            review_core::payload::inline_code(&finding.file),
            finding.line,
            footer::defuse(&review_core::payload::single_line(&finding.title)),
        ));
    }
    for response in &merged.thread_responses {
        if response.item.resolved {
            continue;
        }
        let ThreadKey::Comment(id) = response.item.thread else {
            continue;
        };
        items.push(match input.snapshot.find_comment(id) {
            Some(CommentLookup::ThreadRoot(thread) | CommentLookup::ThreadReply { thread, .. }) => {
                format!(
                    "- the thread on {}{}: answered, still unresolved",
                    review_core::payload::inline_code(&thread.path),
                    thread
                        .line
                        .map(|line| format!(" line {line}"))
                        .unwrap_or_default(),
                )
            }
            _ => format!("- comment #{id}: answered, still unresolved"),
        });
    }
    for id in tally.unanswered {
        items.push(format!("- comment #{id}: not answered by this review"));
    }
    let mut text = String::from("**No new findings in this review.**");
    if items.is_empty() {
        text.push_str("\n\n");
        return text;
    }
    let _ = write!(
        text,
        " Still open:\n\n{}\n\nThe label stays `{}` because {} {} still open; it moves on \
         when {} fixed or answered.\n\n",
        items.join("\n"),
        review_core::labels::Label::BotChangesNeeded.name(),
        if items.len() == 1 {
            "this item"
        } else {
            "these items"
        },
        if items.len() == 1 { "is" } else { "are" },
        if items.len() == 1 {
            "it is"
        } else {
            "they are"
        },
    );
    text
}

/// The reply for a kept thread response, when the comment is in the snapshot.
fn planned_reply(input: &ComposeInput<'_>, response: &ThreadResponse) -> Option<PlannedReply> {
    let ThreadKey::Comment(comment_id) = response.thread else {
        return None;
    };
    let thread_id = Uuid::new_v5(&input.review_id.0, format!("reply:{comment_id}").as_bytes());
    let footer = Footer::after_review(Some(input.review_id), ThreadId(thread_id)).render();
    let message = footer::defuse(response.body.trim()).into_owned();
    let (target, content) = match input.snapshot.find_comment(comment_id)? {
        CommentLookup::ThreadRoot(_) => (ReplyTarget::ReviewComment, message),
        CommentLookup::ThreadReply { .. } => return None,
        CommentLookup::Issue(comment) => (
            ReplyTarget::IssueComment,
            review_mcp::live::quote_reply(&comment.user, &footer::defuse(&comment.body), &message),
        ),
    };
    Some(PlannedReply {
        comment_id,
        target,
        body: review_core::payload::with_footer(&content, &footer),
        thread_id,
        resolved: response.resolved,
    })
}
