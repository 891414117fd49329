//! The judge (`eval --judge`): semantic matching of a case's findings to its
//! golden findings that have no line (description-only case sets, as
//! Martian's Code Review Bench).
//!
//! The pairs to judge are every (golden finding without a line, finding) on
//! the same file — any file when the golden finding names none ([`pairs`]).
//! They go to the same engine as the review, the Claude Code CLI run
//! headless with `--json-schema` structured output, [`PAIRS_PER_RUN`] pairs a
//! run to bound the cost; for each pair it answers `{"match": bool,
//! "reason": str}`. The pairs it says match become edges of the one-to-one
//! matching (`score::match_findings_judged`). A pair the judge gives no
//! verdict on does not match. Its cost, turns and time are reported apart
//! from the review's.

use std::fmt::Write as _;
use std::path::Path;

use review_agent::claude::{AgentSpend, ClaudeCode, ClaudeCodeRun};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::case::GoldenFinding;
use crate::score::Finding;

/// How many pairs one judge run decides.
pub const PAIRS_PER_RUN: usize = 20;

/// The most characters of one description or title a prompt carries.
const TEXT_LIMIT: usize = 2_000;

/// Why the judge could not decide.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    /// The judge's scratch directory could not be made.
    #[error("could not create the judge's directory `{}`: {source}", path.display())]
    Directory {
        /// The directory.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The agent run failed.
    #[error("the judge's agent run failed: {0}")]
    Agent(#[from] review_agent::AgentError),
}

/// What the judge decided on one case.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Judgement {
    /// `(golden index, finding index)` of the pairs that match.
    pub edges: Vec<(usize, usize)>,
    /// How many pairs were judged.
    pub pairs: usize,
    /// What the judge's runs took.
    pub spend: AgentSpend,
}

/// The pairs to judge: each golden finding without a line with each finding
/// on its file (on any file when it names none), in golden then finding order.
pub fn pairs(golden: &[GoldenFinding], findings: &[Finding]) -> Vec<(usize, usize)> {
    golden
        .iter()
        .enumerate()
        .filter(|(_, golden)| golden.line.is_none())
        .flat_map(|(golden_index, golden)| {
            findings
                .iter()
                .enumerate()
                .filter(move |(_, finding)| golden.file.is_empty() || golden.file == finding.file)
                .map(move |(finding_index, _)| (golden_index, finding_index))
        })
        .collect()
}

/// The structured answer the judge must give.
pub fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "pair": {"type": "integer", "minimum": 1},
                        "match": {"type": "boolean"},
                        "reason": {"type": "string"}
                    },
                    "required": ["pair", "match", "reason"]
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
    pair: usize,
    #[serde(rename = "match")]
    matches: bool,
}

/// Text cut to [`TEXT_LIMIT`] characters, on one line.
fn bounded(text: &str) -> String {
    let line = review_core::payload::single_line(text);
    if line.chars().count() <= TEXT_LIMIT {
        return line;
    }
    let mut cut: String = line.chars().take(TEXT_LIMIT).collect();
    cut.push('…');
    cut
}

/// The judge's task for one batch of pairs (numbered from 1).
pub fn judge_prompt(
    batch: &[(usize, usize)],
    golden: &[GoldenFinding],
    findings: &[Finding],
) -> String {
    let mut prompt = String::from(
        "You judge a code review against known problems. Each pair below puts a finding the \
         review made beside a known problem of the same change. Decide for each pair whether \
         the finding points out that known problem (the same defect, even in other words), \
         not merely something nearby. Do not read or run anything: answer from the text \
         through the structured output, for each pair its number, `match` true or false, and \
         a one-sentence reason.\n\n",
    );
    for (number, &(golden_index, finding_index)) in batch.iter().enumerate() {
        let (known, finding) = (&golden[golden_index], &findings[finding_index]);
        let _ = write!(
            prompt,
            "## Pair {}\n\nKnown problem{}: {}\n\nFinding at {}:{}: {}\n\n",
            number + 1,
            if known.file.is_empty() {
                String::new()
            } else {
                format!(" in {}", known.file)
            },
            bounded(&known.description),
            finding.file,
            finding.line,
            bounded(&finding.title),
        );
    }
    prompt
}

/// Judges every pair of one case (see the module documentation), the
/// scratch of each run under `directory` (also the runs' working
/// directory: the judge reads nothing of the repository).
///
/// # Errors
///
/// [`JudgeError`] when a run fails; the case then fails.
pub async fn judge(
    claude: &ClaudeCode,
    directory: &Path,
    golden: &[GoldenFinding],
    findings: &[Finding],
) -> Result<Judgement, JudgeError> {
    let all = pairs(golden, findings);
    let mut judgement = Judgement {
        pairs: all.len(),
        ..Judgement::default()
    };
    for (batch_number, batch) in all.chunks(PAIRS_PER_RUN).enumerate() {
        let run_directory = directory.join(format!("judge-{}", batch_number + 1));
        std::fs::create_dir_all(&run_directory).map_err(|source| JudgeError::Directory {
            path: run_directory.clone(),
            source,
        })?;
        let run = ClaudeCodeRun::new(
            judge_prompt(batch, golden, findings),
            directory,
            &run_directory,
        )
        .with_json_schema(answer_schema());
        let (answer, agent_run) = claude.run_structured::<Answer>(&run).await?;
        judgement.spend.add(&agent_run);
        let verdicts = answer.map(|answer| answer.verdicts).unwrap_or_default();
        for (index, pair) in batch.iter().enumerate() {
            let matches = verdicts
                .iter()
                .rev()
                .find(|verdict| verdict.pair == index + 1)
                .is_some_and(|verdict| verdict.matches);
            if matches {
                judgement.edges.push(*pair);
            }
        }
    }
    Ok(judgement)
}

#[cfg(test)]
mod tests {
    use super::*;
    use review_core::anchor::Side;

    fn finding(file: &str, line: u32, title: &str) -> Finding {
        Finding {
            file: file.to_owned(),
            line,
            start_line: None,
            side: Side::Right,
            title: title.to_owned(),
            confidence: 80,
        }
    }

    fn described(file: &str, description: &str) -> GoldenFinding {
        GoldenFinding {
            file: file.to_owned(),
            line: None,
            end_line: None,
            side: None,
            description: description.to_owned(),
        }
    }

    #[test]
    fn pairs_are_on_the_golden_file_or_any_file_and_skip_golden_findings_with_lines() {
        let golden = [
            GoldenFinding {
                line: Some(3),
                ..described("a.rs", "has a line")
            },
            described("a.rs", "in a.rs"),
            described("", "anywhere"),
        ];
        let findings = [finding("a.rs", 1, "one"), finding("b.rs", 2, "two")];
        assert_eq!(pairs(&golden, &findings), [(1, 0), (2, 0), (2, 1)]);
        let prompt = judge_prompt(&pairs(&golden, &findings), &golden, &findings);
        assert!(prompt.contains("## Pair 3\n\nKnown problem: anywhere\n\nFinding at b.rs:2: two"));
        assert!(prompt.contains("Known problem in a.rs: in a.rs"));
    }

    #[test]
    fn a_huge_multi_byte_description_is_cut_on_a_character() {
        let long = "é".repeat(TEXT_LIMIT * 2);
        let cut = bounded(&long);
        assert_eq!(cut.chars().count(), TEXT_LIMIT + 1);
        assert!(cut.ends_with('…'));
    }
}
