//! What a Claude Code run produced, in domain terms: the verdict, the final
//! text, and the accounting the store records (turns, cost, tokens).

use std::time::Duration;

/// How a run ended, from the CLI's result message.
///
/// Claude Code reports API errors as `subtype: success` with `is_error: true`;
/// they are [`AgentOutcome::ApiError`] here, never a success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentOutcome {
    /// `subtype: success` and `is_error: false`: the agent finished its work.
    Success,
    /// `error_max_turns`: the agent was still working when `--max-turns` ran out.
    MaxTurns,
    /// `error_max_budget_usd`: the run hit `--max-budget-usd`.
    MaxBudget,
    /// `subtype: success` with `is_error: true`: the model API failed (after
    /// the CLI's own retries). `message` is the CLI's explanation.
    ApiError {
        /// The HTTP status the API answered, when the CLI reports one.
        status: Option<u16>,
        /// What went wrong, as the CLI put it.
        message: String,
    },
    /// `error_during_execution`: the CLI failed while running.
    ExecutionError {
        /// What went wrong, as far as the CLI said.
        message: String,
    },
    /// A subtype this version of review-bot does not know.
    Unknown {
        /// The CLI's `subtype`.
        subtype: String,
        /// Its `is_error`.
        is_error: bool,
    },
}

impl AgentOutcome {
    /// Whether this outcome is a success.
    pub fn is_success(&self) -> bool {
        matches!(self, Self::Success)
    }
}

impl std::fmt::Display for AgentOutcome {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Success => formatter.write_str("success"),
            Self::MaxTurns => formatter.write_str(
                "the agent used all its turns before finishing (raise max_turns, or narrow the task)",
            ),
            Self::MaxBudget => {
                formatter.write_str("the agent reached its cost budget (max_budget_usd)")
            }
            Self::ApiError {
                status: Some(status),
                message,
            } => write!(formatter, "the model API failed with HTTP {status}: {message}"),
            Self::ApiError {
                status: None,
                message,
            } => write!(formatter, "the model API failed: {message}"),
            Self::ExecutionError { message } => {
                write!(formatter, "Claude Code failed during execution: {message}")
            }
            Self::Unknown { subtype, is_error } => write!(
                formatter,
                "Claude Code ended with an unknown result subtype `{subtype}` (is_error: {is_error})"
            ),
        }
    }
}

/// Tokens the run used, summed over its turns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens (thinking included).
    pub output_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_input_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_input_tokens: u64,
}

/// A tool call the CLI refused for lack of permission.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionDenial {
    /// The tool's name as the model called it.
    pub tool_name: String,
    /// The call's id.
    pub tool_use_id: String,
    /// The input the model gave it.
    pub tool_input: serde_json::Value,
}

/// A finished Claude Code run: how it ended and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRun {
    /// How it ended. Only [`AgentOutcome::Success`] is a success.
    pub outcome: AgentOutcome,
    /// The final text of the agent (or the CLI's error message), when there is one.
    pub result: Option<String>,
    /// Turns the agent took.
    pub num_turns: u32,
    /// The CLI's session id.
    pub session_id: Option<String>,
    /// Cost the CLI computed from the API's reported usage, in US dollars.
    pub total_cost_usd: f64,
    /// Token counts.
    pub usage: TokenUsage,
    /// Tool calls refused for lack of permission.
    pub permission_denials: Vec<PermissionDenial>,
    /// Wall time the CLI reported (`duration_ms`), or what we measured.
    pub duration: Duration,
    /// The CLI's exit code (`None` when killed by a signal).
    pub exit_code: Option<i32>,
    /// The answer the model gave through the CLI's structured-output tool,
    /// when the run asked for one ([`super::ClaudeCodeRun::json_schema`]);
    /// the CLI has checked it against the schema.
    pub structured_output: Option<serde_json::Value>,
}

/// What several agent runs took together (a verification pass's or a
/// judge's batches): cost, turns and time, as the runs report them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AgentSpend {
    /// Cost in US dollars.
    pub cost_usd: f64,
    /// Turns.
    pub turns: u32,
    /// Time.
    pub duration: Duration,
}

impl AgentSpend {
    /// Add one run's.
    pub fn add(&mut self, run: &AgentRun) {
        self.cost_usd += run.total_cost_usd;
        self.turns += run.num_turns;
        self.duration += run.duration;
    }
}

impl AgentRun {
    /// Whether the agent finished successfully.
    pub fn is_success(&self) -> bool {
        self.outcome.is_success()
    }

    /// The run when it succeeded, otherwise an [`crate::AgentError::Unsuccessful`]
    /// that still carries the run (for its cost and transcript).
    pub fn into_success(self) -> Result<Self, crate::AgentError> {
        if self.is_success() {
            Ok(self)
        } else {
            Err(crate::AgentError::Unsuccessful {
                run: Box::new(self),
            })
        }
    }
}
