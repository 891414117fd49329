//! Noise control (issue 28, item 3): which findings a review shows, and how
//! many of them become inline comments.
//!
//! Three settings, each set by the operator (`[review]`, then
//! `[repositories."OWNER/REPO".review]`) or by the repository's owners (the
//! base branch's `.review-bot.toml` `[review]` table):
//!
//! - `min_severity`: the least urgent severity shown, in the format's order
//!   (critical, security, performance, logic, improvement, clarity);
//!   `clarity`, the default, shows everything;
//! - `min_confidence`: the lowest confidence (0–100) shown; 0 by default;
//! - `max_inline_comments`: at most this many inline comments (25 by
//!   default); the rest go into the review body, most serious first
//!   ([`rank`]), with file and line — never dropped.
//!
//! Pure: the caller gives the settings and the findings.

use std::cmp::Reverse;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::{LineComment, Severity};

/// The default cap on inline comments per review.
pub const DEFAULT_MAX_INLINE_COMMENTS: u32 = 25;

/// A confidence threshold, 0–100.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "i64", into = "u8")]
pub struct Confidence(u8);

impl Confidence {
    /// The threshold `value`, when it is 0–100.
    pub fn new(value: u8) -> Option<Self> {
        (value <= 100).then_some(Self(value))
    }

    /// Its value.
    pub const fn value(self) -> u8 {
        self.0
    }
}

impl TryFrom<i64> for Confidence {
    type Error = String;

    fn try_from(value: i64) -> Result<Self, Self::Error> {
        u8::try_from(value).ok().and_then(Self::new).ok_or_else(|| {
            format!("{value} is not a confidence; give a whole number from 0 to 100")
        })
    }
}

impl From<Confidence> for u8 {
    fn from(confidence: Confidence) -> Self {
        confidence.0
    }
}

/// The settings in force for one review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoiseControl {
    /// The least urgent severity shown.
    pub min_severity: Severity,
    /// The lowest confidence shown.
    pub min_confidence: Confidence,
    /// At most this many inline comments; the rest go in the body.
    pub max_inline_comments: u32,
}

impl Default for NoiseControl {
    fn default() -> Self {
        Self {
            min_severity: Severity::Clarity,
            min_confidence: Confidence(0),
            max_inline_comments: DEFAULT_MAX_INLINE_COMMENTS,
        }
    }
}

/// Settings of one layer (a repository's operator table, its
/// `.review-bot.toml`): each key only when that layer sets it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoiseOverrides {
    /// `min_severity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_severity: Option<Severity>,
    /// `min_confidence`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_confidence: Option<Confidence>,
    /// `max_inline_comments`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_inline_comments: Option<u32>,
}

impl NoiseOverrides {
    /// Whether the layer sets nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl NoiseControl {
    /// These settings with `overrides`' keys replacing the ones it sets.
    #[must_use]
    pub fn with(self, overrides: &NoiseOverrides) -> Self {
        Self {
            min_severity: overrides.min_severity.unwrap_or(self.min_severity),
            min_confidence: overrides.min_confidence.unwrap_or(self.min_confidence),
            max_inline_comments: overrides
                .max_inline_comments
                .unwrap_or(self.max_inline_comments),
        }
    }

    /// Whether a finding passes the thresholds.
    pub fn shows(&self, comment: &LineComment) -> bool {
        comment.severity <= self.min_severity && comment.confidence >= self.min_confidence.0
    }

    /// Whether the thresholds let everything through.
    pub fn shows_everything(&self) -> bool {
        self.min_severity == Severity::Clarity && self.min_confidence.0 == 0
    }
}

impl fmt::Display for NoiseControl {
    /// `min_severity logic, min_confidence 60`: the thresholds that hide findings.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.min_severity != Severity::Clarity {
            parts.push(format!("min_severity {}", self.min_severity));
        }
        if self.min_confidence.0 > 0 {
            parts.push(format!("min_confidence {}", self.min_confidence.0));
        }
        if parts.is_empty() {
            parts.push("no thresholds".to_owned());
        }
        formatter.write_str(&parts.join(", "))
    }
}

/// The order findings are ranked in: most urgent severity first, then the
/// highest confidence.
pub fn rank(comment: &LineComment) -> (Severity, Reverse<u8>) {
    (comment.severity, Reverse(comment.confidence))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_replaces_only_the_keys_it_sets() {
        let base = NoiseControl::default();
        let layered = base.with(&NoiseOverrides {
            min_confidence: Confidence::new(60),
            ..NoiseOverrides::default()
        });
        assert_eq!(layered.min_severity, Severity::Clarity);
        assert_eq!(layered.min_confidence.value(), 60);
        assert_eq!(layered.max_inline_comments, DEFAULT_MAX_INLINE_COMMENTS);
    }

    #[test]
    fn a_confidence_over_100_is_refused_with_what_to_give() {
        let error = toml::from_str::<NoiseOverrides>("min_confidence = 101").unwrap_err();
        assert!(
            error.message().contains("from 0 to 100"),
            "{}",
            error.message()
        );
        let error = toml::from_str::<NoiseOverrides>("min_confidence = -1").unwrap_err();
        assert!(error.message().contains("from 0 to 100"));
    }

    #[test]
    fn the_default_shows_everything() {
        assert!(NoiseControl::default().shows_everything());
        assert_eq!(NoiseControl::default().to_string(), "no thresholds");
    }
}
