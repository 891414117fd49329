//! Validation of a findings file: every problem, each with its location.
//!
//! The file is read as a JSON value and walked field by field, so one run
//! reports every missing field, wrong type and out-of-range value — an agent
//! asked to fix its output gets the whole list at once. Locations are JSON
//! pointers (`/line_comments/2/confidence`; the empty pointer is the document).
//!
//! Rules (seed 003, plus our `side` and `start_line`):
//! - every field the seed lists is required except `code_context`,
//!   `suggestion`, `side` and `start_line`, which may also be `null`;
//! - `version` is `"1.0"`; `confidence` is an integer 0–100 and
//!   `confidence_level` is the level of its range (85–100 high, 60–84 medium,
//!   40–59 low, 0–39 suggestion); `severity`, `review_event` and `side` are
//!   their enums; `title` is 1–10 whitespace-separated words; `file` and
//!   `description` are non-empty; `line`/`start_line` are integers ≥ 1;
//!   counts are integers ≥ 0; `repo` is `owner/name`; `head_sha` is 7–64 hex
//!   digits; `reviewed_at` is an RFC 3339 timestamp.
//!
//! A `start_line` not less than `line` is a warning, not an error: JSON Schema
//! cannot compare two fields, and anchoring repairs it (equal: one line;
//! greater: swapped). So the Rust validator and the JSON Schema accept exactly
//! the same documents.
//!
//! Integers written as `42.0` are accepted, as JSON Schema does.
//!
//! **Unknown fields are tolerated** and reported as warnings, not errors: a
//! newer writer's extra field should not cost a review. Warnings also flag
//! counts lower than the comments they count (the seed's counts cover every
//! issue, so they may be higher) and an abbreviated `head_sha`.
//! Nothing here decides whether a comment's line is in the diff: that is
//! anchoring, done against the diff by the caller.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::{ConfidenceLevel, Findings, SCHEMA_VERSION, Severity, Side};
use crate::anchor::CommentLocation;

/// One problem, located by a JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// JSON pointer to the offending value (empty: the whole document).
    pub pointer: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl fmt::Display for Issue {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            write!(formatter, "(document): {}", self.message)
        } else {
            write!(formatter, "{}: {}", self.pointer, self.message)
        }
    }
}

/// Where a line comment points, read even from an otherwise invalid file so
/// that its anchoring can still be checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatedComment {
    /// Position in `line_comments`.
    pub index: usize,
    /// `file`, `line`, `start_line` (when a valid line number) and `side`
    /// (`RIGHT` when absent or invalid), as written.
    pub location: CommentLocation,
}

/// The result of validating a findings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validation {
    /// Schema errors: the file is invalid when there is at least one.
    pub errors: Vec<Issue>,
    /// Things worth telling the writer that do not make the file invalid.
    pub warnings: Vec<Issue>,
    /// The typed findings; `Some` exactly when `errors` is empty.
    pub findings: Option<Findings>,
    /// Every line comment whose `file` and `line` are usable, in order.
    pub locations: Vec<LocatedComment>,
}

impl Validation {
    /// Whether the file is valid.
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

/// Validates the bytes of a findings file (UTF-8 JSON; a leading BOM is ignored).
pub fn validate(bytes: &[u8]) -> Validation {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return document_error("the file is empty; expected a JSON object (findings schema v1.0)");
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(value) => validate_value(&value),
        Err(error) => document_error(&format!(
            "not valid JSON: {error}; expected a JSON object (findings schema v1.0)"
        )),
    }
}

fn document_error(message: &str) -> Validation {
    Validation {
        errors: vec![Issue {
            pointer: String::new(),
            message: message.to_owned(),
        }],
        warnings: Vec::new(),
        findings: None,
        locations: Vec::new(),
    }
}

/// Validates an already parsed findings document.
pub fn validate_value(value: &Value) -> Validation {
    let mut checker = Checker::default();
    let locations = checker.document(value);
    let findings = if checker.errors.is_empty() {
        match serde_json::from_value::<Findings>(normalise_integers(value.clone())) {
            Ok(findings) => Some(findings),
            Err(error) => {
                // The walk above accepts exactly what the types accept; if they
                // ever disagree, say so rather than pretend the file is valid.
                checker.error("", format!("could not be read as findings: {error}"));
                None
            }
        }
    } else {
        None
    };
    Validation {
        errors: checker.errors,
        warnings: checker.warnings,
        findings,
        locations,
    }
}

