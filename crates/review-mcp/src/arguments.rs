//! The tools' arguments: their JSON schemas, and parsing that turns a bad call
//! into a message the model can act on.
//!
//! The tools receive their raw argument object and parse it here, instead of
//! letting rmcp reject a malformed call as a protocol error (which Claude Code
//! shows the model only as an opaque failure). Numbers sent as strings
//! (`"line": "42"`) are accepted; unknown fields are refused by name, so a
//! model that writes `body` for `message` learns the right name.

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// Arguments of `leave_inline_comment`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InlineCommentArguments {
    /// The file, relative to the repository root, exactly as the diff names it (for example `src/auth.rs`).
    pub path: String,
    /// The line to comment on (the last line of a range). A line number in the new version of the file
    /// (side RIGHT, the default) or, with side LEFT, in the old version. It must be an added, removed or
    /// context line shown in the pull request's diff.
    #[serde(deserialize_with = "lenient::number")]
    #[schemars(with = "u64", range(min = 1))]
    pub line: u64,
    /// The comment, in markdown.
    pub message: String,
    /// For a comment on several lines: the first line of the range, in the same diff hunk, before `line`.
    #[serde(default, deserialize_with = "lenient::optional_number")]
    #[schemars(with = "Option<u64>", range(min = 1))]
    pub start_line: Option<u64>,
    /// "RIGHT" (default): `line` is numbered in the new file. "LEFT": a removed line, numbered in the old file.
    #[serde(default)]
    pub side: Option<String>,
    /// A short title for the issue (a few words).
    #[serde(default)]
    pub title: Option<String>,
    /// One of: critical, security, performance, logic, improvement, clarity.
    #[serde(default)]
    pub severity: Option<String>,
    /// How sure you are that this is a real issue, 0 to 100.
    #[serde(default, deserialize_with = "lenient::optional_number")]
    #[schemars(with = "Option<u64>", range(min = 0, max = 100))]
    pub confidence: Option<u64>,
    /// A concrete fix, as text or code.
    #[serde(default)]
    pub suggestion: Option<String>,
}

/// Arguments of `leave_general_comment`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GeneralCommentArguments {
    /// The comment, in markdown. It goes into the review's summary, not on a line.
    pub message: String,
}

/// Arguments of `github_get_pr_comments`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetCommentsArguments {
    /// Also list threads and comments already replied to (default false: only those still needing an answer).
    #[serde(default, deserialize_with = "lenient::optional_bool")]
    #[schemars(with = "Option<bool>")]
    pub include_replied: Option<bool>,
}

/// Arguments of `github_post_pr_reply`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostReplyArguments {
    /// The `id` of a review thread's first comment, or of a conversation comment, as listed by
    /// `github_get_pr_comments`; or the `thread::…` id it lists for one of the bot's comments.
    pub comment_id: CommentReference,
    /// The reply, in markdown.
    pub message: String,
}

/// The comment a reply answers: GitHub's numeric id, or a `thread::{uuid}`
/// id from the footer of one of the bot's comments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommentReference {
    /// A review or issue comment id.
    Id(u64),
    /// `thread::{uuid}`, spelled as given.
    Thread(String),
}

impl std::fmt::Display for CommentReference {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Id(id) => write!(formatter, "{id}"),
            Self::Thread(thread) => formatter.write_str(thread),
        }
    }
}

/// The prefix of a thread id in a bot comment's footer.
const THREAD_PREFIX: &str = "thread::";

impl<'de> Deserialize<'de> for CommentReference {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = lenient::NumberOrText::deserialize(deserializer)?;
        if let lenient::NumberOrText::Text(text) = &value {
            let text = text.trim();
            // `get`, not indexing: the agent's text may put a multi-byte
            // character across the prefix's end, and a panic would leave the
            // tool call unanswered.
            if text.len() > THREAD_PREFIX.len()
                && text
                    .get(..THREAD_PREFIX.len())
                    .is_some_and(|prefix| prefix.eq_ignore_ascii_case(THREAD_PREFIX))
            {
                return Ok(Self::Thread(text.to_owned()));
            }
        }
        lenient::to_u64(value).map(Self::Id)
    }
}

impl JsonSchema for CommentReference {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CommentReference".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": ["integer", "string"],
            "description": "A comment id (integer) or a thread::… id",
        })
    }
}

/// Arguments of `present_review` (seed 001). Everything is optional here so
/// that a missing value gets seed 001's own error message.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PresentReviewArguments {
    /// Markdown content of the review. File references such as [auth.ts:42](src/auth.ts#L42) become clickable.
    #[schemars(required)]
    #[serde(default)]
    pub content: Option<String>,
    /// "replace" (default) replaces the whole review; "update-section" replaces one section (needs `section`);
    /// "append" adds to the end.
    #[serde(default)]
    pub mode: Option<String>,
    /// Base directory path for resolving relative file references (usually the repository root).
    #[serde(default, rename = "baseUri", alias = "base_uri")]
    #[schemars(required)]
    pub base_uri: Option<String>,
    /// The heading text of the section to replace, for `update-section` mode.
    #[serde(default)]
    pub section: Option<String>,
}

/// The JSON schema rmcp advertises for a tool's arguments.
pub fn schema<T: JsonSchema + 'static>() -> std::sync::Arc<JsonObject> {
    rmcp::handler::server::common::schema_for_input::<T>().unwrap_or_else(|error| {
        panic!(
            "the argument schema of {} is invalid: {error}",
            std::any::type_name::<T>()
        )
    })
}

