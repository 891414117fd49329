//! A test's script for the model server: the turns of the main conversation,
//! what happens when they run out, and how side requests are told apart.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::request::RecordedRequest;

/// Token counts the server reports for one answer; Claude Code computes the
/// run's `total_cost_usd` from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// `input_tokens` in `message_start`.
    pub input_tokens: u64,
    /// `output_tokens` in `message_delta`.
    pub output_tokens: u64,
}

impl Default for Usage {
    /// 1,000 in and 100 out per answer: small, fixed, so a test can predict the cost.
    fn default() -> Self {
        Self {
            input_tokens: 1_000,
            output_tokens: 100,
        }
    }
}

/// One tool call the scripted model makes.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool's name as the model sees it: `Bash`, `Write`, `mcp__review__leave_general_comment`.
    pub name: String,
    /// The input object, streamed to the client in several `input_json_delta` chunks.
    pub input: Value,
}

impl ToolCall {
    /// A call of `name` with `input`.
    pub fn new(name: impl Into<String>, input: Value) -> Self {
        Self {
            name: name.into(),
            input,
        }
    }
}

/// A failure the server injects instead of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// An HTTP error with an Anthropic error body (`{"type":"error","error":{…}}`).
    HttpError {
        /// The status code (500, 529, 400, …).
        status: u16,
        /// The error's `type` (`api_error`, `overloaded_error`, …).
        error_type: String,
        /// The error's `message`.
        message: String,
    },
    /// A 200 SSE stream that stops in the middle of an event and drops the connection.
    CutMidEvent,
    /// A 200 SSE stream with an event whose `data:` is not JSON.
    InvalidJson,
    /// Never answer: the request hangs until the client gives up or the server stops.
    Hang,
}

/// What the model does on one request.
#[derive(Clone)]
pub struct Turn {
    pub(super) action: Action,
    /// Wait this long before answering.
    pub(super) delay: Option<Duration>,
    /// Token counts to report.
    pub(super) usage: Usage,
}

/// The closure type of [`Turn::decide`].
pub type Decide = dyn Fn(&RecordedRequest) -> Turn + Send + Sync;

#[derive(Clone)]
pub(super) enum Action {
    /// An answer: optional text, then tool calls. No tool calls ends the conversation.
    Reply {
        text: Option<String>,
        tool_calls: Vec<ToolCall>,
    },
    /// Decide from the request.
    Decide(Arc<Decide>),
    /// Fail.
    Fault(Fault),
}

impl Turn {
    fn new(action: Action) -> Self {
        Self {
            action,
            delay: None,
            usage: Usage::default(),
        }
    }

    /// A final text answer (`stop_reason: end_turn`).
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(Action::Reply {
            text: Some(text.into()),
            tool_calls: Vec::new(),
        })
    }

    /// One tool call (`stop_reason: tool_use`).
    pub fn tool(name: impl Into<String>, input: Value) -> Self {
        Self::tools([ToolCall::new(name, input)])
    }

    /// Several tool calls in one answer (parallel tool use).
    pub fn tools(calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Self::new(Action::Reply {
            text: None,
            tool_calls: calls.into_iter().collect(),
        })
    }

    /// Decide the turn when the request arrives, from what it carries (typically
    /// [`RecordedRequest::last_tool_results`]), so a script can react to errors.
    pub fn decide(decide: impl Fn(&RecordedRequest) -> Turn + Send + Sync + 'static) -> Self {
        Self::new(Action::Decide(Arc::new(decide)))
    }

    /// An injected failure.
    pub fn fault(fault: Fault) -> Self {
        Self::new(Action::Fault(fault))
    }

    /// HTTP `status` with an `api_error` body.
    pub fn http_error(status: u16) -> Self {
        Self::fault(Fault::HttpError {
            status,
            error_type: "api_error".into(),
            message: format!("scripted model server: injected HTTP {status}"),
        })
    }

    /// HTTP 529 `overloaded_error`, as the real API answers when busy.
    pub fn overloaded() -> Self {
        Self::fault(Fault::HttpError {
            status: 529,
            error_type: "overloaded_error".into(),
            message: "Overloaded".into(),
        })
    }

    /// A stream cut in the middle of an event.
    pub fn cut_mid_event() -> Self {
        Self::fault(Fault::CutMidEvent)
    }

    /// A stream carrying an event that is not JSON.
    pub fn invalid_json() -> Self {
        Self::fault(Fault::InvalidJson)
    }

    /// No answer at all.
    pub fn hang() -> Self {
        Self::fault(Fault::Hang)
    }

    /// Put text before the tool calls of this answer (or replace a text answer's text).
    #[must_use]
    pub fn with_text(mut self, new_text: impl Into<String>) -> Self {
        if let Action::Reply { text, .. } = &mut self.action {
            *text = Some(new_text.into());
        }
        self
    }

    /// Answer after `delay` (a slow model).
    #[must_use]
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Report these token counts for this answer.
    #[must_use]
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Usage {
            input_tokens,
            output_tokens,
        };
        self
    }
}