/// Rewrites integral floats (`42.0`) as integers so serde reads them as such.
fn normalise_integers(value: Value) -> Value {
    match value {
        Value::Number(number) => match as_integer(&number) {
            Some(integer) if !number.is_u64() && !number.is_i64() => Value::from(integer),
            _ => Value::Number(number),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(normalise_integers).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| (key, normalise_integers(value)))
                .collect(),
        ),
        other => other,
    }
}

/// The number as an integer, if it is one mathematically (and fits in an `i64`).
#[allow(clippy::cast_possible_truncation)] // checked: integral and within i64's range
fn as_integer(number: &serde_json::Number) -> Option<i64> {
    if let Some(integer) = number.as_i64() {
        return Some(integer);
    }
    if number.as_u64().is_some() {
        return None; // above i64::MAX: too large for every field anyway
    }
    let float = number.as_f64()?;
    (float.fract() == 0.0 && float.abs() < 9.0e15).then_some(float as i64)
}

/// The largest count JSON numbers carry exactly (2^53 − 1); the schema's maximum.
const MAX_COUNT: i64 = 9_007_199_254_740_991;

static REPOSITORY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[^/\s]+/[^/\s]+$").expect("valid pattern"));
static SHA: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[0-9a-fA-F]{7,64}$").expect("valid pattern"));
static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
        .expect("valid pattern")
});

#[derive(Default)]
struct Checker {
    errors: Vec<Issue>,
    warnings: Vec<Issue>,
}

