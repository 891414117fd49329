//! The writes the agent asks for, as JSON lines (seed 000's comment file).
//!
//! In pipeline mode the agent cannot write to GitHub. Each MCP tool call that
//! would write — an inline comment, a general comment, a reply to a thread —
//! appends one JSON object on its own line to the file named by
//! `COMMENTS_FILE`; after the agent exits the pipeline reads the lines back,
//! validates them and posts one review plus the replies.
//!
//! # Line format
//!
//! Seed 000's lines, with seed 003's optional fields on inline comments and a
//! third `reply` type:
//!
//! ```jsonl
//! {"type":"general","message":"Overall looks good"}
//! {"type":"inline","message":"Fix this bug","path":"src/auth.js","line":25}
//! {"type":"inline","message":"…","path":"src/a.rs","line":12,"start_line":10,"side":"RIGHT","title":"Unchecked index","severity":"logic","confidence":80,"suggestion":"use get()"}
//! {"type":"reply","comment_id":1001,"target":"review_comment","message":"Fixed in the next push"}
//! ```
//!
//! Readers ignore fields they do not know, so a newer writer never makes an
//! older reader drop a line. [`parse_line`] reads one line and recovers a
//! complete request that was appended after a torn (half-written) one.

use serde::{Deserialize, Serialize};

/// GitHub's limit on a comment body, in characters.
pub const MAX_MESSAGE_CHARS: usize = 65_536;

/// The longest title we accept, in characters (seed 003: "1-10 words").
pub const MAX_TITLE_CHARS: usize = 200;

/// One write the agent asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentRequest {
    /// A comment for the review body.
    General(GeneralComment),
    /// A comment on a line (or range of lines) of the diff.
    Inline(InlineComment),
    /// A reply to an existing review thread or issue comment.
    Reply(ReplyRequest),
}

/// A comment for the review body (seed 000's `general`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GeneralComment {
    /// The markdown text.
    pub message: String,
}

/// A comment on the diff (seed 000's `inline`, with seed 003's optional fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InlineComment {
    /// The markdown text.
    pub message: String,
    /// The file, relative to the repository root, `/`-separated.
    pub path: String,
    /// The line commented on (the last line of a range), numbered on `side`.
    pub line: u64,
    /// The first line of a multi-line comment, in the same hunk, before `line`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// Which side of the diff `line` is on; absent means the new file (`RIGHT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<CommentSide>,
    /// A short title (seed 003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// How serious the issue is (seed 003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// How sure the reviewer is, 0–100 (seed 003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    /// A concrete fix (seed 003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

/// The side of the diff an inline comment is on, spelled as GitHub spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum CommentSide {
    /// The old file: a deleted line, or a context line in old numbering.
    Left,
    /// The new file: an added line, or a context line in new numbering.
    Right,
}

/// Seed 003's severity categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// Every severity, in seed 003's priority order.
    pub const ALL: [Self; 6] = [
        Self::Critical,
        Self::Security,
        Self::Performance,
        Self::Logic,
        Self::Improvement,
        Self::Clarity,
    ];

    /// The name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Critical => "critical",
            Self::Security => "security",
            Self::Performance => "performance",
            Self::Logic => "logic",
            Self::Improvement => "improvement",
            Self::Clarity => "clarity",
        }
    }

    /// Parses a wire name, ignoring case and surrounding space.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        Self::ALL
            .into_iter()
            .find(|severity| severity.as_str().eq_ignore_ascii_case(text))
    }
}

/// A reply the agent wants posted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyRequest {
    /// The GitHub id of the comment replied to: a review thread's first
    /// comment, or an issue comment.
    pub comment_id: u64,
    /// What kind of comment `comment_id` names.
    pub target: ReplyTarget,
    /// The markdown text.
    pub message: String,
}

/// What a reply answers. GitHub threads replies only under review comments;
/// a reply to an issue comment is posted as a new conversation comment that
/// quotes and links the original.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyTarget {
    /// The first comment of a review thread.
    ReviewComment,
    /// An issue comment on the pull request's conversation.
    IssueComment,
}

