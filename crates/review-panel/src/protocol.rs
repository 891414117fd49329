//! Review-panel protocol v1, the listening side.
//!
//! One JSON line in (`{"protocol":"review-bot.review-panel/1","kind":"present_review",
//! "mode","section","baseUri","content","document"}`), one JSON line out
//! (`{"ok":true}` or `{"ok":false,"error":"…"}`). The sending side and the full
//! description live in `review_mcp::panel`; this crate does not depend on the
//! MCP server, so the shape is repeated here and the end-to-end test holds the
//! two together.

use serde::{Deserialize, Serialize};

/// The protocol name and version this panel speaks.
pub const PROTOCOL: &str = "review-bot.review-panel/1";

/// One `present_review` call.
#[derive(Debug, Clone, Deserialize)]
pub struct PresentReview {
    /// Must be [`PROTOCOL`].
    pub protocol: String,
    /// Must be `present_review`.
    pub kind: String,
    /// `replace`, `update-section` or `append`.
    pub mode: String,
    /// The section for `update-section`.
    #[serde(default)]
    pub section: Option<String>,
    /// The directory file references resolve against.
    #[serde(rename = "baseUri")]
    pub base_uri: String,
    /// This call's Markdown.
    #[serde(default)]
    pub content: String,
    /// The whole review after the call: what the page shows.
    pub document: String,
}

/// Why a line is not a message this panel takes.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// Not UTF-8 JSON of the expected shape.
    #[error("the message is not a review-panel protocol v1 JSON object: {0}")]
    NotJson(#[from] serde_json::Error),
    /// Another protocol or version.
    #[error("unsupported protocol {0:?}; this panel speaks {PROTOCOL}")]
    UnsupportedProtocol(String),
    /// Another kind of message.
    #[error("unsupported message kind {0:?}; this panel takes present_review")]
    UnsupportedKind(String),
}

/// Parses one line (its trailing newline allowed).
pub fn parse_line(line: &[u8]) -> Result<PresentReview, ProtocolError> {
    let message: PresentReview = serde_json::from_slice(line.trim_ascii_end())?;
    if message.protocol != PROTOCOL {
        return Err(ProtocolError::UnsupportedProtocol(message.protocol));
    }
    if message.kind != "present_review" {
        return Err(ProtocolError::UnsupportedKind(message.kind));
    }
    Ok(message)
}

/// The answer line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Acknowledgement {
    /// Whether the review is shown.
    pub ok: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Acknowledgement {
    /// `{"ok":true}`.
    pub fn accepted() -> Self {
        Self {
            ok: true,
            error: None,
        }
    }

    /// `{"ok":false,"error":…}`.
    pub fn refused(error: impl Into<String>) -> Self {
        Self {
            ok: false,
            error: Some(error.into()),
        }
    }

    /// The JSON line, newline included.
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).expect("an acknowledgement serialises");
        line.push(b'\n');
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_line_parses_and_others_say_why_not() {
        let line = br##"{"protocol":"review-bot.review-panel/1","kind":"present_review","mode":"replace","section":null,"baseUri":"/repo","content":"# A","document":"# A"}"##;
        let message = parse_line(line).unwrap();
        assert_eq!(message.base_uri, "/repo");
        assert_eq!(message.document, "# A");

        let error = parse_line(b"not json\n").unwrap_err();
        assert!(
            error.to_string().contains("not a review-panel protocol v1"),
            "{error}"
        );
        let other = br#"{"protocol":"other/2","kind":"present_review","mode":"replace","baseUri":"/","document":""}"#;
        assert!(matches!(
            parse_line(other),
            Err(ProtocolError::UnsupportedProtocol(_))
        ));
    }

    #[test]
    fn acknowledgements_are_one_json_line() {
        assert_eq!(Acknowledgement::accepted().to_line(), b"{\"ok\":true}\n");
        assert_eq!(
            Acknowledgement::refused("no").to_line(),
            b"{\"ok\":false,\"error\":\"no\"}\n"
        );
    }
}
