//! The MCP server review-bot gives its agent.
//!
//! The only crate that knows the Model Context Protocol. In pipeline mode it
//! serves a read-only snapshot of the pull request and collects every write the
//! agent asks for as JSON lines; it never holds a GitHub credential.
