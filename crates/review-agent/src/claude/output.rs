//! Claude Code's output on the wire (`--output-format stream-json --verbose`:
//! one JSON event a line) and its translation into domain results. These
//! types stay private to this crate.
//!
//! Two events matter: the `system`/`init` event, which lists the MCP servers
//! and whether each connected, and the final `result` event — the same object
//! `--output-format json` prints on its own.

use std::time::Duration;

use serde::Deserialize;

use super::outcome::{AgentOutcome, AgentRun, PermissionDenial, TokenUsage};

/// One line of the CLI's output, as far as we care.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum StreamEvent {
    /// `{"type":"system",…}`.
    System(SystemEvent),
    /// `{"type":"result",…}`.
    Result(ResultEvent),
    /// Assistant and user messages, and anything newer.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
pub(crate) struct SystemEvent {
    pub subtype: String,
    #[serde(default)]
    pub mcp_servers: Vec<McpServerStatus>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct McpServerStatus {
    pub name: String,
    pub status: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ResultEvent {
    subtype: String,
    is_error: bool,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    num_turns: u32,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    total_cost_usd: f64,
    #[serde(default)]
    usage: WireUsage,
    #[serde(default)]
    permission_denials: Vec<WireDenial>,
    #[serde(default)]
    duration_ms: Option<u64>,
    #[serde(default)]
    api_error_status: Option<u16>,
    /// Error details some error subtypes carry instead of `result`.
    #[serde(default)]
    errors: Vec<serde_json::Value>,
    /// The structured-output tool's input, with `--json-schema`.
    #[serde(default)]
    structured_output: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[allow(clippy::struct_field_names)] // mirrors the CLI's JSON field names
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
}

#[derive(Debug, Deserialize)]
#[allow(clippy::struct_field_names)] // mirrors the CLI's JSON field names
struct WireDenial {
    #[serde(default)]
    tool_name: String,
    #[serde(default)]
    tool_use_id: String,
    #[serde(default)]
    tool_input: serde_json::Value,
}

/// Parse one output line. `None` for lines that are not JSON events at all
/// (the CLI prints plain-text errors, e.g. about flags); `Some(Err)` for a
/// JSON line that claims to be a known event but does not fit.
pub(crate) fn parse_line(line: &str) -> Option<Result<StreamEvent, serde_json::Error>> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    value.get("type")?;
    Some(serde_json::from_value(value))
}

impl ResultEvent {
    /// The domain result. `measured` is used when the CLI reports no duration.
    pub(crate) fn into_run(self, exit_code: Option<i32>, measured: Duration) -> AgentRun {
        let message = || {
            self.result.clone().unwrap_or_else(|| {
                if self.errors.is_empty() {
                    "no details given".to_owned()
                } else {
                    self.errors
                        .iter()
                        .map(|error| match error {
                            serde_json::Value::String(text) => text.clone(),
                            other => other.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                }
            })
        };
        let outcome = match (self.subtype.as_str(), self.is_error) {
            ("success", false) => AgentOutcome::Success,
            ("success", true) => AgentOutcome::ApiError {
                status: self.api_error_status,
                message: message(),
            },
            ("error_max_turns", _) => AgentOutcome::MaxTurns,
            ("error_max_budget_usd", _) => AgentOutcome::MaxBudget,
            ("error_during_execution", _) => AgentOutcome::ExecutionError { message: message() },
            (subtype, is_error) => AgentOutcome::Unknown {
                subtype: subtype.to_owned(),
                is_error,
            },
        };
        AgentRun {
            outcome,
            result: self.result,
            num_turns: self.num_turns,
            session_id: self.session_id,
            total_cost_usd: self.total_cost_usd,
            usage: TokenUsage {
                input_tokens: self.usage.input_tokens,
                output_tokens: self.usage.output_tokens,
                cache_creation_input_tokens: self.usage.cache_creation_input_tokens,
                cache_read_input_tokens: self.usage.cache_read_input_tokens,
            },
            permission_denials: self
                .permission_denials
                .into_iter()
                .map(|denial| PermissionDenial {
                    tool_name: denial.tool_name,
                    tool_use_id: denial.tool_use_id,
                    tool_input: denial.tool_input,
                })
                .collect(),
            duration: self.duration_ms.map_or(measured, Duration::from_millis),
            exit_code,
            structured_output: self.structured_output,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(line: &str) -> AgentRun {
        match parse_line(line) {
            Some(Ok(StreamEvent::Result(result))) => result.into_run(Some(0), Duration::ZERO),
            other => panic!("not a result: {other:?}"),
        }
    }

    #[test]
    fn a_success_carries_turns_cost_and_session() {
        let run = result(
            r#"{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":2,
                "session_id":"abc","total_cost_usd":0.0175,"duration_ms":1200,
                "usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":3},
                "permission_denials":[{"tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"rm"}}]}"#,
        );
        assert!(run.is_success());
        assert_eq!(run.result.as_deref(), Some("done"));
        assert_eq!(run.num_turns, 2);
        assert_eq!(run.session_id.as_deref(), Some("abc"));
        assert_eq!(run.usage.input_tokens, 10);
        assert_eq!(run.usage.cache_read_input_tokens, 3);
        assert_eq!(run.duration, Duration::from_millis(1200));
        assert_eq!(run.permission_denials[0].tool_name, "Bash");
    }

    #[test]
    fn a_structured_output_is_carried_and_absent_without_json_schema() {
        let run = result(
            r#"{"type":"result","subtype":"success","is_error":false,"result":"",
                "structured_output":{"threads_addressed":[7],"build_passed":true,"summary":"s"}}"#,
        );
        assert_eq!(
            run.structured_output,
            Some(serde_json::json!({"threads_addressed":[7],"build_passed":true,"summary":"s"}))
        );
        let run = result(r#"{"type":"result","subtype":"success","is_error":false,"result":"x"}"#);
        assert_eq!(run.structured_output, None);
    }

    #[test]
    fn an_api_error_is_a_failure_even_with_subtype_success() {
        let run = result(
            r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":500,
                "result":"API Error: 500 boom","num_turns":1}"#,
        );
        assert!(!run.is_success());
        assert_eq!(
            run.outcome,
            AgentOutcome::ApiError {
                status: Some(500),
                message: "API Error: 500 boom".into()
            }
        );
        let error = run.into_success().unwrap_err();
        assert!(error.to_string().contains("HTTP 500"), "{error}");
    }

    #[test]
    fn error_subtypes_map_to_outcomes() {
        let outcome = |subtype: &str| {
            result(&format!(
                r#"{{"type":"result","subtype":"{subtype}","is_error":true,"errors":["e1","e2"]}}"#
            ))
            .outcome
        };
        assert_eq!(outcome("error_max_turns"), AgentOutcome::MaxTurns);
        assert_eq!(outcome("error_max_budget_usd"), AgentOutcome::MaxBudget);
        assert_eq!(
            outcome("error_during_execution"),
            AgentOutcome::ExecutionError {
                message: "e1; e2".into()
            }
        );
        assert!(matches!(outcome("error_new"), AgentOutcome::Unknown { .. }));
    }

    #[test]
    fn other_lines_are_told_apart() {
        assert!(parse_line("Error: unknown option '--x'").is_none());
        assert!(parse_line(r#"{"no_type":1}"#).is_none());
        assert!(matches!(
            parse_line(r#"{"type":"assistant","message":{}}"#),
            Some(Ok(StreamEvent::Other))
        ));
        assert!(matches!(
            parse_line(r#"{"type":"result","subtype":"success"}"#),
            Some(Err(_))
        ));
        match parse_line(
            r#"{"type":"system","subtype":"init","mcp_servers":[{"name":"review","status":"failed","source":"dynamic"}]}"#,
        ) {
            Some(Ok(StreamEvent::System(system))) => {
                assert_eq!(system.subtype, "init");
                assert_eq!(system.mcp_servers[0].status, "failed");
            }
            other => panic!("{other:?}"),
        }
    }
}
