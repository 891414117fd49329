//! The scripted model server: an HTTP server on 127.0.0.1 that speaks the
//! Anthropic Messages API the way Claude Code uses it, answering from a
//! per-test [`Script`] and recording every request.
//!
//! Point the real CLI at it with `ANTHROPIC_BASE_URL=`[`ModelServer::base_url`]
//! and any `ANTHROPIC_API_KEY` (the server accepts every key).
//!
//! # Writing a script
//!
//! Each `POST /v1/messages` of the **main conversation** takes the next [`Turn`]:
//!
//! ```no_run
//! use review_testkit::model::{ModelServer, Script, ToolCall, Turn};
//! use serde_json::json;
//!
//! # async fn example() -> std::io::Result<()> {
//! let server = ModelServer::start(Script::new([
//!     // Turn 1: call one of our MCP tools (names as the model sees them).
//!     Turn::tool(
//!         "mcp__review__leave_general_comment",
//!         json!({"message": "Looks fine overall."}),
//!     ),
//!     // Turn 2: react to what the tool answered.
//!     Turn::decide(|request| {
//!         let results = request.last_tool_results();
//!         if results.iter().any(|result| result.is_error) {
//!             Turn::tool("mcp__review__leave_general_comment", json!({"message": "retry"}))
//!         } else {
//!             Turn::text("Review complete.")
//!         }
//!     }),
//!     // Turn 3 (only reached after a retry): finish.
//!     Turn::text("Review complete."),
//! ]))
//! .await?;
//! // … run Claude Code with ANTHROPIC_BASE_URL = server.base_url() …
//! let requests = server.requests(); // the main conversation, in order
//! assert!(requests[0].system_text().contains("review"));
//! # Ok(())
//! # }
//! ```
//!
//! - [`Turn::text`] ends the conversation (`stop_reason: end_turn`); [`Turn::tool`]
//!   and [`Turn::tools`] call tools (`stop_reason: tool_use`; several calls in one
//!   turn run in parallel in Claude Code); [`Turn::with_text`] adds text before
//!   the calls. Claude Code's own tools work too: `Write` (`file_path`, `content`),
//!   `Edit` (`file_path`, `old_string`, `new_string`; the file must have been
//!   `Read` first), `Bash` (`command`, `description`).
//! - [`Turn::decide`] picks the turn when the request arrives, from the request
//!   (most usefully [`RecordedRequest::last_tool_results`], with tool names).
//! - Faults: [`Turn::http_error`] (500, …), [`Turn::overloaded`] (529),
//!   [`Turn::cut_mid_event`], [`Turn::invalid_json`], [`Turn::hang`];
//!   [`Turn::delayed`] makes any turn slow. A request the CLI **retries** takes
//!   the next turn, so `[Turn::overloaded(), Turn::text("ok")]` succeeds when the
//!   CLI may retry once (`CLAUDE_CODE_MAX_RETRIES`).
//! - When the turns run out the server answers HTTP 403 `permission_error`
//!   "script exhausted" (the CLI does not retry a 403; it ends the run with
//!   `is_error: true` and that message), unless [`Script::then_forever`] names a
//!   turn to repeat. (A 400 would not do: Claude Code retries a 400 up to six
//!   times, dropping beta features one by one.)
//! - [`Turn::with_usage`] sets the reported tokens (default 1,000 in / 100 out
//!   per answer); Claude Code computes `total_cost_usd` from them.
//!
//! # Running the real CLI against it
//!
//! Use review-agent's production runner, so tests exercise our real flags,
//! environment and output parsing (review-agent's `tests/it/support.rs` is a
//! worked example):
//!
//! ```text
//! let Some(claude) = review_testkit::tools::claude_for_test() else { return };
//! let settings = ClaudeCodeSettings::new(claude, "claude-opus-4-6")
//!     .with_base_url(server.base_url())
//!     .with_api_key("sk-ant-test".into())
//!     .with_max_retries(0);              // a fault fails at once
//! let run = ClaudeCodeRun::new("Review.", checkout, run_directory).with_mcp(McpConfig::review(
//!     McpServerCommand::review_bot(env!("CARGO_BIN_EXE_review-bot"), args, env),
//! ));
//! let result = ClaudeCode::new(settings).run(&run).await?;   // AgentRun
//! ```
//!
//! Claude Code appends `<system-reminder>` blocks to some tool results;
//! [`ToolResult::text_without_reminders`] gives what the tool returned. A
//! scripted run takes about half a second of CLI time per conversation on an
//! idle machine (see the report in review-agent's benches).
//!
//! # Side requests
//!
//! A `POST /v1/messages` that offers **no tools** is a side request (a title,
//! a summary, a quota probe): it is answered with [`Script::side_answer`]
//! (default text `"ok"`), consumes no turn, and is listed by
//! [`ModelServer::side_requests`], not [`ModelServer::requests`].
//! [`Script::side_request_when`] replaces the rule (for example "model is a
//! Haiku"). Other paths are answered generically: `POST
//! /v1/messages/count_tokens` with an estimate, `HEAD`/`GET` with 200 and
//! unknown paths with 404; they are kept in [`ModelServer::all_requests`].
//!
//! What Claude Code 2.1.330 sends (measured with `-p`): one streamed `POST
//! /v1/messages?beta=true` per turn, with all built-in tools in `tools` and our
//! MCP tools *deferred* (named in a `<system-reminder>` of the first user
//! message; calling them directly works, see
//! [`RecordedRequest::mentions_tool`]); plus a `HEAD /api/hello` connectivity probe
//! unless `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`. No `count_tokens`, no
//! title or summary requests in `-p` mode. After a malformed stream it retries
//! the request without `stream`; the server answers that one (with the next
//! turn) as one JSON message.

