//! The review-findings format, schema v1.0 (seed 003).
//!
//! A findings file is what a reviewer hands to the stage that posts: the pull
//! request it is about, a summary, line comments with confidence and severity,
//! the review event and some metadata. The serde types here match the seed's
//! JSON field for field (Rust names are spelled out, serde names are the
//! seed's). We add two optional fields to a line comment: `side` (`RIGHT`, the
//! default, or `LEFT`) and `start_line` (the first line of a multi-line range).
//!
//! - [`validate`] checks a file and reports **every** problem with its location;
//!   `schema/review-findings-v1.0.schema.json` is the same format as a JSON
//!   Schema, kept in agreement by tests.
//! - [`github`] turns valid findings into a GitHub create-review payload.

pub mod github;
pub mod noise;
pub mod validate;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::anchor::CommentLocation;

pub use crate::anchor::Side;
pub use crate::payload::ReviewEvent;
pub use validate::{Issue, LocatedComment, Validation, validate, validate_value};

/// The only schema version this crate reads.
pub const SCHEMA_VERSION: &str = "1.0";

/// The JSON Schema of the format, shipped with the crate.
pub const JSON_SCHEMA: &str = include_str!("../../schema/review-findings-v1.0.schema.json");

/// A complete findings file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Findings {
    /// Always [`SCHEMA_VERSION`].
    pub version: String,
    /// The pull request reviewed.
    #[serde(rename = "pr_info")]
    pub pull_request: PullRequestInfo,
    /// The review's overall message.
    pub review_summary: ReviewSummary,
    /// Findings anchored on a file and line.
    pub line_comments: Vec<LineComment>,
    /// The event the reviewer recommends.
    pub review_event: ReviewEvent,
    /// Who reviewed, when, and how much.
    pub metadata: Metadata,
}

/// `pr_info`: the pull request a findings file is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequestInfo {
    /// The pull request's number.
    pub number: u64,
    /// `owner/name`.
    #[serde(rename = "repo")]
    pub repository: String,
    /// The pull request's title.
    pub title: String,
    /// The pull request's description.
    pub description: String,
    /// The head commit reviewed; becomes the review's `commit_id`.
    pub head_sha: String,
}

/// `review_summary`: the review's overall message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewSummary {
    /// High-level summary of the change.
    pub overview: String,
    /// Issue counts by confidence level, as the reviewer counted them.
    pub confidence_breakdown: ConfidenceBreakdown,
    /// The top-priority issues, one sentence each.
    pub key_findings: Vec<String>,
    /// The security evaluation.
    pub security_assessment: String,
    /// What was done well.
    pub positive_highlights: String,
}

/// `confidence_breakdown`: counts per confidence level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ConfidenceBreakdown {
    /// Comments with confidence 85–100.
    pub high: u64,
    /// Comments with confidence 60–84.
    pub medium: u64,
    /// Comments with confidence 40–59.
    pub low: u64,
    /// Comments with confidence 0–39.
    pub suggestions: u64,
}

/// One finding on a line (or a range of lines) of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineComment {
    /// Path from the repository root.
    pub file: String,
    /// The line commented on (the last line of a range).
    pub line: u32,
    /// 0–100.
    pub confidence: u8,
    /// Must agree with `confidence` (see [`ConfidenceLevel::for_confidence`]).
    pub confidence_level: ConfidenceLevel,
    /// What kind of problem this is.
    pub severity: Severity,
    /// One to ten words.
    pub title: String,
    /// The explanation, with code references.
    pub description: String,
    /// A relevant snippet, shown as code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_context: Option<String>,
    /// A fix: prose, or a ` ```suggestion ` block with the exact replacement of
    /// the commented lines (see the `github` module).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// Ours: which side of the diff `line` counts on; `RIGHT` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
    /// Ours: the first line of a range ending at `line`, on the same side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
}

impl LineComment {
    /// The side, with the default applied.
    pub fn side(&self) -> Side {
        self.side.unwrap_or_default()
    }

    /// Where the comment wants to go, for anchoring.
    pub fn location(&self) -> CommentLocation {
        CommentLocation {
            path: self.file.clone(),
            line: self.line,
            start_line: self.start_line,
            side: self.side(),
        }
    }
}

/// `metadata`: provenance of a findings file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// ISO 8601 timestamp.
    pub reviewed_at: String,
    /// Which agent wrote the file.
    pub reviewer_agent: String,
    /// How many files were reviewed.
    pub files_analyzed: u64,
    /// How many issues were found.
    pub total_issues: u64,
}