/// A rule an otherwise well-formed request breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestProblem {
    /// The message is empty or only white space.
    #[error("the message is empty")]
    EmptyMessage,
    /// The message is longer than GitHub accepts.
    #[error("the message has {chars} characters; GitHub accepts at most {MAX_MESSAGE_CHARS}")]
    MessageTooLong {
        /// Its length in characters.
        chars: usize,
    },
    /// The path is empty, absolute, or climbs out of the repository.
    #[error("the path {path:?} is not a file inside the repository: {reason}")]
    BadPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A line number is zero.
    #[error("line numbers start at 1")]
    ZeroLine,
    /// A range's first line is not before its last line.
    #[error("start_line ({start_line}) must be less than line ({line})")]
    RangeBackwards {
        /// The range's first line.
        start_line: u64,
        /// The range's last line.
        line: u64,
    },
    /// The confidence is not a percentage.
    #[error("confidence must be between 0 and 100, got {0}")]
    ConfidenceOutOfRange(u8),
    /// The title is too long.
    #[error("the title has {chars} characters; keep it under {MAX_TITLE_CHARS} (a few words)")]
    TitleTooLong {
        /// Its length in characters.
        chars: usize,
    },
}

impl AgentRequest {
    /// Checks the rules every request must keep, whoever wrote it.
    pub fn check(&self) -> Result<(), RequestProblem> {
        match self {
            Self::General(comment) => check_message(&comment.message),
            Self::Reply(reply) => check_message(&reply.message),
            Self::Inline(comment) => comment.check(),
        }
    }

    /// The request as one JSON line, newline included: what the MCP server
    /// appends to the comments file in a single write.
    pub fn to_json_line(&self) -> String {
        // serde_json escapes control characters inside strings, so the only
        // newline in the output is the terminator added here.
        let mut line = serde_json::to_string(self).expect("a request always serialises");
        line.push('\n');
        line
    }
}

impl InlineComment {
    /// Checks the message, path, line numbers, confidence and title.
    pub fn check(&self) -> Result<(), RequestProblem> {
        check_message(&self.message)?;
        check_relative_path(&self.path)?;
        if self.line == 0 || self.start_line == Some(0) {
            return Err(RequestProblem::ZeroLine);
        }
        if let Some(start_line) = self.start_line
            && start_line >= self.line
        {
            return Err(RequestProblem::RangeBackwards {
                start_line,
                line: self.line,
            });
        }
        if let Some(confidence) = self.confidence
            && confidence > 100
        {
            return Err(RequestProblem::ConfidenceOutOfRange(confidence));
        }
        if let Some(title) = &self.title {
            let chars = title.chars().count();
            if chars > MAX_TITLE_CHARS {
                return Err(RequestProblem::TitleTooLong { chars });
            }
        }
        Ok(())
    }

    /// The side, defaulting to the new file as GitHub does.
    pub fn side_or_default(&self) -> CommentSide {
        self.side.unwrap_or(CommentSide::Right)
    }
}

/// Checks a comment body: not blank, not longer than GitHub accepts.
pub fn check_message(message: &str) -> Result<(), RequestProblem> {
    if message.trim().is_empty() {
        return Err(RequestProblem::EmptyMessage);
    }
    let chars = message.chars().count();
    if chars > MAX_MESSAGE_CHARS {
        return Err(RequestProblem::MessageTooLong { chars });
    }
    Ok(())
}

/// Checks that a path names a file inside the repository: relative, no `..`,
/// no empty or `.` components, `/`-separated.
pub fn check_relative_path(path: &str) -> Result<(), RequestProblem> {
    let bad = |reason| {
        Err(RequestProblem::BadPath {
            path: path.to_owned(),
            reason,
        })
    };
    if path.is_empty() {
        return bad("it is empty");
    }
    if path.starts_with('/') || path.starts_with('\\') || path.as_bytes().get(1) == Some(&b':') {
        return bad("it is absolute; give it relative to the repository root");
    }
    if path.contains('\\') {
        return bad("it contains a backslash; separate directories with /");
    }
    if path.contains('\0') {
        return bad("it contains a NUL byte");
    }
    for component in path.split('/') {
        match component {
            ".." => return bad("it climbs out with `..`; give it relative to the repository root"),
            "" | "." => return bad("it has an empty or `.` component; write it as the diff does"),
            _ => {}
        }
    }
    Ok(())
}

