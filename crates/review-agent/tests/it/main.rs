//! review-agent's integration tests: the real, pinned Claude Code CLI against
//! review-testkit's scripted model server, through the production runner.

mod mcp;
mod process;
mod runner;
mod support;
