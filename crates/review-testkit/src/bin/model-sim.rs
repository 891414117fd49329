//! `model-sim`: the scripted model server as a standalone server, so a person can run
//! `review-bot review` (and the real Claude Code CLI under it) fully offline.
//!
//! ```text
//! model-sim --script FILE [--addr 127.0.0.1:PORT]
//! ```
//!
//! It reads a JSON script and answers the Anthropic Messages API from it, the way the test
//! suite's [`review_testkit::model::ModelServer`] does. When ready it prints one JSON line on
//! stdout, `{"base_url":"http://127.0.0.1:PORT"}` (the value for `ANTHROPIC_BASE_URL`; any
//! `ANTHROPIC_API_KEY` is accepted), and serves until killed. Each `POST /v1/messages` it
//! answers is one line on stderr: the request's number in the main conversation, the turn
//! it took, what the client sent back from the previous turn's tools, and what it answered:
//!
//! ```text
//! model-sim: request 1: turn 1/4: tools mcp__review__leave_general_comment
//! model-sim: request 2: turn 2/4 (after mcp__review__leave_general_comment: ok): text "Architecture pass done."
//! ```
//!
//! # The script file
//!
//! ```json
//! {
//!   "turns": [
//!     {"tools": [{"name": "mcp__review__leave_general_comment", "input": {"message": "…"}}]},
//!     {"text": "Architecture pass done."},
//!     {"tools": [{"name": "mcp__review__leave_inline_comment",
//!                 "input": {"path": "src/lib.rs", "line": 5, "message": "…"}}]},
//!     {"error": 500},
//!     {"text": "Detailed pass done."}
//!   ],
//!   "then": {"text": "Nothing more to say."}
//! }
//! ```
//!
//! - `turns` (required): each request of the main conversation takes the next turn, across
//!   every run of the CLI (review-bot's architecture pass takes the first turns, its
//!   detailed pass the next ones). A turn is one of:
//!   - `{"text": "…"}`: a final answer, which ends that run of the CLI;
//!   - `{"tools": [{"name": …, "input": {…}}, …]}`: tool calls (several run in parallel),
//!     with names as the model sees them (`mcp__review__leave_inline_comment`, `Bash`, …) and
//!     `input` an object (default `{}`); a `"text"` beside `"tools"` is said before the calls;
//!   - `{"error": STATUS}`: an HTTP error (400–599) with an Anthropic error body (529 is
//!     `overloaded_error`, the rest `api_error`). The CLI retries errors it considers
//!     transient, and a retry takes the next turn.
//! - `then` (optional): the turn answered to every request once `turns` is used up. Without
//!   it such a request gets the server's own "script exhausted" error (HTTP 403, which the CLI
//!   does not retry: that run ends with the message), as in tests.
//!
//! Requests that offer no tools (the CLI's side requests: titles, summaries) are answered
//! `"ok"` without taking a turn; other paths (the CLI's connectivity probe) are answered
//! generically and not logged. A malformed script is refused before anything is served, with
//! the JSON path of the problem (`$.turns[2].tools[0].input: …`), and exit status 2.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clap::Parser;
use review_testkit::json_input::{Malformed, kind, malformed, object, only_keys};
use review_testkit::model::{ModelServer, RecordedRequest, Script, ToolCall, Turn};
use serde_json::{Map, Value};
use tokio::net::{TcpListener, TcpStream};

/// Serve a scripted model (the Anthropic Messages API) for the Claude Code CLI.
#[derive(Debug, Parser)]
#[command(name = "model-sim", version)]
struct Arguments {
    /// The JSON script: `{"turns": [{"text": …} | {"tools": [{"name": …, "input": {…}}]} |
    /// {"error": STATUS}, …], "then": TURN}` (see the README).
    #[arg(long, value_name = "FILE")]
    script: PathBuf,
    /// Where to listen (default: a free port of 127.0.0.1).
    #[arg(long, value_name = "ADDRESS")]
    addr: Option<SocketAddr>,
}

/// A turn as the script file describes it.
#[derive(Debug, Clone, PartialEq)]
enum TurnSpec {
    /// A final text answer.
    Text(String),
    /// Tool calls, optionally preceded by text.
    Tools {
        text: Option<String>,
        calls: Vec<ToolCall>,
    },
    /// An HTTP error.
    Error(u16),
}