/// What one line of a comments file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParsedLine {
    /// An empty or white-space line; nothing to do.
    Blank,
    /// A complete, valid request.
    Request(AgentRequest),
    /// A torn write (a writer died mid-line) followed on the same line by a
    /// complete request; the request is kept, the torn bytes are reported.
    TornThenRequest {
        /// How many bytes of torn write precede the request.
        torn_bytes: usize,
        /// The request recovered after them.
        request: AgentRequest,
    },
    /// Nothing usable: the line is reported and skipped.
    Corrupt(LineProblem),
}

/// Why a line was skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineProblem {
    /// The bytes are not UTF-8.
    #[error("the line is not UTF-8 text")]
    NotUtf8,
    /// Not JSON, not a request object, missing fields or wrong types.
    #[error("the line is not a valid request: {0}")]
    Malformed(String),
    /// A well-formed request that breaks a rule.
    #[error("the request is invalid: {0}")]
    Invalid(RequestProblem),
}

/// Parses one line of a comments file (without its newline).
pub fn parse_line(bytes: &[u8]) -> ParsedLine {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return recover_after_torn_write(bytes)
            .unwrap_or(ParsedLine::Corrupt(LineProblem::NotUtf8));
    };
    if text.trim().is_empty() {
        return ParsedLine::Blank;
    }
    match parse_request(text) {
        Ok(request) => ParsedLine::Request(request),
        Err(problem) => recover_after_torn_write(bytes).unwrap_or(ParsedLine::Corrupt(problem)),
    }
}

fn parse_request(text: &str) -> Result<AgentRequest, LineProblem> {
    let request: AgentRequest =
        serde_json::from_str(text).map_err(|error| LineProblem::Malformed(error.to_string()))?;
    request.check().map_err(LineProblem::Invalid)?;
    Ok(request)
}

