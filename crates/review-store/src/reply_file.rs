//! The seed's phase-1 reply file (`FileCommentTracker`), read for import and
//! written for export:
//!
//! ```json
//! {"replies": [{"comment_id": "123", "pr_number": 7,
//!               "replied_at": "2024-05-01T09:30:00.123456", "repository_name": "octo/widgets"}]}
//! ```
//!
//! Reading is forgiving where the seed was loose and strict where data would be
//! wrong: `comment_id` may be a JSON string (the seed's type) or number but must
//! be GitHub's numeric id; `replied_at` may carry a UTC offset (RFC 3339) or be
//! naive like Python's `datetime.now().isoformat()`, which the seed wrote in the
//! writer's local time. A bad record is reported by index and skipped; the good
//! ones are kept. Writing uses the same shape, with `comment_id` as a string and
//! `replied_at` in RFC 3339 with microseconds and `+00:00`, which Python's
//! `datetime.fromisoformat` reads back.

use std::io;

use chrono::{
    DateTime, Local, NaiveDateTime, Offset as _, SecondsFormat, TimeDelta, TimeZone as _, Utc,
};
use serde::Serialize;
use serde_json::Value;

use crate::repositories::repository_key;
use crate::{CommentId, CommentReply};

/// Longest excerpt of a bad value quoted in an error message.
const EXCERPT_LENGTH: usize = 60;

/// How to read a `replied_at` that has no UTC offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NaiveTimestamps {
    /// In this machine's time zone: what the seed's `datetime.now()` wrote, when
    /// the file is imported on the host that wrote it.
    #[default]
    Local,
    /// As UTC.
    Utc,
}

/// A reply file, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedReplyFile {
    /// The records that were well-formed, in file order.
    pub replies: Vec<CommentReply>,
    /// The records that were not, with why.
    pub malformed: Vec<MalformedRecord>,
}

/// A record that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedRecord {
    /// Its 0-based position in the `replies` array.
    pub index: usize,
    /// Every problem found, joined with `; `.
    pub reason: String,
}

/// A file that is not a reply file at all.
#[derive(Debug, thiserror::Error)]
pub enum ReplyFileError {
    /// Not JSON.
    #[error(
        "not valid JSON at line {line}, column {column}: {message}; a reply file looks like \
         {{\"replies\": [{{\"comment_id\": \"123\", \"pr_number\": 7, \"replied_at\": \
         \"2024-05-01T09:30:00\", \"repository_name\": \"owner/repo\"}}]}}"
    )]
    NotJson {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What the parser expected.
        message: String,
    },
    /// JSON, but not the expected shape.
    #[error(
        "valid JSON but not a reply file: {reason}; expected an object with a \"replies\" array"
    )]
    WrongShape {
        /// What is wrong.
        reason: String,
    },
}

/// Reads a reply file's text.
pub fn parse(text: &str, naive: NaiveTimestamps) -> Result<ParsedReplyFile, ReplyFileError> {
    let document: Value = serde_json::from_str(text).map_err(|error| ReplyFileError::NotJson {
        line: error.line(),
        column: error.column(),
        message: strip_position(&error.to_string()),
    })?;
    let Value::Object(mut top) = document else {
        return Err(ReplyFileError::WrongShape {
            reason: format!("the top level is {}", describe(&document)),
        });
    };
    let records = match top.remove("replies") {
        Some(Value::Array(records)) => records,
        Some(other) => {
            return Err(ReplyFileError::WrongShape {
                reason: format!("\"replies\" is {}", describe(&other)),
            });
        }
        None => {
            return Err(ReplyFileError::WrongShape {
                reason: "it has no \"replies\" key".to_owned(),
            });
        }
    };
    let mut parsed = ParsedReplyFile {
        replies: Vec::with_capacity(records.len()),
        malformed: Vec::new(),
    };
    for (index, record) in records.iter().enumerate() {
        match parse_record(record, naive) {
            Ok(reply) => parsed.replies.push(reply),
            Err(problems) => parsed.malformed.push(MalformedRecord {
                index,
                reason: problems.join("; "),
            }),
        }
    }
    Ok(parsed)
}