/// A short description of a JSON value for "found …" messages.
fn describe(value: &Value) -> String {
    let shown = |text: String| {
        if text.chars().count() > 40 {
            format!("{}…", text.chars().take(40).collect::<String>())
        } else {
            text
        }
    };
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => format!("{flag}"),
        Value::Number(number) => format!("{number}"),
        Value::String(text) => format!("the string {}", shown(format!("{text:?}"))),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

fn child(pointer: &str, key: &str) -> String {
    format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"))
}

impl Checker {
    fn error(&mut self, pointer: &str, message: String) {
        self.errors.push(Issue {
            pointer: pointer.to_owned(),
            message,
        });
    }

    fn warning(&mut self, pointer: &str, message: String) {
        self.warnings.push(Issue {
            pointer: pointer.to_owned(),
            message,
        });
    }

    /// The value as an object, or an error.
    fn object<'v>(&mut self, value: &'v Value, pointer: &str) -> Option<&'v Map<String, Value>> {
        if let Value::Object(map) = value {
            Some(map)
        } else {
            self.error(
                pointer,
                format!("expected an object, found {}", describe(value)),
            );
            None
        }
    }

    /// Warns about fields not in `known`.
    fn unknown_fields(&mut self, map: &Map<String, Value>, pointer: &str, known: &[&str]) {
        for key in map.keys().filter(|key| !known.contains(&key.as_str())) {
            self.warning(&child(pointer, key), "unknown field, ignored".to_owned());
        }
    }

    /// A required field: an error when missing.
    fn required<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        pointer: &str,
        key: &str,
    ) -> Option<&'v Value> {
        let value = map.get(key);
        if value.is_none() {
            self.error(&child(pointer, key), "required field is missing".to_owned());
        }
        value
    }

    /// An optional field: `None` when missing or `null`.
    fn optional<'v>(map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
        map.get(key).filter(|value| !value.is_null())
    }

    fn string<'v>(&mut self, value: &'v Value, pointer: &str) -> Option<&'v str> {
        if let Value::String(text) = value {
            Some(text)
        } else {
            self.error(
                pointer,
                format!("expected a string, found {}", describe(value)),
            );
            None
        }
    }

    fn required_string<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        pointer: &str,
        key: &str,
    ) -> Option<&'v str> {
        let value = self.required(map, pointer, key)?;
        self.string(value, &child(pointer, key))
    }

    fn non_empty_string<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        pointer: &str,
        key: &str,
    ) -> Option<&'v str> {
        let text = self.required_string(map, pointer, key)?;
        if text.trim().is_empty() {
            self.error(&child(pointer, key), "must not be empty".to_owned());
            return None;
        }
        Some(text)
    }

    fn optional_string(&mut self, map: &Map<String, Value>, pointer: &str, key: &str) {
        if let Some(value) = Self::optional(map, key) {
            self.string(value, &child(pointer, key));
        }
    }

    /// An integer in `minimum..=maximum`, described as `what` in messages.
    fn integer(
        &mut self,
        value: &Value,
        pointer: &str,
        range: (i64, i64),
        what: &str,
    ) -> Option<i64> {
        let (minimum, maximum) = range;
        let integer = match value {
            Value::Number(number) => as_integer(number),
            _ => None,
        };
        match integer {
            Some(integer) if (minimum..=maximum).contains(&integer) => Some(integer),
            _ => {
                self.error(
                    pointer,
                    format!("expected {what}, found {}", describe(value)),
                );
                None
            }
        }
    }

    fn required_integer(
        &mut self,
        map: &Map<String, Value>,
        pointer: &str,
        key: &str,
        range: (i64, i64),
        what: &str,
    ) -> Option<i64> {
        let value = self.required(map, pointer, key)?;
        self.integer(value, &child(pointer, key), range, what)
    }

    fn count(&mut self, map: &Map<String, Value>, pointer: &str, key: &str) -> Option<i64> {
        self.required_integer(map, pointer, key, (0, MAX_COUNT), "an integer ≥ 0")
    }

    /// A string that must be one of `allowed`.
    fn one_of(&mut self, value: &Value, pointer: &str, allowed: &[&str]) -> Option<usize> {
        let text = self.string(value, pointer)?;
        let position = allowed.iter().position(|candidate| *candidate == text);
        if position.is_none() {
            let list: Vec<String> = allowed.iter().map(|name| format!("{name:?}")).collect();
            self.error(
                pointer,
                format!(
                    "expected one of {}, found {}",
                    list.join(", "),
                    describe(value)
                ),
            );
        }
        position
    }

    fn document(&mut self, value: &Value) -> Vec<LocatedComment> {
        let Some(map) = self.object(value, "") else {
            return Vec::new();
        };
        self.unknown_fields(
            map,
            "",
            &[
                "version",
                "pr_info",
                "review_summary",
                "line_comments",
                "review_event",
                "metadata",
            ],
        );
        if let Some(version) = self.required(map, "", "version")
            && version.as_str() != Some(SCHEMA_VERSION)
        {
            self.error(
                "/version",
                format!("expected \"{SCHEMA_VERSION}\", found {}", describe(version)),
            );
        }
        if let Some(value) = self.required(map, "", "pr_info") {
            self.pull_request(value);
        }
        let breakdown = self
            .required(map, "", "review_summary")
            .and_then(|value| self.summary(value));
        let mut locations = Vec::new();
        let mut levels = Vec::new();
        let mut comment_count = None;
        if let Some(value) = self.required(map, "", "line_comments") {
            if let Value::Array(comments) = value {
                comment_count = Some(comments.len());
                for (index, comment) in comments.iter().enumerate() {
                    let (location, level) = self.line_comment(comment, index);
                    locations.extend(location);
                    levels.extend(level);
                }
            } else {
                self.error(
                    "/line_comments",
                    format!("expected an array, found {}", describe(value)),
                );
            }
        }
        if let Some(value) = self.required(map, "", "review_event") {
            self.one_of(
                value,
                "/review_event",
                &["COMMENT", "REQUEST_CHANGES", "APPROVE"],
            );
        }
        let total_issues = self
            .required(map, "", "metadata")
            .and_then(|value| self.metadata(value));
        if let Some(count) = comment_count {
            self.consistency(count, &levels, breakdown, total_issues);
        }
        locations
    }

    fn pull_request(&mut self, value: &Value) {
        let pointer = "/pr_info";
        let Some(map) = self.object(value, pointer) else {
            return;
        };
        self.unknown_fields(
            map,
            pointer,
            &["number", "repo", "title", "description", "head_sha"],
        );
        self.required_integer(
            map,
            pointer,
            "number",
            (1, MAX_COUNT),
            "a pull request number ≥ 1",
        );
        if let Some(repository) = self.required_string(map, pointer, "repo")
            && !REPOSITORY.is_match(repository)
        {
            self.error(
                "/pr_info/repo",
                format!("expected \"owner/name\", found {repository:?}"),
            );
        }
        self.required_string(map, pointer, "title");
        self.required_string(map, pointer, "description");
        if let Some(sha) = self.required_string(map, pointer, "head_sha") {
            if !SHA.is_match(sha) {
                self.error(
                    "/pr_info/head_sha",
                    format!("expected a commit SHA (7 to 64 hex digits), found {sha:?}"),
                );
            } else if sha.len() != 40 && sha.len() != 64 {
                self.warning(
                    "/pr_info/head_sha",
                    "abbreviated SHA: GitHub needs the full SHA as the review's commit_id"
                        .to_owned(),
                );
            }
        }
    }

    /// Checks `review_summary`; returns the breakdown when it is fully valid.
    fn summary(&mut self, value: &Value) -> Option<[i64; 4]> {
        let pointer = "/review_summary";
        let map = self.object(value, pointer)?;
        self.unknown_fields(
            map,
            pointer,
            &[
                "overview",
                "confidence_breakdown",
                "key_findings",
                "security_assessment",
                "positive_highlights",
            ],
        );
        self.required_string(map, pointer, "overview");
        self.required_string(map, pointer, "security_assessment");
        self.required_string(map, pointer, "positive_highlights");
        if let Some(value) = self.required(map, pointer, "key_findings") {
            if let Value::Array(items) = value {
                for (index, item) in items.iter().enumerate() {
                    self.string(item, &format!("{pointer}/key_findings/{index}"));
                }
            } else {
                self.error(
                    "/review_summary/key_findings",
                    format!("expected an array of strings, found {}", describe(value)),
                );
            }
        }
        let value = self.required(map, pointer, "confidence_breakdown")?;
        let pointer = "/review_summary/confidence_breakdown";
        let map = self.object(value, pointer)?;
        self.unknown_fields(map, pointer, &["high", "medium", "low", "suggestions"]);
        let high = self.count(map, pointer, "high");
        let medium = self.count(map, pointer, "medium");
        let low = self.count(map, pointer, "low");
        let suggestions = self.count(map, pointer, "suggestions");
        Some([high?, medium?, low?, suggestions?])
    }

    /// Checks one line comment; returns its location (when usable) and its
    /// level (when confidence and level are both valid).
    fn line_comment(
        &mut self,
        value: &Value,
        index: usize,
    ) -> (Option<LocatedComment>, Option<ConfidenceLevel>) {
        let pointer = format!("/line_comments/{index}");
        let pointer = pointer.as_str();
        let Some(map) = self.object(value, pointer) else {
            return (None, None);
        };
        self.unknown_fields(
            map,
            pointer,
            &[
                "file",
                "line",
                "confidence",
                "confidence_level",
                "severity",
                "title",
                "description",
                "code_context",
                "suggestion",
                "side",
                "start_line",
            ],
        );
        let line_range = (1, i64::from(u32::MAX));
        let file = self.non_empty_string(map, pointer, "file");
        let line = self.required_integer(map, pointer, "line", line_range, "a line number ≥ 1");
        let consistent_level = self.confidence(map, pointer);
        self.texts(map, pointer);
        let side = Self::optional(map, "side")
            .and_then(|value| self.one_of(value, &child(pointer, "side"), &["RIGHT", "LEFT"]))
            .map_or(Side::Right, |position| [Side::Right, Side::Left][position]);
        let start_line = Self::optional(map, "start_line").and_then(|value| {
            self.integer(
                value,
                &child(pointer, "start_line"),
                line_range,
                "a line number ≥ 1",
            )
        });
        if let (Some(start_line), Some(line)) = (start_line, line)
            && start_line >= line
        {
            self.warning(
                &child(pointer, "start_line"),
                format!(
                    "should be less than line ({line}), found {start_line}: anchoring {}",
                    if start_line == line {
                        "treats it as a one-line comment"
                    } else {
                        "swaps the two"
                    }
                ),
            );
        }
        let location = match (file, line.and_then(|line| u32::try_from(line).ok())) {
            (Some(file), Some(line)) => Some(LocatedComment {
                index,
                location: CommentLocation {
                    path: file.to_owned(),
                    line,
                    start_line: start_line.and_then(|line| u32::try_from(line).ok()),
                    side,
                },
            }),
            _ => None,
        };
        (location, consistent_level)
    }

    /// Checks `confidence` and `confidence_level`; returns the level when both
    /// are valid and agree.
    fn confidence(&mut self, map: &Map<String, Value>, pointer: &str) -> Option<ConfidenceLevel> {
        let confidence = self.required_integer(
            map,
            pointer,
            "confidence",
            (0, 100),
            "an integer from 0 to 100",
        );
        let level = self
            .required(map, pointer, "confidence_level")
            .and_then(|value| {
                self.one_of(
                    value,
                    &child(pointer, "confidence_level"),
                    &["high", "medium", "low", "suggestion"],
                )
            })
            .map(|position| ConfidenceLevel::ALL[position]);
        let mut consistent_level = None;
        if let (Some(confidence), Some(level)) = (confidence, level) {
            let expected = ConfidenceLevel::for_confidence(u8::try_from(confidence).unwrap_or(100));
            if level == expected {
                consistent_level = Some(level);
            } else {
                self.error(
                    &child(pointer, "confidence_level"),
                    format!(
                        "\"{level}\" does not match confidence {confidence}: {} is \"{expected}\"",
                        expected.range()
                    ),
                );
            }
        }
        consistent_level
    }

    /// Checks `severity`, `title`, `description`, `code_context` and `suggestion`.
    fn texts(&mut self, map: &Map<String, Value>, pointer: &str) {
        if let Some(value) = self.required(map, pointer, "severity") {
            let names = Severity::ALL.map(Severity::as_str);
            self.one_of(value, &child(pointer, "severity"), &names);
        }
        if let Some(title) = self.required_string(map, pointer, "title") {
            let words = title.split_whitespace().count();
            if !(1..=10).contains(&words) {
                self.error(
                    &child(pointer, "title"),
                    format!("must be 1 to 10 words, found {words}"),
                );
            }
        }
        self.non_empty_string(map, pointer, "description");
        self.optional_string(map, pointer, "code_context");
        self.optional_string(map, pointer, "suggestion");
    }

    /// Checks `metadata`; returns `total_issues` when valid.
    fn metadata(&mut self, value: &Value) -> Option<i64> {
        let pointer = "/metadata";
        let map = self.object(value, pointer)?;
        self.unknown_fields(
            map,
            pointer,
            &[
                "reviewed_at",
                "reviewer_agent",
                "files_analyzed",
                "total_issues",
            ],
        );
        if let Some(timestamp) = self.required_string(map, pointer, "reviewed_at")
            && !TIMESTAMP.is_match(timestamp)
        {
            self.error(
                "/metadata/reviewed_at",
                format!(
                    "expected an ISO 8601 timestamp like \"2025-01-13T10:30:00Z\", found {timestamp:?}"
                ),
            );
        }
        self.required_string(map, pointer, "reviewer_agent");
        self.count(map, pointer, "files_analyzed");
        self.count(map, pointer, "total_issues")
    }

    /// Warnings when the reviewer's own counts disagree with its comments.
    fn consistency(
        &mut self,
        comments: usize,
        levels: &[ConfidenceLevel],
        breakdown: Option<[i64; 4]>,
        total_issues: Option<i64>,
    ) {
        // Only meaningful when every comment's level could be read.
        if let Some(breakdown) = breakdown.filter(|_| levels.len() == comments) {
            let counted = ConfidenceLevel::ALL
                .map(|level| levels.iter().filter(|seen| **seen == level).count());
            let names = ["high", "medium", "low", "suggestions"];
            for ((name, stated), counted) in names.iter().zip(breakdown).zip(counted) {
                if usize::try_from(stated).is_ok_and(|stated| stated < counted) {
                    self.warning(
                        &format!("/review_summary/confidence_breakdown/{name}"),
                        format!("says {stated} but line_comments has {counted} at this level"),
                    );
                }
            }
        }
        if let Some(total) = total_issues
            && usize::try_from(total).is_ok_and(|total| total < comments)
        {
            self.warning(
                "/metadata/total_issues",
                format!("says {total} but line_comments has {comments}"),
            );
        }
    }
}