impl TurnSpec {
    fn turn(&self) -> Turn {
        match self {
            Self::Text(text) => Turn::text(text.clone()),
            Self::Tools { text, calls } => {
                let turn = Turn::tools(calls.iter().cloned());
                match text {
                    Some(text) => turn.with_text(text.clone()),
                    None => turn,
                }
            }
            Self::Error(529) => Turn::overloaded(),
            Self::Error(status) => Turn::http_error(*status),
        }
    }

    /// What the answer is, for the log.
    fn summary(&self) -> String {
        match self {
            Self::Text(text) => format!("text {}", quoted(text, 60)),
            Self::Tools { calls, .. } => format!(
                "tools {}",
                calls
                    .iter()
                    .map(|call| call.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Self::Error(status) => format!("HTTP {status}"),
        }
    }
}

/// A parsed script file.
#[derive(Debug, Clone, PartialEq)]
struct ScriptFile {
    turns: Vec<TurnSpec>,
    then: Option<TurnSpec>,
}

const TURN_FORMS: &str =
    r#"a turn is {"text": "…"}, {"tools": [{"name": "…", "input": {…}}, …]} or {"error": STATUS}"#;

fn parse_script(value: &Value) -> Result<ScriptFile, Malformed> {
    let top = object(value, "$", r#"an object {"turns": […], "then": TURN}"#)?;
    only_keys(top, "$", &["turns", "then"])?;
    let turns = top
        .get("turns")
        .ok_or_else(|| malformed("$.turns", "missing; list the turns of the conversation"))?;
    let turns = turns.as_array().ok_or_else(|| {
        malformed(
            "$.turns",
            format!("expected an array of turns, found {}", kind(turns)),
        )
    })?;
    let turns = turns
        .iter()
        .enumerate()
        .map(|(index, turn)| parse_turn(turn, &format!("$.turns[{index}]")))
        .collect::<Result<_, _>>()?;
    let then = top
        .get("then")
        .map(|turn| parse_turn(turn, "$.then"))
        .transpose()?;
    Ok(ScriptFile { turns, then })
}

fn parse_turn(value: &Value, path: &str) -> Result<TurnSpec, Malformed> {
    let map = object(value, path, &format!("a turn ({TURN_FORMS})"))?;
    only_keys(map, path, &["text", "tools", "error"])?;
    let text = map
        .get("text")
        .map(|text| {
            text.as_str().map(str::to_owned).ok_or_else(|| {
                malformed(
                    &format!("{path}.text"),
                    format!("expected a string, found {}", kind(text)),
                )
            })
        })
        .transpose()?;
    match (text, map.get("tools"), map.get("error")) {
        (_, Some(_), Some(_)) | (Some(_), None, Some(_)) => Err(malformed(
            path,
            "`error` cannot be combined with `text` or `tools`",
        )),
        (None, None, None) => Err(malformed(path, format!("empty turn; {TURN_FORMS}"))),
        (Some(text), None, None) => Ok(TurnSpec::Text(text)),
        (text, Some(tools), None) => Ok(TurnSpec::Tools {
            text,
            calls: parse_tools(tools, &format!("{path}.tools"))?,
        }),
        (None, None, Some(error)) => {
            let status = error
                .as_u64()
                .and_then(|status| u16::try_from(status).ok())
                .filter(|status| (400..=599).contains(status))
                .ok_or_else(|| {
                    malformed(
                        &format!("{path}.error"),
                        format!("expected an HTTP error status (400–599), found {error}"),
                    )
                })?;
            Ok(TurnSpec::Error(status))
        }
    }
}

fn parse_tools(value: &Value, path: &str) -> Result<Vec<ToolCall>, Malformed> {
    let calls = value.as_array().ok_or_else(|| {
        malformed(
            path,
            format!("expected an array of tool calls, found {}", kind(value)),
        )
    })?;
    if calls.is_empty() {
        return Err(malformed(
            path,
            "no tool calls; a turn without calls is {\"text\": \"…\"}",
        ));
    }
    calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            let path = format!("{path}[{index}]");
            let map = object(call, &path, r#"a tool call {"name": "…", "input": {…}}"#)?;
            only_keys(map, &path, &["name", "input"])?;
            let name = match map.get("name") {
                Some(Value::String(name)) if !name.trim().is_empty() => name.clone(),
                Some(Value::String(_)) => {
                    return Err(malformed(&format!("{path}.name"), "empty tool name"));
                }
                Some(other) => {
                    return Err(malformed(
                        &format!("{path}.name"),
                        format!("expected a string, found {}", kind(other)),
                    ));
                }
                None => {
                    return Err(malformed(
                        &format!("{path}.name"),
                        "missing; the tool's name as the model sees it, e.g. \
                         mcp__review__leave_inline_comment",
                    ));
                }
            };
            let input = match map.get("input") {
                None => Value::Object(Map::new()),
                Some(input @ Value::Object(_)) => input.clone(),
                Some(other) => {
                    return Err(malformed(
                        &format!("{path}.input"),
                        format!("expected an object, found {}", kind(other)),
                    ));
                }
            };
            Ok(ToolCall::new(name, input))
        })
        .collect()
}

/// Reads and parses the script; the error is the whole message.
fn load(path: &Path) -> Result<ScriptFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read the script {}: {error}", path.display()))?;
    let value: Value = serde_json::from_str(&text).map_err(|error| {
        format!(
            "{}:{}:{}: not JSON: {error}",
            path.display(),
            error.line(),
            error.column()
        )
    })?;
    parse_script(&value).map_err(|error| format!("{}: {error}", path.display()))
}

/// `text` quoted for one log line, cut after `shown` characters.
fn quoted(text: &str, shown: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > shown {
        format!(
            "{:?}",
            format!("{}…", flat.chars().take(shown).collect::<String>())
        )
    } else {
        format!("{flat:?}")
    }
}

/// What the client sent back from the previous turn's tools, for the log.
fn tool_results(request: &RecordedRequest) -> String {
    let results = request.last_tool_results();
    if results.is_empty() {
        return String::new();
    }
    let described = results
        .iter()
        .map(|result| {
            let name = result.tool_name.as_deref().unwrap_or("?");
            if result.is_error {
                format!(
                    "{name}: error {}",
                    quoted(&result.text_without_reminders(), 240)
                )
            } else {
                format!("{name}: ok")
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    format!(" (after {described})")
}

/// The server's script: each turn wrapped so that answering it logs one line.
fn script(file: &ScriptFile) -> Script {
    let total = file.turns.len();
    let turns = file.turns.iter().enumerate().map(|(index, spec)| {
        let spec = spec.clone();
        Turn::decide(move |request| {
            eprintln!(
                "model-sim: request {}: turn {}/{total}{}: {}",
                index + 1,
                index + 1,
                tool_results(request),
                spec.summary()
            );
            spec.turn()
        })
    });
    let mut script = Script::new(turns).side_answer(Turn::decide(|_| {
        eprintln!("model-sim: side request (no tools offered): text \"ok\"");
        Turn::text("ok")
    }));
    if let Some(spec) = &file.then {
        let spec = spec.clone();
        let repeated = AtomicUsize::new(0);
        script = script.then_forever(Turn::decide(move |request| {
            let number = total + repeated.fetch_add(1, Ordering::Relaxed) + 1;
            eprintln!(
                "model-sim: request {number}: then{}: {}",
                tool_results(request),
                spec.summary()
            );
            spec.turn()
        }));
    }
    script
}

/// Logs the main requests past the end of a script without `then` (answered by the
/// server's own "script exhausted" error, which no turn of ours sees).
async fn log_exhausted(server: Arc<ModelServer>, total: usize) {
    for number in total + 1.. {
        while !server
            .wait_for_requests(number, Duration::from_hours(1))
            .await
        {}
        eprintln!(
            "model-sim: request {number}: script exhausted: HTTP 403 permission_error \
             (add turns or \"then\")"
        );
    }
}

/// Relays connections from `listener` to the server at `target`, so `--addr` can pick the
/// address while the server itself listens on a free port.
async fn relay(listener: TcpListener, target: SocketAddr) {
    loop {
        match listener.accept().await {
            Ok((mut inbound, _)) => {
                tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
            Err(error) => {
                eprintln!("model-sim: accept failed: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn serve(arguments: &Arguments, file: &ScriptFile) -> std::io::Result<()> {
    let server = Arc::new(ModelServer::start(script(file)).await?);
    let base_url = match arguments.addr {
        None => server.base_url(),
        Some(addr) => {
            let listener = TcpListener::bind(addr).await?;
            let local = listener.local_addr()?;
            let target: SocketAddr = server
                .base_url()
                .trim_start_matches("http://")
                .parse()
                .map_err(std::io::Error::other)?;
            tokio::spawn(relay(listener, target));
            format!("http://{local}")
        }
    };
    if file.then.is_none() {
        tokio::spawn(log_exhausted(Arc::clone(&server), file.turns.len()));
    }
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{}", serde_json::json!({ "base_url": base_url }))?;
        stdout.flush()?;
    }
    std::future::pending::<()>().await;
    Ok(())
}

fn main() -> ExitCode {
    let arguments = Arguments::parse();
    let file = match load(&arguments.script) {
        Ok(file) => file,
        Err(message) => {
            eprintln!("model-sim: {message}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("model-sim: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(&arguments, &file)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("model-sim: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problem(script: &Value) -> String {
        parse_script(script).unwrap_err().to_string()
    }

    #[test]
    fn every_turn_form_parses() {
        let file = parse_script(&json!({
            "turns": [
                {"text": "done"},
                {"tools": [{"name": "Bash", "input": {"command": "ls"}}, {"name": "Read"}], "text": "first"},
                {"error": 529}
            ],
            "then": {"error": 500}
        }))
        .unwrap();
        assert_eq!(
            file,
            ScriptFile {
                turns: vec![
                    TurnSpec::Text("done".into()),
                    TurnSpec::Tools {
                        text: Some("first".into()),
                        calls: vec![
                            ToolCall::new("Bash", json!({"command": "ls"})),
                            ToolCall::new("Read", json!({})),
                        ],
                    },
                    TurnSpec::Error(529),
                ],
                then: Some(TurnSpec::Error(500)),
            }
        );
    }

    #[test]
    fn problems_name_their_json_path() {
        assert_eq!(
            problem(&json!([])),
            r#"$: expected an object {"turns": […], "then": TURN}, found an array"#
        );
        assert!(problem(&json!({})).starts_with("$.turns: missing"));
        assert!(problem(&json!({"turns": [], "than": {}})).starts_with("$.than: unknown key"));
        assert!(
            problem(&json!({"turns": [{"txt": "a"}]})).starts_with("$.turns[0].txt: unknown key")
        );
        assert!(problem(&json!({"turns": [{}]})).starts_with("$.turns[0]: empty turn"));
        assert_eq!(
            problem(
                &json!({"turns": [{"text": "a"}, {"tools": [{"name": "Bash", "input": "ls"}]}]})
            ),
            "$.turns[1].tools[0].input: expected an object, found a string"
        );
        assert!(
            problem(&json!({"turns": [{"tools": []}]}))
                .starts_with("$.turns[0].tools: no tool calls")
        );
        assert!(
            problem(&json!({"turns": [{"tools": [{"input": {}}]}]}))
                .starts_with("$.turns[0].tools[0].name: missing")
        );
        assert!(
            problem(&json!({"turns": [], "then": {"error": 200}}))
                .starts_with("$.then.error: expected an HTTP error status")
        );
        assert!(
            problem(&json!({"turns": [{"error": 500, "text": "a"}]}))
                .starts_with("$.turns[0]: `error` cannot")
        );
    }

    #[test]
    fn the_shipped_example_is_a_valid_script() {
        let example: Value =
            serde_json::from_str(include_str!("../../examples/review-script.json")).unwrap();
        let file = parse_script(&example).unwrap();
        assert_eq!(file.turns.len(), 4);
    }

    #[test]
    fn long_texts_are_cut_for_the_log() {
        assert_eq!(quoted("a\n  b", 60), "\"a b\"");
        assert_eq!(
            quoted(&"x".repeat(61), 60),
            format!("\"{}…\"", "x".repeat(60))
        );
    }
}
