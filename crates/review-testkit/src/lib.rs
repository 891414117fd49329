//! Test doubles at real process and network boundaries.
//!
//! A GitHub simulator (real HTTP, real git repositories underneath, GitHub's
//! rules and headers), a scripted model server speaking the Anthropic Messages
//! API for the real Claude Code CLI, and git fixtures. Used by tests only; it
//! never fakes our own code.

pub mod cgroups;
pub mod github;
pub mod json_input;
pub mod model;
pub mod openapi;
pub mod processes;
pub mod tools;