mod request;
mod script;
mod wire;

use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use http::{Method, StatusCode, header};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use request::{RecordedRequest, RequestKind, ToolResult};
pub use script::{Classify, Decide, Fault, Script, ToolCall, Turn, Usage};

use script::Action;
use wire::Answer;

/// Largest request body the server reads (Claude Code sends ~100 KB per turn).
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// How many nested [`Turn::decide`] closures are followed before giving up.
const DECIDE_DEPTH: usize = 16;

/// A running scripted model server. Dropping it stops the server (hung
/// requests are dropped with it).
#[derive(Debug)]
pub struct ModelServer {
    /// Where it listens.
    address: std::net::SocketAddr,
    /// The script and the recording, shared with the request handler.
    shared: Arc<Shared>,
    /// The accept loop; aborted on drop.
    task: JoinHandle<()>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<ScriptState>,
    /// Set when the server stops: releases requests held by [`Turn::hang`].
    stopping: tokio::sync::watch::Sender<bool>,
    /// How many main requests have arrived, for [`ModelServer::wait_for_requests`].
    main_requests: tokio::sync::watch::Sender<usize>,
}

#[derive(Debug)]
struct ScriptState {
    script: Script,
    recorded: Vec<RecordedRequest>,
    /// Counter for `msg_…` and `toolu_…` ids.
    next_id: u64,
    /// Main requests that found no turn left.
    exhausted: usize,
}

