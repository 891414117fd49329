//! The verification pass (`review.verify`): each finding of the review
//! passes is looked at again by a fresh agent run that sees the finding, the
//! checkout and the diff, and answers, through Claude Code's structured
//! output (`--json-schema`), `confirmed` or `refuted` with a confidence
//! 0–100. A refuted finding, or a confirmed one under `min_confidence`, is
//! withheld: not posted, kept in the result with its verdict. Findings share
//! a run, [`BATCH`] at a time, to bound the cost. A finding the verifier
//! gives no verdict on is kept as it was: the pass removes only what it
//! refutes or doubts.
//!
//! Both flows run it on the merged findings: `review --local` and `eval`
//! (`local`), and the GitHub review (`review::Job::compose`), which composes
//! the review again without the withheld findings ([`without`]), records
//! them in the review's plan ([`WithheldFinding`]) and counts them in
//! `review_bot_findings_withheld_total`.

use std::fmt::Write as _;
use std::path::Path;

use review_agent::claude::{AgentSpend, ClaudeCode, ClaudeCodeRun};
use review_core::agent_requests::AgentRequest;
use review_core::findings::LineComment;
use review_core::passes::Pass;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::agent_pass::PassError;

/// How many findings one verifier run looks at.
pub const BATCH: usize = 5;

/// The most diff text a verifier prompt carries (the agent reads the rest
/// from the checkout with `git diff`).
const DIFF_LIMIT: usize = 60_000;

/// The verifier's answer on one finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// True for `confirmed`, false for `refuted`.
    pub confirmed: bool,
    /// 0–100: how sure the verifier is of its verdict.
    pub confidence: u8,
    /// One or two sentences.
    pub reason: String,
}

/// What the pass did.
#[derive(Debug, Clone, Default)]
pub struct Verification {
    /// The findings to post (confirmed, or without a verdict).
    pub kept: Vec<LineComment>,
    /// The findings withheld as unlikely, with the verdict that withheld them.
    pub withheld: Vec<(LineComment, Verdict)>,
    /// What the verifier runs took.
    pub spend: AgentSpend,
}

/// A finding the verification pass withheld, as the review's plan records it
/// (so a resumed review posts exactly what the first run decided).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithheldFinding {
    /// The file.
    pub path: String,
    /// The line (the last of a range).
    pub line: u32,
    /// The finding's title.
    pub title: String,
    /// `refuted`, or `confirmed` (with a confidence under `min_confidence`).
    pub verdict: String,
    /// The verifier's confidence in its verdict, 0–100.
    pub confidence: u8,
    /// The verifier's reason.
    pub reason: String,
}

impl WithheldFinding {
    /// The record of `finding` withheld by `verdict`.
    pub fn of(finding: &LineComment, verdict: &Verdict) -> Self {
        Self {
            path: finding.file.clone(),
            line: finding.line,
            title: finding.title.clone(),
            verdict: if verdict.confirmed {
                "confirmed"
            } else {
                "refuted"
            }
            .to_owned(),
            confidence: verdict.confidence,
            reason: verdict.reason.clone(),
        }
    }
}

/// The passes' requests without the inline comments `withheld` came from
/// (same file, lines, side and text), so composing them again gives the
/// review without those findings.
pub fn without(
    passes: &[(Pass, Vec<AgentRequest>)],
    withheld: &[(LineComment, Verdict)],
) -> Vec<(Pass, Vec<AgentRequest>)> {
    let is_withheld = |request: &AgentRequest| match request {
        AgentRequest::Inline(comment) => withheld.iter().any(|(finding, _)| {
            finding.file == comment.path
                && finding.line == comment.line
                && finding.start_line == comment.start_line
                && finding.side() == comment.side_or_default()
                && finding.description == comment.message
        }),
        _ => false,
    };
    passes
        .iter()
        .map(|(pass, requests)| {
            (
                *pass,
                requests
                    .iter()
                    .filter(|request| !is_withheld(request))
                    .cloned()
                    .collect(),
            )
        })
        .collect()
}

/// The structured answer the verifier must give.
pub fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "finding": {"type": "integer", "minimum": 1},
                        "verdict": {"type": "string", "enum": ["confirmed", "refuted"]},
                        "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
                        "reason": {"type": "string"}
                    },
                    "required": ["finding", "verdict", "confidence", "reason"]
                }
            }
        },
        "required": ["verdicts"]
    })
}

