//! What the model server received: every request, parsed, for assertions and
//! for script closures that decide a turn from the tool results sent back.

use serde_json::Value;

/// Which part of the server a request was routed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// A `POST /v1/messages` of the main conversation: answered from the script's turns.
    Main,
    /// A `POST /v1/messages` the script classifies as a side request (by default:
    /// one that offers no tools): answered with the script's side answer.
    Side,
    /// Anything else (`count_tokens`, `HEAD /`, unknown paths): answered generically.
    Other,
}

/// One HTTP request the model server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// Position among all requests the server received, from 0.
    pub sequence: usize,
    /// How it was routed.
    pub kind: RequestKind,
    /// HTTP method (`POST`, `HEAD`, …).
    pub method: String,
    /// Path and query, as sent (`/v1/messages?beta=true`).
    pub path: String,
    /// Request headers, names lower-cased, in the order received.
    pub headers: Vec<(String, String)>,
    /// The parsed JSON body; `Value::Null` when there was no body or it was not JSON.
    pub body: Value,
}

/// A tool result the client sent back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// The `tool_use` id it answers.
    pub tool_use_id: String,
    /// The tool's name as the model called it (from the matching `tool_use`), if found.
    pub tool_name: Option<String>,
    /// Whether the client marked it as an error.
    pub is_error: bool,
    /// Its text content (text parts joined with newlines).
    pub text: String,
}

impl ToolResult {
    /// The text without the `<system-reminder>…</system-reminder>` blocks
    /// Claude Code appends to tool results, trimmed: what the tool itself returned.
    pub fn text_without_reminders(&self) -> String {
        let mut text = self.text.as_str();
        let mut kept = String::with_capacity(text.len());
        while let Some(start) = text.find("<system-reminder>") {
            kept.push_str(&text[..start]);
            match text[start..].find("</system-reminder>") {
                Some(end) => text = &text[start + end + "</system-reminder>".len()..],
                None => text = "",
            }
        }
        kept.push_str(text);
        kept.trim().to_owned()
    }
}

impl RecordedRequest {
    /// The value of a header (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The `model` the request asked for.
    pub fn model(&self) -> Option<&str> {
        self.body.get("model").and_then(Value::as_str)
    }

    /// Whether the request asked for a streamed (SSE) answer.
    pub fn is_streaming(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    /// The system prompt: a string, or the text blocks joined with newlines.
    pub fn system_text(&self) -> String {
        match self.body.get("system") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter_map(|block| block.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }

    /// Names of the tools offered in `tools`. Claude Code defers MCP tools: they
    /// are named in a `<system-reminder>` of the first user message instead; see
    /// [`RecordedRequest::mentions_tool`].
    pub fn tool_names(&self) -> Vec<String> {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|tool| tool.get("name").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether the model was told about a tool, either in `tools` or as a
    /// deferred tool listed in the messages (how Claude Code 2.1 announces MCP tools).
    pub fn mentions_tool(&self, name: &str) -> bool {
        self.tool_names().iter().any(|offered| offered == name)
            || self.messages().iter().any(|message| {
                content_blocks(message).any(|block| {
                    block.get("type").and_then(Value::as_str) == Some("text")
                        && block
                            .get("text")
                            .and_then(Value::as_str)
                            .is_some_and(|text| text.lines().any(|line| line.trim() == name))
                })
            })
    }

    /// The conversation's messages.
    pub fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// All user-visible text of the user messages, joined with newlines
    /// (the prompt, system reminders, and text tool results are not included).
    pub fn user_text(&self) -> String {
        self.messages()
            .iter()
            .filter(|message| message.get("role").and_then(Value::as_str) == Some("user"))
            .flat_map(content_blocks)
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The tool results in the last user message: what the client sends back
    /// after running the tools the previous turn called.
    pub fn last_tool_results(&self) -> Vec<ToolResult> {
        let Some(last_user) = self
            .messages()
            .iter()
            .rev()
            .find(|message| message.get("role").and_then(Value::as_str) == Some("user"))
        else {
            return Vec::new();
        };
        content_blocks(last_user)
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"))
            .map(|block| self.tool_result(block))
            .collect()
    }

    /// Every tool result anywhere in the conversation, in order.
    pub fn all_tool_results(&self) -> Vec<ToolResult> {
        self.messages()
            .iter()
            .flat_map(content_blocks)
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"))
            .map(|block| self.tool_result(block))
            .collect()
    }

    fn tool_result(&self, block: &Value) -> ToolResult {
        let tool_use_id = block
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let text = match block.get("content") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        ToolResult {
            tool_name: self.tool_name_of(&tool_use_id),
            tool_use_id,
            is_error: block.get("is_error").and_then(Value::as_bool) == Some(true),
            text,
        }
    }

    fn tool_name_of(&self, tool_use_id: &str) -> Option<String> {
        self.messages()
            .iter()
            .flat_map(content_blocks)
            .find(|block| {
                block.get("type").and_then(Value::as_str) == Some("tool_use")
                    && block.get("id").and_then(Value::as_str) == Some(tool_use_id)
            })
            .and_then(|block| block.get("name").and_then(Value::as_str))
            .map(str::to_owned)
    }
}

/// The content blocks of a message (a plain-string content is one text block).
fn content_blocks(message: &Value) -> Box<dyn Iterator<Item = &Value> + '_> {
    match message.get("content") {
        Some(Value::Array(blocks)) => Box::new(blocks.iter()),
        Some(text @ Value::String(_)) => Box::new(std::iter::once(text)),
        _ => Box::new(std::iter::empty()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(body: Value) -> RecordedRequest {
        RecordedRequest {
            sequence: 0,
            kind: RequestKind::Main,
            method: "POST".into(),
            path: "/v1/messages".into(),
            headers: vec![("x-api-key".into(), "k".into())],
            body,
        }
    }

    #[test]
    fn tool_results_carry_the_name_of_the_call_they_answer() {
        let recorded = request(json!({
            "model": "m",
            "system": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
            "tools": [{"name": "Bash"}],
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "mcp__review__x", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
                     "content": [{"type": "text", "text": "bad line"}]}
                ]}
            ]
        }));
        assert_eq!(recorded.system_text(), "one\ntwo");
        assert_eq!(recorded.tool_names(), ["Bash"]);
        assert_eq!(recorded.header("X-Api-Key"), Some("k"));
        assert_eq!(
            recorded.last_tool_results(),
            [ToolResult {
                tool_use_id: "toolu_1".into(),
                tool_name: Some("mcp__review__x".into()),
                is_error: true,
                text: "bad line".into(),
            }]
        );
    }

    #[test]
    fn reminders_are_stripped_from_tool_results() {
        let result = ToolResult {
            tool_use_id: "t".into(),
            tool_name: None,
            is_error: false,
            text: "{\"a\":1}\n\n<system-reminder>\nleft\n</system-reminder>\n".into(),
        };
        assert_eq!(result.text_without_reminders(), "{\"a\":1}");
    }

    #[test]
    fn deferred_tools_count_as_mentioned() {
        let recorded = request(json!({
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>\nDeferred:\nmcp__review__leave_general_comment\n</system-reminder>"}
            ]}]
        }));
        assert!(recorded.mentions_tool("mcp__review__leave_general_comment"));
        assert!(!recorded.mentions_tool("mcp__review__leave"));
    }
}