/// A writer that dies mid-write leaves a line without its newline; the next
/// writer's complete line is then appended to it. Look for a request that
/// starts at a later `{` and runs to the end of the line.
fn recover_after_torn_write(bytes: &[u8]) -> Option<ParsedLine> {
    bytes
        .iter()
        .enumerate()
        .skip(1)
        .filter(|&(_, &byte)| byte == b'{')
        .find_map(|(start, _)| {
            let text = std::str::from_utf8(&bytes[start..]).ok()?;
            parse_request(text)
                .ok()
                .map(|request| ParsedLine::TornThenRequest {
                    torn_bytes: start,
                    request,
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inline(path: &str, line: u64) -> InlineComment {
        InlineComment {
            message: "Fix this bug".into(),
            path: path.into(),
            line,
            start_line: None,
            side: None,
            title: None,
            severity: None,
            confidence: None,
            suggestion: None,
        }
    }

    #[test]
    fn seed_000_lines_parse() {
        assert_eq!(
            parse_line(
                br#"{"type":"inline","message":"Fix this bug","path":"src/auth.js","line":25}"#
            ),
            ParsedLine::Request(AgentRequest::Inline(inline("src/auth.js", 25)))
        );
        assert_eq!(
            parse_line(br#"{"type":"general","message":"Overall looks good"}"#),
            ParsedLine::Request(AgentRequest::General(GeneralComment {
                message: "Overall looks good".into()
            }))
        );
    }

    #[test]
    fn written_lines_are_seed_000_lines_with_optional_fields_omitted() {
        let line = AgentRequest::Inline(inline("src/auth.js", 25)).to_json_line();
        assert_eq!(
            line,
            "{\"type\":\"inline\",\"message\":\"Fix this bug\",\"path\":\"src/auth.js\",\"line\":25}\n"
        );
        let full = AgentRequest::Inline(InlineComment {
            message: "multi\nline".into(),
            start_line: Some(20),
            side: Some(CommentSide::Right),
            title: Some("Null check".into()),
            severity: Some(Severity::Critical),
            confidence: Some(90),
            suggestion: Some("use ?.".into()),
            ..inline("src/auth.js", 25)
        });
        let line = full.to_json_line();
        assert_eq!(line.matches('\n').count(), 1, "{line}");
        assert_eq!(
            parse_line(line.trim_end().as_bytes()),
            ParsedLine::Request(full)
        );
    }

    #[test]
    fn replies_round_trip() {
        let reply = AgentRequest::Reply(ReplyRequest {
            comment_id: 1001,
            target: ReplyTarget::ReviewComment,
            message: "Done".into(),
        });
        let line = reply.to_json_line();
        assert_eq!(
            line,
            "{\"type\":\"reply\",\"comment_id\":1001,\"target\":\"review_comment\",\"message\":\"Done\"}\n"
        );
        assert_eq!(
            parse_line(line.trim_end().as_bytes()),
            ParsedLine::Request(reply)
        );
    }

    #[test]
    fn corrupt_lines_say_what_is_wrong() {
        let problem = |bytes: &[u8]| match parse_line(bytes) {
            ParsedLine::Corrupt(problem) => problem.to_string(),
            other => panic!("expected corrupt, got {other:?}"),
        };
        assert!(
            problem(br#"{"type":"inline","message":"x","path":"a"}"#)
                .contains("missing field `line`")
        );
        assert!(
            problem(br#"{"type":"inline","message":"x","path":"a","line":"ten"}"#)
                .contains("invalid type")
        );
        assert!(problem(br#"{"type":"poem","message":"x"}"#).contains("unknown variant `poem`"));
        assert!(problem(br#"{"type":"general","message":"   "}"#).contains("empty"));
        assert!(
            problem(br#"{"type":"inline","message":"x","path":"../etc/passwd","line":1}"#)
                .contains("..")
        );
        assert!(problem(b"not json").contains("not a valid request"));
        assert!(problem(b"\xff\xfe").contains("UTF-8"));
        assert!(problem(br#"{"type":"general","mess"#).contains("EOF"));
    }

    #[test]
    fn a_request_appended_to_a_torn_line_is_recovered() {
        let torn = br#"{"type":"inline","message":"half"#;
        let whole = br#"{"type":"general","message":"kept"}"#;
        let line = [&torn[..], &whole[..]].concat();
        assert_eq!(
            parse_line(&line),
            ParsedLine::TornThenRequest {
                torn_bytes: torn.len(),
                request: AgentRequest::General(GeneralComment {
                    message: "kept".into()
                }),
            }
        );
        let line = [&b"\xff\xfe{"[..], &whole[..]].concat();
        assert!(matches!(
            parse_line(&line),
            ParsedLine::TornThenRequest { torn_bytes: 3, .. }
        ));
    }

    #[test]
    fn blank_lines_are_blank() {
        assert_eq!(parse_line(b""), ParsedLine::Blank);
        assert_eq!(parse_line(b"  \t\r"), ParsedLine::Blank);
    }

    #[test]
    fn inline_rules() {
        assert_eq!(inline("src/a.rs", 0).check(), Err(RequestProblem::ZeroLine));
        let backwards = InlineComment {
            start_line: Some(5),
            ..inline("src/a.rs", 5)
        };
        assert!(matches!(
            backwards.check(),
            Err(RequestProblem::RangeBackwards { .. })
        ));
        let overconfident = InlineComment {
            confidence: Some(101),
            ..inline("src/a.rs", 5)
        };
        assert_eq!(
            overconfident.check(),
            Err(RequestProblem::ConfidenceOutOfRange(101))
        );
        for bad in [
            "/etc/passwd",
            "../x",
            "a/../b",
            "a//b",
            "./a",
            "a\\b",
            "C:/x",
            "",
        ] {
            assert!(
                matches!(
                    check_relative_path(bad),
                    Err(RequestProblem::BadPath { .. })
                ),
                "{bad}"
            );
        }
        assert!(check_relative_path("src/lib.rs").is_ok());
        assert!(check_relative_path("a..b/c").is_ok());
    }

    #[test]
    fn severities_parse_loosely_and_print_as_seed_003() {
        assert_eq!(Severity::parse(" Critical "), Some(Severity::Critical));
        assert_eq!(Severity::parse("blocker"), None);
        for severity in Severity::ALL {
            assert_eq!(
                serde_json::to_value(severity).unwrap(),
                serde_json::Value::from(severity.as_str())
            );
        }
    }
}