#[derive(Debug, Deserialize)]
struct Answer {
    verdicts: Vec<AnswerVerdict>,
}

#[derive(Debug, Deserialize)]
struct AnswerVerdict {
    finding: usize,
    verdict: String,
    confidence: u8,
    #[serde(default)]
    reason: String,
}

/// The verifier's task for one batch (numbered from 1).
pub fn verifier_prompt(findings: &[&LineComment], diff: &str, base_ref: &str) -> String {
    let mut prompt = format!(
        "You verify findings of a code review of the changes in this checkout \
         (`git diff {base_ref}...HEAD`). For each finding below, read the code it points \
         at and decide whether it is a real problem the change introduces. Answer through \
         the structured output: for each finding its number, `confirmed` or `refuted`, your \
         confidence 0-100 in that verdict, and a one-sentence reason. Refute a finding that \
         is wrong, already handled, or not caused by the change.\n\n"
    );
    for (index, finding) in findings.iter().enumerate() {
        let _ = write!(
            prompt,
            "## Finding {}\n\n{}:{} ({} side) — {}\n\n{}\n\n",
            index + 1,
            finding.file,
            finding.line,
            match finding.side() {
                review_core::anchor::Side::Left => "old",
                review_core::anchor::Side::Right => "new",
            },
            review_core::payload::single_line(&finding.title),
            finding.description.trim()
        );
    }
    let mut shown = diff;
    let mut cut = false;
    if shown.len() > DIFF_LIMIT {
        let mut end = DIFF_LIMIT;
        while !shown.is_char_boundary(end) {
            end -= 1;
        }
        shown = &shown[..end];
        cut = true;
    }
    prompt.push_str("## The diff\n\n```diff\n");
    prompt.push_str(shown);
    if cut {
        prompt.push_str("\n… (cut; run `git diff` for the rest)");
    }
    prompt.push_str("\n```\n");
    prompt
}

/// Runs the pass on `findings` in `worktree` (see the module documentation).
pub async fn verify(
    claude: &ClaudeCode,
    worktree: &Path,
    run_directory: &Path,
    diff: &str,
    base_ref: &str,
    findings: &[LineComment],
    min_confidence: u8,
) -> Result<Verification, PassError> {
    let mut verification = Verification::default();
    for (batch_number, batch) in findings.chunks(BATCH).enumerate() {
        let directory = run_directory.join(format!("verify-{}", batch_number + 1));
        std::fs::create_dir_all(&directory).map_err(|source| PassError::File {
            path: directory.clone(),
            source,
        })?;
        let references: Vec<&LineComment> = batch.iter().collect();
        let run = ClaudeCodeRun::new(
            verifier_prompt(&references, diff, base_ref),
            worktree,
            &directory,
        )
        .with_json_schema(answer_schema());
        let (answer, agent_run) = claude.run_structured::<Answer>(&run).await?;
        verification.spend.add(&agent_run);
        let verdicts = answer.map(|answer| answer.verdicts).unwrap_or_default();
        for (index, finding) in batch.iter().enumerate() {
            let verdict = verdicts
                .iter()
                .rev()
                .find(|verdict| verdict.finding == index + 1)
                .map(|verdict| Verdict {
                    confirmed: verdict.verdict == "confirmed",
                    confidence: verdict.confidence.min(100),
                    reason: verdict.reason.clone(),
                });
            match verdict {
                Some(verdict) if !verdict.confirmed || verdict.confidence < min_confidence => {
                    verification.withheld.push((finding.clone(), verdict));
                }
                _ => verification.kept.push(finding.clone()),
            }
        }
    }
    Ok(verification)
}

/// The review body's line when the verification pass failed and the
/// findings went out unverified.
pub fn not_run_note() -> String {
    "_The verification pass did not run (the verifier failed; the operator has been told): \
     these findings are posted unverified._"
        .to_owned()
}

/// The review body's line for withheld findings, if any.
pub fn withheld_note(count: usize) -> Option<String> {
    match count {
        0 => None,
        1 => Some("_1 finding withheld as unlikely by the verification pass._".to_owned()),
        count => Some(format!(
            "_{count} findings withheld as unlikely by the verification pass._"
        )),
    }
}
