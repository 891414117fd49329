//! Integration tests of the MCP server: a client speaking MCP's JSON-RPC over a
//! byte stream to the real server, as Claude Code does over stdio.

mod comment_tools;
mod hostile_arguments;
mod planted_comments_file;
mod present_review;
mod reply_tools;
mod support;
