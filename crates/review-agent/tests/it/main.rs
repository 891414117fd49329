//! review-agent's integration tests: the real, pinned Claude Code CLI against
//! review-testkit's scripted model server, through the production runner; and
//! the shipped prompts with their override directory (`prompts`).

mod confinement;
mod isolation;
mod key_proxy;
mod mcp;
mod process;
mod prompts;
mod runner;
mod support;