impl ModelServer {
    /// Start a server on an ephemeral port of 127.0.0.1 answering from `script`.
    pub async fn start(script: Script) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(ScriptState {
                script,
                recorded: Vec::new(),
                next_id: 1,
                exhausted: 0,
            }),
            stopping: tokio::sync::watch::Sender::new(false),
            main_requests: tokio::sync::watch::Sender::new(0),
        });
        let router = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router).await {
                tracing::error!(%error, "scripted model server stopped");
            }
        });
        Ok(Self {
            address,
            shared,
            task,
        })
    }

    /// `http://127.0.0.1:PORT`, the value for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The main conversation's requests, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.recorded_of(Some(RequestKind::Main))
    }

    /// The side requests (see the module docs), in order.
    pub fn side_requests(&self) -> Vec<RecordedRequest> {
        self.recorded_of(Some(RequestKind::Side))
    }

    /// Every request received, in order.
    pub fn all_requests(&self) -> Vec<RecordedRequest> {
        self.recorded_of(None)
    }

    /// Wait until `count` main requests have arrived, for at most `bound`
    /// (which only matters when something is wrong); whether they did.
    pub async fn wait_for_requests(&self, count: usize, bound: std::time::Duration) -> bool {
        let mut arrived = self.shared.main_requests.subscribe();
        tokio::time::timeout(bound, arrived.wait_for(|arrived| *arrived >= count))
            .await
            .is_ok_and(|waited| waited.is_ok())
    }

    /// Turns of the script not used yet.
    pub fn remaining_turns(&self) -> usize {
        self.shared.lock().script.turns.len()
    }

    /// Main requests that arrived after the script ran out (answered 403).
    pub fn exhausted_requests(&self) -> usize {
        self.shared.lock().exhausted
    }

    fn recorded_of(&self, kind: Option<RequestKind>) -> Vec<RecordedRequest> {
        self.shared
            .lock()
            .recorded
            .iter()
            .filter(|request| kind.is_none_or(|kind| request.kind == kind))
            .cloned()
            .collect()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.shared.stopping.send_replace(true);
        self.task.abort();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ScriptState> {
        // A panicking script closure poisons the lock; the recording is still valid.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, BODY_LIMIT).await {
        Ok(bytes) => bytes,
        Err(error) => {
            return error_response(400, "invalid_request_error", &format!("body: {error}"));
        }
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_owned(), ToString::to_string);
    let mut recorded = RecordedRequest {
        sequence: 0,
        kind: RequestKind::Other,
        method: parts.method.to_string(),
        path,
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    };
    let is_messages = parts.method == Method::POST && parts.uri.path() == "/v1/messages";

    let turn = {
        let mut state = shared.lock();
        if is_messages {
            recorded.kind = if (state.script.is_side_request)(&recorded) {
                RequestKind::Side
            } else {
                RequestKind::Main
            };
        }
        recorded.sequence = state.recorded.len();
        state.recorded.push(recorded.clone());
        if recorded.kind == RequestKind::Main {
            shared.main_requests.send_modify(|count| *count += 1);
        }
        match recorded.kind {
            RequestKind::Main => state.next_main_turn(),
            RequestKind::Side => Some(state.script.side_answer.clone()),
            RequestKind::Other => return other_response(&parts.method, &recorded, bytes.len()),
        }
    };
    match turn {
        Some(turn) => answer(&shared, &recorded, turn).await,
        None => error_response(
            403,
            "permission_error",
            &format!(
                "scripted model server: script exhausted, no turn left for main request #{} \
                 (add turns or Script::then_forever)",
                shared.lock().recorded_of_kind(RequestKind::Main)
            ),
        ),
    }
}

impl ScriptState {
    fn next_main_turn(&mut self) -> Option<Turn> {
        if let Some(turn) = self.script.turns.pop_front() {
            return Some(turn);
        }
        let repeated = self.script.after_end.clone();
        if repeated.is_none() {
            self.exhausted += 1;
        }
        repeated
    }

    fn recorded_of_kind(&self, kind: RequestKind) -> usize {
        self.recorded
            .iter()
            .filter(|request| request.kind == kind)
            .count()
    }

    fn fresh_id(&mut self, prefix: &str) -> String {
        let id = self.next_id;
        self.next_id += 1;
        format!("{prefix}_scripted{id:08}")
    }
}