impl fmt::Debug for Turn {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = formatter.debug_struct("Turn");
        match &self.action {
            Action::Reply { text, tool_calls } => {
                debug.field("text", text).field("tool_calls", tool_calls)
            }
            Action::Decide(_) => debug.field("decide", &"<closure>"),
            Action::Fault(fault) => debug.field("fault", fault),
        };
        debug
            .field("delay", &self.delay)
            .field("usage", &self.usage)
            .finish()
    }
}

/// The closure type of [`Script::side_request_when`].
pub type Classify = dyn Fn(&RecordedRequest) -> bool + Send + Sync;

/// A test's script: main-conversation turns in order, plus the rules for the rest.
#[derive(Clone)]
pub struct Script {
    /// Turns not yet used, in order; each main-conversation request takes one
    /// (a retried request takes the next one too).
    pub(super) turns: VecDeque<Turn>,
    /// The answer once `turns` is empty; `None` answers HTTP 403 "script exhausted".
    pub(super) after_end: Option<Turn>,
    /// How every side request is answered.
    pub(super) side_answer: Turn,
    /// Which `POST /v1/messages` requests are side requests.
    pub(super) is_side_request: Arc<Classify>,
}

impl Script {
    /// A script with these turns, side requests answered `"ok"`.
    pub fn new(turns: impl IntoIterator<Item = Turn>) -> Self {
        Self {
            turns: turns.into_iter().collect(),
            after_end: None,
            side_answer: Turn::text("ok"),
            is_side_request: Arc::new(|request| request.tool_names().is_empty()),
        }
    }

    /// Append a turn.
    #[must_use]
    pub fn then(mut self, turn: Turn) -> Self {
        self.turns.push_back(turn);
        self
    }

    /// Once the turns are used up, answer every further main request with `turn`
    /// (for example a tool call forever, to hit `--max-turns`).
    #[must_use]
    pub fn then_forever(mut self, turn: Turn) -> Self {
        self.after_end = Some(turn);
        self
    }

    /// Answer side requests with `turn` instead of `"ok"`.
    #[must_use]
    pub fn side_answer(mut self, turn: Turn) -> Self {
        self.side_answer = turn;
        self
    }

    /// Classify `POST /v1/messages` requests: `true` means side request. The
    /// default treats a request offering no tools as a side request.
    #[must_use]
    pub fn side_request_when(
        mut self,
        classify: impl Fn(&RecordedRequest) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.is_side_request = Arc::new(classify);
        self
    }
}

impl fmt::Debug for Script {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Script")
            .field("turns", &self.turns)
            .field("after_end", &self.after_end)
            .field("side_answer", &self.side_answer)
            .finish_non_exhaustive()
    }
}
