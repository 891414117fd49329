//! The Anthropic Messages API on the wire: how an answer is rendered as a
//! server-sent-event stream (what Claude Code asks for) or as one JSON message.

use serde_json::{Value, json};

use super::script::{ToolCall, Usage};

/// One resolved answer, ready to render.
#[derive(Debug, Clone)]
pub(super) struct Answer {
    /// `msg_…`, unique per answer (Claude Code merges assistant messages that share an id).
    pub message_id: String,
    /// Echoes the request's model.
    pub model: String,
    /// Text before the tool calls.
    pub text: Option<String>,
    /// Tool calls with their generated `toolu_…` ids.
    pub tool_calls: Vec<(String, ToolCall)>,
    /// Reported token counts.
    pub usage: Usage,
}

impl Answer {
    fn stop_reason(&self) -> &'static str {
        if self.tool_calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        }
    }

    fn start_usage(&self) -> Value {
        json!({
            "input_tokens": self.usage.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1,
        })
    }

    /// The answer as the events of a streamed response, in order.
    pub fn events(&self) -> Vec<(&'static str, Value)> {
        let mut events = vec![
            (
                "message_start",
                json!({
                    "type": "message_start",
                    "message": {
                        "id": self.message_id,
                        "type": "message",
                        "role": "assistant",
                        "model": self.model,
                        "content": [],
                        "stop_reason": null,
                        "stop_sequence": null,
                        "usage": self.start_usage(),
                    }
                }),
            ),
            ("ping", json!({"type": "ping"})),
        ];
        let mut index = 0;
        if let Some(text) = &self.text {
            events.push(block_start(index, &json!({"type": "text", "text": ""})));
            for piece in chunks(text, 3) {
                events.push(block_delta(
                    index,
                    &json!({"type": "text_delta", "text": piece}),
                ));
            }
            events.push(block_stop(index));
            index += 1;
        }
        for (id, call) in &self.tool_calls {
            events.push(block_start(
                index,
                &json!({"type": "tool_use", "id": id, "name": call.name, "input": {}}),
            ));
            let input = call.input.to_string();
            for piece in chunks(&input, 4) {
                events.push(block_delta(
                    index,
                    &json!({"type": "input_json_delta", "partial_json": piece}),
                ));
            }
            events.push(block_stop(index));
            index += 1;
        }
        events.push((
            "message_delta",
            json!({
                "type": "message_delta",
                "delta": {"stop_reason": self.stop_reason(), "stop_sequence": null},
                "usage": {"output_tokens": self.usage.output_tokens},
            }),
        ));
        events.push(("message_stop", json!({"type": "message_stop"})));
        events
    }

    /// The answer as one non-streamed JSON message.
    pub fn message(&self) -> Value {
        let mut content = Vec::new();
        if let Some(text) = &self.text {
            content.push(json!({"type": "text", "text": text}));
        }
        for (id, call) in &self.tool_calls {
            content.push(
                json!({"type": "tool_use", "id": id, "name": call.name, "input": call.input}),
            );
        }
        let mut usage = self.start_usage();
        usage["output_tokens"] = json!(self.usage.output_tokens);
        json!({
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": self.stop_reason(),
            "stop_sequence": null,
            "usage": usage,
        })
    }
}

/// Frame one server-sent event.
pub(super) fn frame(event: &str, data: &str) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

/// An Anthropic error body.
pub(super) fn error_body(error_type: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": error_type, "message": message}})
}

fn block_start(index: usize, block: &Value) -> (&'static str, Value) {
    (
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn block_delta(index: usize, delta: &Value) -> (&'static str, Value) {
    (
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn block_stop(index: usize) -> (&'static str, Value) {
    (
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

/// Split `text` into about `pieces` parts on character boundaries (fewer when short).
pub(super) fn chunks(text: &str, pieces: usize) -> Vec<&str> {
    let characters = text.chars().count();
    if characters == 0 {
        return vec![text];
    }
    let size = characters.div_ceil(pieces.max(1));
    let mut parts = Vec::with_capacity(pieces);
    let mut rest = text;
    while !rest.is_empty() {
        let cut = rest
            .char_indices()
            .nth(size)
            .map_or(rest.len(), |(offset, _)| offset);
        let (head, tail) = rest.split_at(cut);
        parts.push(head);
        rest = tail;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_split_on_character_boundaries_and_rejoin() {
        let text = "héllo wörld, ünïcode";
        let parts = chunks(text, 4);
        assert_eq!(parts.len(), 4);
        assert_eq!(parts.concat(), text);
        assert_eq!(chunks("ab", 4), ["a", "b"]);
        assert_eq!(chunks("", 4), [""]);
    }

    #[test]
    fn tool_input_is_streamed_in_several_deltas_that_rejoin_to_the_input() {
        let answer = Answer {
            message_id: "msg_1".into(),
            model: "m".into(),
            text: Some("Let me look.".into()),
            tool_calls: vec![(
                "toolu_1".into(),
                ToolCall::new("Write", json!({"file_path": "a.txt", "content": "x"})),
            )],
            usage: Usage::default(),
        };
        let events = answer.events();
        let names: Vec<_> = events.iter().map(|(name, _)| *name).collect();
        assert_eq!(names.first(), Some(&"message_start"));
        assert_eq!(names.last(), Some(&"message_stop"));
        let partials: Vec<_> = events
            .iter()
            .filter_map(|(_, data)| data["delta"]["partial_json"].as_str())
            .collect();
        assert!(partials.len() > 1);
        let input: Value = serde_json::from_str(&partials.concat()).unwrap();
        assert_eq!(input["file_path"], "a.txt");
        let stop = events
            .iter()
            .find(|(name, _)| *name == "message_delta")
            .unwrap();
        assert_eq!(stop.1["delta"]["stop_reason"], "tool_use");
        assert_eq!(answer.message()["content"][1]["input"]["content"], "x");
    }
}