/// Resolve `turn` (delays, decisions) and render it.
async fn answer(shared: &Shared, request: &RecordedRequest, mut turn: Turn) -> Response {
    for _ in 0..DECIDE_DEPTH {
        if let Some(delay) = turn.delay {
            tokio::time::sleep(delay).await;
        }
        match turn.action {
            Action::Decide(decide) => turn = decide(request),
            Action::Fault(fault) => return fault_response(shared, &fault, request).await,
            Action::Reply { text, tool_calls } => {
                let answer = {
                    let mut state = shared.lock();
                    Answer {
                        message_id: state.fresh_id("msg"),
                        model: request.model().unwrap_or("claude-scripted").to_owned(),
                        text,
                        tool_calls: tool_calls
                            .into_iter()
                            .map(|call| (state.fresh_id("toolu"), call))
                            .collect(),
                        usage: turn.usage,
                    }
                };
                return if request.is_streaming() {
                    let body: String = answer
                        .events()
                        .iter()
                        .map(|(event, data)| wire::frame(event, &data.to_string()))
                        .collect();
                    sse_response(Body::from(body))
                } else {
                    json_response(200, &answer.message())
                };
            }
        }
    }
    error_response(
        500,
        "api_error",
        "scripted model server: Turn::decide nested too deeply",
    )
}

async fn fault_response(shared: &Shared, fault: &Fault, request: &RecordedRequest) -> Response {
    let streaming = request.is_streaming();
    let (intact, broken) = if streaming {
        let start = wire::frame(
            "message_start",
            &json!({
                "type": "message_start",
                "message": {
                    "id": "msg_scripted_fault", "type": "message", "role": "assistant",
                    "model": request.model().unwrap_or("claude-scripted"), "content": [],
                    "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                }
            })
            .to_string(),
        );
        (
            start,
            "event: content_block_start\ndata: {\"type\":\"content_block_st",
        )
    } else {
        (String::new(), r#"{"id":"msg_scripted_fault","type":"mess"#)
    };
    let respond = |body: Body| {
        if streaming {
            sse_response(body)
        } else {
            let mut response = Response::new(body);
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("application/json"),
            );
            response
        }
    };
    match fault {
        Fault::HttpError {
            status,
            error_type,
            message,
        } => error_response(*status, error_type, message),
        Fault::CutMidEvent => {
            let pieces: Vec<Result<Bytes, std::io::Error>> = vec![
                Ok(Bytes::from(intact)),
                Ok(Bytes::from_static(broken.as_bytes())),
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "scripted model server: stream cut mid-event",
                )),
            ];
            respond(Body::from_stream(futures::stream::iter(pieces)))
        }
        Fault::InvalidJson if streaming => respond(Body::from(format!(
            "{intact}{}{}",
            wire::frame("content_block_start", "{this is not json"),
            wire::frame("message_stop", r#"{"type":"message_stop"}"#),
        ))),
        Fault::InvalidJson => respond(Body::from("{this is not json")),
        Fault::Hang => {
            // Held until the client gives up or the server stops.
            let mut stopping = shared.stopping.subscribe();
            let _ = stopping.wait_for(|stopping| *stopping).await;
            error_response(503, "api_error", "scripted model server: stopped")
        }
    }
}

fn other_response(method: &Method, request: &RecordedRequest, body_length: usize) -> Response {
    if method == Method::POST && request.path.starts_with("/v1/messages/count_tokens") {
        return json_response(200, &json!({"input_tokens": body_length / 4}));
    }
    if method == Method::HEAD || method == Method::GET {
        return json_response(200, &json!({}));
    }
    error_response(
        404,
        "not_found_error",
        &format!(
            "scripted model server: no route for {method} {}",
            request.path
        ),
    )
}

fn sse_response(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    headers.insert(
        "request-id",
        header::HeaderValue::from_static("req_scripted"),
    );
    response
}

fn json_response(status: u16, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

fn error_response(status: u16, error_type: &str, message: &str) -> Response {
    let mut response = json_response(status, &wire::error_body(error_type, message));
    if !response.status().is_client_error() && !response.status().is_server_error() {
        *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    }
    response
}
