//! Agent engines.
//!
//! The only crate that knows an agent CLI's flags and output format (Claude
//! Code first). It also owns the prompts and review guides shipped with the
//! binary, and where transcripts are kept.
//!
//! - [`claude`]: run Claude Code headless against a checkout, with our MCP
//!   server, and read its result ([`claude::ClaudeCode`]).
//! - [`prompts`]: the shipped prompts and review guides, overridable from a
//!   directory, layered into each run's system prompt ([`prompts::Prompts`]).

pub mod claude;
mod error;
pub mod prompts;

pub use error::AgentError;