/// How sure the reviewer is; derived from the 0–100 confidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfidenceLevel {
    /// 85–100: a clear bug, security issue or best-practice violation.
    High,
    /// 60–84: a likely issue.
    Medium,
    /// 40–59: a subjective concern.
    Low,
    /// 0–39: a nice-to-have.
    Suggestion,
}

impl ConfidenceLevel {
    /// All levels, most confident first.
    pub const ALL: [ConfidenceLevel; 4] = [
        ConfidenceLevel::High,
        ConfidenceLevel::Medium,
        ConfidenceLevel::Low,
        ConfidenceLevel::Suggestion,
    ];

    /// The level seed 003's table assigns to a confidence (values over 100 count as high).
    pub const fn for_confidence(confidence: u8) -> ConfidenceLevel {
        match confidence {
            85.. => ConfidenceLevel::High,
            60..=84 => ConfidenceLevel::Medium,
            40..=59 => ConfidenceLevel::Low,
            _ => ConfidenceLevel::Suggestion,
        }
    }

    /// The level's name in the format.
    pub const fn as_str(self) -> &'static str {
        match self {
            ConfidenceLevel::High => "high",
            ConfidenceLevel::Medium => "medium",
            ConfidenceLevel::Low => "low",
            ConfidenceLevel::Suggestion => "suggestion",
        }
    }

    /// The confidence range of the level, as text (`85–100`).
    pub const fn range(self) -> &'static str {
        match self {
            ConfidenceLevel::High => "85–100",
            ConfidenceLevel::Medium => "60–84",
            ConfidenceLevel::Low => "40–59",
            ConfidenceLevel::Suggestion => "0–39",
        }
    }

    /// Seed 003's emoji: 🟢 🟡 🔵 ⚪.
    pub const fn emoji(self) -> &'static str {
        match self {
            ConfidenceLevel::High => "\u{1F7E2}",
            ConfidenceLevel::Medium => "\u{1F7E1}",
            ConfidenceLevel::Low => "\u{1F535}",
            ConfidenceLevel::Suggestion => "\u{26AA}",
        }
    }
}

impl fmt::Display for ConfidenceLevel {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// What kind of problem a finding is, most urgent first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Crashes, data corruption, null dereferences.
    Critical,
    /// Injection, auth bypass, data exposure.
    Security,
    /// N+1 queries, leaks, needless work.
    Performance,
    /// Incorrect behaviour, edge cases, state bugs.
    Logic,
    /// Best practices, maintainability, organisation.
    Improvement,
    /// Naming, comments, complexity.
    Clarity,
}

impl Severity {
    /// All severities, most urgent first.
    pub const ALL: [Severity; 6] = [
        Severity::Critical,
        Severity::Security,
        Severity::Performance,
        Severity::Logic,
        Severity::Improvement,
        Severity::Clarity,
    ];

    /// The severity's name in the format.
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::Security => "security",
            Severity::Performance => "performance",
            Severity::Logic => "logic",
            Severity::Improvement => "improvement",
            Severity::Clarity => "clarity",
        }
    }

    /// Seed 003's emoji: 🚨 🔒 ⚡ ⚠️ ✨ 📝.
    pub const fn emoji(self) -> &'static str {
        match self {
            Severity::Critical => "\u{1F6A8}",
            Severity::Security => "\u{1F512}",
            Severity::Performance => "\u{26A1}",
            Severity::Logic => "\u{26A0}\u{FE0F}",
            Severity::Improvement => "\u{2728}",
            Severity::Clarity => "\u{1F4DD}",
        }
    }

    /// `Critical`, `Security`, … for display.
    pub const fn title(self) -> &'static str {
        match self {
            Severity::Critical => "Critical",
            Severity::Security => "Security",
            Severity::Performance => "Performance",
            Severity::Logic => "Logic",
            Severity::Improvement => "Improvement",
            Severity::Clarity => "Clarity",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emoji_are_the_real_characters() {
        let confidence: Vec<&str> = ConfidenceLevel::ALL.iter().map(|l| l.emoji()).collect();
        assert_eq!(confidence, ["🟢", "🟡", "🔵", "⚪"]);
        let severity: Vec<&str> = Severity::ALL.iter().map(|s| s.emoji()).collect();
        assert_eq!(severity, ["🚨", "🔒", "⚡", "⚠️", "✨", "📝"]);
    }

    #[test]
    fn confidence_ranges_follow_seed_003() {
        use ConfidenceLevel::*;
        for (confidence, level) in [
            (100, High),
            (85, High),
            (84, Medium),
            (60, Medium),
            (59, Low),
            (40, Low),
            (39, Suggestion),
            (0, Suggestion),
        ] {
            assert_eq!(ConfidenceLevel::for_confidence(confidence), level);
        }
    }
}