fn parse_record(record: &Value, naive: NaiveTimestamps) -> Result<CommentReply, Vec<String>> {
    let Value::Object(fields) = record else {
        return Err(vec![format!(
            "expected an object, found {}",
            describe(record)
        )]);
    };
    let mut problems = Vec::new();
    let comment_id = field(
        fields.get("comment_id"),
        "comment_id",
        &mut problems,
        |value| {
            positive_integer(value).map(CommentId).ok_or_else(|| {
                format!(
                    "comment_id must be GitHub's numeric comment id, found {}",
                    excerpt(value)
                )
            })
        },
    );
    let pull_request = field(
        fields.get("pr_number"),
        "pr_number",
        &mut problems,
        |value| {
            positive_integer(value).ok_or_else(|| {
                format!(
                    "pr_number must be a positive integer, found {}",
                    excerpt(value)
                )
            })
        },
    );
    let replied_at = field(
        fields.get("replied_at"),
        "replied_at",
        &mut problems,
        |value| {
            value
                .as_str()
                .and_then(|text| parse_timestamp(text, naive))
                .ok_or_else(|| {
                    format!(
                        "replied_at must be an ISO 8601 date and time such as \
                     \"2024-05-01T09:30:00.123456\", found {}",
                        excerpt(value)
                    )
                })
        },
    );
    let repository = field(
        fields.get("repository_name"),
        "repository_name",
        &mut problems,
        |value| match value.as_str() {
            Some(name) => repository_key(name)
                .map(|_| name.to_owned())
                .map_err(|error| format!("repository_name: {error}")),
            None => Err(format!(
                "repository_name must be a string, found {}",
                excerpt(value)
            )),
        },
    );
    match (comment_id, pull_request, replied_at, repository) {
        (Some(comment_id), Some(pull_request), Some(replied_at), Some(repository))
            if problems.is_empty() =>
        {
            Ok(CommentReply {
                comment_id,
                pull_request,
                repository,
                replied_at,
            })
        }
        _ => Err(problems),
    }
}

/// Reads one field, noting a problem if it is missing or rejected.
fn field<T>(
    value: Option<&Value>,
    name: &str,
    problems: &mut Vec<String>,
    read: impl FnOnce(&Value) -> Result<T, String>,
) -> Option<T> {
    let Some(value) = value else {
        problems.push(format!("{name} is missing"));
        return None;
    };
    read(value).map_err(|problem| problems.push(problem)).ok()
}

/// A positive integer given as a JSON number or a string of digits.
fn positive_integer(value: &Value) -> Option<u64> {
    let number = match value {
        Value::Number(number) => number.as_u64()?,
        Value::String(text) if text.bytes().all(|byte| byte.is_ascii_digit()) => {
            text.parse().ok()?
        }
        _ => return None,
    };
    // The store holds signed 64-bit integers; GitHub's ids are far below.
    (number > 0 && i64::try_from(number).is_ok()).then_some(number)
}

fn parse_timestamp(text: &str, naive: NaiveTimestamps) -> Option<DateTime<Utc>> {
    if let Ok(time) = DateTime::parse_from_rfc3339(text) {
        return Some(time.with_timezone(&Utc));
    }
    let local = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f"))
        .ok()?;
    Some(match naive {
        NaiveTimestamps::Utc => local.and_utc(),
        NaiveTimestamps::Local => {
            if let Some(time) = Local.from_local_datetime(&local).earliest() {
                time.with_timezone(&Utc)
            } else {
                // A wall-clock time skipped by a daylight-saving change: read it
                // with the offset in force just then (off by at most the change).
                let offset = Local.offset_from_utc_datetime(&local).fix();
                (local - TimeDelta::seconds(i64::from(offset.local_minus_utc()))).and_utc()
            }
        }
    })
}

/// `serde_json`'s message without its trailing " at line L column C" (we say it ourselves).
fn strip_position(message: &str) -> String {
    message
        .rsplit_once(" at line ")
        .map_or(message, |(text, _)| text)
        .to_owned()
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value as JSON, cut short if long.
fn excerpt(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= EXCERPT_LENGTH {
        return text;
    }
    let cut: String = text.chars().take(EXCERPT_LENGTH).collect();
    format!("{cut}…")
}

#[derive(Serialize)]
struct FileOut<'a> {
    replies: Vec<RecordOut<'a>>,
}

#[derive(Serialize)]
struct RecordOut<'a> {
    comment_id: String,
    pr_number: u64,
    replied_at: String,
    repository_name: &'a str,
}