/// Parses a tool's raw arguments, or says what was wrong and how the call should look.
pub fn parse<T: DeserializeOwned>(
    tool: &str,
    arguments: JsonObject,
    usage: &str,
) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::Object(arguments)).map_err(|error| {
        format!("{tool} was called with invalid arguments: {error}. Call it again with {usage}.")
    })
}

/// Deserialisers that accept what models actually send.
mod lenient {
    use serde::Deserialize;
    use serde::de::{self, Deserializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    pub(super) enum NumberOrText {
        Number(serde_json::Number),
        Text(String),
    }

    pub(super) fn to_u64<E: de::Error>(value: NumberOrText) -> Result<u64, E> {
        match value {
            NumberOrText::Number(number) => number
                .as_u64()
                .or_else(|| {
                    number
                        .as_f64()
                        .filter(|float| float.fract() == 0.0 && *float >= 0.0 && *float < 9.0e15)
                        // A whole number below 2^53 prints and parses back exactly.
                        .and_then(|float| format!("{float:.0}").parse().ok())
                })
                .ok_or_else(|| E::custom(format!("expected a whole number ≥ 0, got {number}"))),
            NumberOrText::Text(text) => {
                text.trim().trim_start_matches('#').parse().map_err(|_| {
                    E::custom(format!("expected a whole number, got the text {text:?}"))
                })
            }
        }
    }

    pub fn number<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        to_u64(NumberOrText::deserialize(deserializer)?)
    }

    pub fn optional_number<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<u64>, D::Error> {
        Option::<NumberOrText>::deserialize(deserializer)?
            .map(to_u64)
            .transpose()
    }

    pub fn optional_bool<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<bool>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum BoolOrText {
            Bool(bool),
            Text(String),
        }
        match Option::<BoolOrText>::deserialize(deserializer)? {
            None => Ok(None),
            Some(BoolOrText::Bool(value)) => Ok(Some(value)),
            Some(BoolOrText::Text(text)) => match text.trim().to_ascii_lowercase().as_str() {
                "true" => Ok(Some(true)),
                "false" => Ok(Some(false)),
                _ => Err(de::Error::custom(format!(
                    "expected true or false, got the text {text:?}"
                ))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: serde_json::Value) -> JsonObject {
        match value {
            serde_json::Value::Object(object) => object,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn numbers_may_arrive_as_text_or_floats() {
        let arguments: InlineCommentArguments = parse(
            "leave_inline_comment",
            object(json!({"path": "a.rs", "line": "42", "message": "m", "start_line": 40.0, "confidence": "90"})),
            "",
        )
        .unwrap();
        assert_eq!(
            (arguments.line, arguments.start_line, arguments.confidence),
            (42, Some(40), Some(90))
        );
        let reply: PostReplyArguments = parse(
            "github_post_pr_reply",
            object(json!({"comment_id": "#1001", "message": "m"})),
            "",
        )
        .unwrap();
        assert_eq!(reply.comment_id, CommentReference::Id(1001));
        let reply: PostReplyArguments = parse(
            "github_post_pr_reply",
            object(json!({"comment_id": "thread::0b6c3c55-8f1e-4f0e-9a8e-3c1f2a9d7e11", "message": "m"})),
            "",
        )
        .unwrap();
        assert_eq!(
            reply.comment_id,
            CommentReference::Thread("thread::0b6c3c55-8f1e-4f0e-9a8e-3c1f2a9d7e11".into())
        );
        let get: GetCommentsArguments = parse(
            "github_get_pr_comments",
            object(json!({"include_replied": "TRUE"})),
            "",
        )
        .unwrap();
        assert_eq!(get.include_replied, Some(true));
    }

    #[test]
    fn errors_name_the_field_and_the_usage() {
        let error = parse::<InlineCommentArguments>(
            "leave_inline_comment",
            object(json!({"path": "a.rs", "line": -3, "message": "m"})),
            "path, line and message",
        )
        .unwrap_err();
        assert!(
            error.starts_with("leave_inline_comment was called with invalid arguments"),
            "{error}"
        );
        assert!(error.contains("whole number"), "{error}");
        assert!(
            error.ends_with("Call it again with path, line and message."),
            "{error}"
        );
        let error = parse::<InlineCommentArguments>(
            "leave_inline_comment",
            object(json!({"path": "a.rs", "line": 3, "body": "m"})),
            "",
        )
        .unwrap_err();
        assert!(error.contains("unknown field `body`"), "{error}");
        let error =
            parse::<GeneralCommentArguments>("leave_general_comment", object(json!({})), "")
                .unwrap_err();
        assert!(error.contains("missing field `message`"), "{error}");
    }

    #[test]
    fn schemas_describe_the_fields() {
        let inline = schema::<InlineCommentArguments>();
        let required = inline["required"].as_array().unwrap();
        let required: Vec<&str> = required.iter().map(|name| name.as_str().unwrap()).collect();
        assert_eq!(required, ["path", "line", "message"]);
        assert_eq!(inline["properties"]["line"]["type"], "integer");
        let present = schema::<PresentReviewArguments>();
        assert!(
            present["properties"].get("baseUri").is_some(),
            "{present:?}"
        );
    }
}
