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

use crate::anchor::{PathProblem, Side, normalize_path};
use crate::findings::Severity;

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
    pub line: u32,
    /// The first line of a multi-line comment, in the same hunk, before `line`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    /// Which side of the diff `line` is on; absent means the new file (`RIGHT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
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
    /// The path is empty, absolute, climbs out of the repository, or holds
    /// characters a path cannot.
    #[error("the path {path:?} is unusable: {problem}")]
    BadPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        problem: PathProblem,
    },
    /// A line number is zero.
    #[error("line numbers start at 1")]
    ZeroLine,
    /// A range's first line is not before its last line.
    #[error("start_line ({start_line}) must be less than line ({line})")]
    RangeBackwards {
        /// The range's first line.
        start_line: u32,
        /// The range's last line.
        line: u32,
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
    pub fn side_or_default(&self) -> Side {
        self.side.unwrap_or(Side::Right)
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

/// Checks that a path can name a repository file: not empty, relative, no
/// `..`, no NUL (see [`normalize_path`]). Tabs, backslashes and other bytes git
/// can store in a name pass: whether the file is in the pull request is the
/// anchorer's question, which also names a likely mistake.
pub fn check_relative_path(path: &str) -> Result<(), RequestProblem> {
    normalize_path(path)
        .map(drop)
        .map_err(|problem| RequestProblem::BadPath {
            path: path.to_owned(),
            problem,
        })
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

/// The most starting points [`recover_after_torn_write`] tries on one line.
/// Each try parses at most the rest of the line, so recovery is linear in the
/// line's length; a line glued from more torn writes than this is reported.
const MAX_RECOVERY_ATTEMPTS: usize = 8;

/// A writer that dies mid-write leaves a line without its newline; the next
/// writer's complete line is then appended to it. Look for a request that
/// starts at a later `{"type"` (every line our writer writes starts so, and a
/// torn prefix cannot hold one elsewhere: quotes inside its strings are
/// escaped) and runs to the end of the line.
///
/// Linear in the line's length: the candidates are found in one pass, the
/// line is checked for UTF-8 once (a torn prefix may end inside a character,
/// so only what follows the last invalid byte is searched), and at most
/// [`MAX_RECOVERY_ATTEMPTS`] parses are tried. A line of a million `{` has no
/// candidate at all.
fn recover_after_torn_write(bytes: &[u8]) -> Option<ParsedLine> {
    let valid_from = start_of_valid_utf8_suffix(bytes);
    let text = std::str::from_utf8(&bytes[valid_from..]).ok()?;
    recovery_candidates(bytes, valid_from.max(1))
        .take(MAX_RECOVERY_ATTEMPTS)
        .find_map(|start| {
            parse_request(&text[start - valid_from..])
                .ok()
                .map(|request| ParsedLine::TornThenRequest {
                    torn_bytes: start,
                    request,
                })
        })
}

/// Where a request may start at or after `from`: a `{` followed (after JSON
/// white space) by `"type"`. Each white-space run is skipped from the `{`
/// just before it, so the whole scan is linear.
fn recovery_candidates(bytes: &[u8], from: usize) -> impl Iterator<Item = usize> + '_ {
    (from..bytes.len()).filter(move |&start| {
        bytes[start] == b'{'
            && bytes[start + 1..]
                .iter()
                .position(|byte| !matches!(byte, b' ' | b'\t' | b'\r'))
                .is_some_and(|offset| bytes[start + 1 + offset..].starts_with(b"\"type\""))
    })
}

/// The offset after the last byte that is not part of valid UTF-8 (0 when the
/// whole of `bytes` is valid).
fn start_of_valid_utf8_suffix(bytes: &[u8]) -> usize {
    let mut offset = 0;
    let mut valid_from = 0;
    for chunk in bytes.utf8_chunks() {
        offset += chunk.valid().len() + chunk.invalid().len();
        if !chunk.invalid().is_empty() {
            valid_from = offset;
        }
    }
    valid_from
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torn_line_recovery_is_linear() {
        // Issue 19, item 10: a line of a million `{` was parsed from every one
        // of them (11.6 s); none of them starts a request.
        let braces = vec![b'{'; 1 << 20];
        assert_eq!(recovery_candidates(&braces, 1).count(), 0);
        assert!(matches!(parse_line(&braces), ParsedLine::Corrupt(_)));
        // Many torn writes glued together: at most MAX_RECOVERY_ATTEMPTS parses.
        let glued = r#"{"type":"general","mes"#.repeat(1 << 15);
        assert!(recovery_candidates(glued.as_bytes(), 1).count() > MAX_RECOVERY_ATTEMPTS);
        assert!(matches!(
            parse_line(glued.as_bytes()),
            ParsedLine::Corrupt(_)
        ));
        // A torn write cut inside a character, then a complete request.
        let mut line = "{\"type\":\"general\",\"message\":\"caf"
            .as_bytes()
            .to_vec();
        line.push(0xC3);
        line.extend_from_slice(br#"{ "type":"general","message":"kept"}"#);
        assert_eq!(
            parse_line(&line),
            ParsedLine::TornThenRequest {
                torn_bytes: 33,
                request: AgentRequest::General(GeneralComment {
                    message: "kept".into()
                }),
            }
        );
    }

    fn inline(path: &str, line: u32) -> InlineComment {
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
            side: Some(Side::Right),
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
        for bad in ["/etc/passwd", "../x", "a/../b", "a\u{0}b", ""] {
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
        // Names git can store, however odd, are checked against the diff instead.
        for odd in ["tab\there.txt", "a\\b", "C:/x", "new\nline"] {
            assert!(check_relative_path(odd).is_ok(), "{odd:?}");
        }
    }
}