/// Writes `replies` in the seed's format, indented like the seed's files.
pub fn write(mut writer: impl io::Write, replies: &[CommentReply]) -> io::Result<()> {
    let file = FileOut {
        replies: replies
            .iter()
            .map(|reply| RecordOut {
                comment_id: reply.comment_id.to_string(),
                pr_number: reply.pull_request,
                replied_at: reply
                    .replied_at
                    .to_rfc3339_opts(SecondsFormat::Micros, false),
                repository_name: &reply.repository,
            })
            .collect(),
    };
    serde_json::to_writer_pretty(&mut writer, &file)?;
    writer.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(comment: u64, pull_request: u64, repository: &str, at: &str) -> CommentReply {
        CommentReply {
            comment_id: CommentId(comment),
            pull_request,
            repository: repository.to_owned(),
            replied_at: DateTime::parse_from_rfc3339(at)
                .unwrap()
                .with_timezone(&Utc),
        }
    }

    #[test]
    fn reads_the_seeds_own_output() {
        // What FileCommentTracker writes: string ids, naive local timestamps.
        let text = r#"{
          "replies": [
            {"comment_id": "1001", "pr_number": 7, "replied_at": "2024-05-01T09:30:00.123456",
             "repository_name": "octo/widgets"},
            {"comment_id": 1002, "pr_number": "8", "replied_at": "2024-05-01T09:31:00",
             "repository_name": "octo/widgets", "extra": true}
          ]
        }"#;
        let parsed = parse(text, NaiveTimestamps::Utc).unwrap();
        assert_eq!(parsed.malformed, vec![]);
        assert_eq!(
            parsed.replies,
            vec![
                reply(1001, 7, "octo/widgets", "2024-05-01T09:30:00.123456Z"),
                reply(1002, 8, "octo/widgets", "2024-05-01T09:31:00Z"),
            ]
        );
    }

    #[test]
    fn keeps_offsets_when_present() {
        let text = r#"{"replies": [{"comment_id": "5", "pr_number": 1,
            "replied_at": "2024-05-01T11:30:00+02:00", "repository_name": "o/r"}]}"#;
        let parsed = parse(text, NaiveTimestamps::Local).unwrap();
        assert_eq!(
            parsed.replies,
            vec![reply(5, 1, "o/r", "2024-05-01T09:30:00Z")]
        );
    }

    #[test]
    fn reports_each_bad_record_by_index_and_keeps_the_rest() {
        let text = r#"{"replies": [
            {"comment_id": "1", "pr_number": 1, "replied_at": "2024-05-01T09:30:00", "repository_name": "o/r"},
            {"comment_id": "replied-123", "pr_number": 1, "replied_at": "2024-05-01T09:30:00", "repository_name": "o/r"},
            {"pr_number": -3, "replied_at": "yesterday", "repository_name": ""},
            "not an object",
            {"comment_id": "2", "pr_number": 1, "replied_at": "2024-05-01T09:30:00", "repository_name": "o/r"}
        ]}"#;
        let parsed = parse(text, NaiveTimestamps::Utc).unwrap();
        assert_eq!(parsed.replies.len(), 2);
        let indexes: Vec<usize> = parsed.malformed.iter().map(|bad| bad.index).collect();
        assert_eq!(indexes, vec![1, 2, 3]);
        assert!(parsed.malformed[0].reason.contains("numeric comment id"));
        let reasons = &parsed.malformed[1].reason;
        for expected in [
            "comment_id is missing",
            "pr_number must be a positive integer",
            "replied_at must be an ISO 8601",
            "repository_name: invalid repository name",
        ] {
            assert!(reasons.contains(expected), "{reasons}");
        }
        assert!(parsed.malformed[2].reason.contains("expected an object"));
    }

    #[test]
    fn a_file_that_is_not_json_says_where_and_what_to_expect() {
        let error = parse("comment_id,pr_number\n1,2\n", NaiveTimestamps::Utc)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("not valid JSON at line 1, column 1"),
            "{error}"
        );
        assert!(error.contains("\"replies\""), "{error}");
    }

    #[test]
    fn json_of_the_wrong_shape_says_what_is_wrong() {
        for (text, expected) in [
            ("[]", "the top level is an array"),
            ("{}", "no \"replies\" key"),
            (r#"{"replies": {}}"#, "\"replies\" is an object"),
        ] {
            let error = parse(text, NaiveTimestamps::Utc).unwrap_err().to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn long_bad_values_are_cut_short() {
        let long = "x".repeat(10_000);
        let text = format!(
            r#"{{"replies": [{{"comment_id": "{long}", "pr_number": 1,
            "replied_at": "2024-05-01T09:30:00", "repository_name": "o/r"}}]}}"#
        );
        let parsed = parse(&text, NaiveTimestamps::Utc).unwrap();
        assert!(parsed.malformed[0].reason.len() < 200);
    }

    #[test]
    fn writing_then_reading_round_trips() {
        let replies = vec![
            reply(1, 2, "Octo/Widgets", "2024-05-01T09:30:00.123456Z"),
            reply(3, 4, "o/r", "2023-01-01T00:00:00Z"),
        ];
        let mut out = Vec::new();
        write(&mut out, &replies).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(r#""comment_id": "1""#), "{text}");
        assert!(
            text.contains(r#""replied_at": "2024-05-01T09:30:00.123456+00:00""#),
            "{text}"
        );
        let parsed = parse(&text, NaiveTimestamps::Local).unwrap();
        assert_eq!(parsed.malformed, vec![]);
        assert_eq!(parsed.replies, replies);
    }
}
