//! The MCP server review-bot gives its agent.
//!
//! The only crate that knows the Model Context Protocol. In pipeline mode it
//! serves a read-only snapshot of the pull request and collects every write the
//! agent asks for as JSON lines; it never holds a GitHub credential.
//!
//! - [`settings`]: the environment contract with whoever starts the server,
//!   and the guard that refuses GitHub credentials in pipeline mode.
//! - [`arguments`]: the tools' argument schemas and forgiving parsing.
//! - [`comments_file`]: one request, one line, one `O_APPEND` write.
//! - [`collector`]: reading the lines back after the agent exits.
//! - [`comments_view`]: `github_get_pr_comments`' answer from a snapshot.
//! - [`document`] and [`panel`]: `present_review`'s document and its delivery.

pub mod arguments;
pub mod collector;
pub mod comments_file;
pub mod comments_view;
pub mod document;
pub mod panel;
pub mod settings;
