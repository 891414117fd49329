//! The MCP server: five tools over rmcp, in pipeline or live mode.
//!
//! | tool | pipeline mode | live mode |
//! | --- | --- | --- |
//! | `leave_inline_comment` | checked against the snapshot's diff, appended to `COMMENTS_FILE` | same, against the live diff |
//! | `leave_general_comment` | appended to `COMMENTS_FILE` | same |
//! | `github_get_pr_comments` | from the snapshot | from GitHub, filtered by the store |
//! | `github_post_pr_reply` | appended to `COMMENTS_FILE` as a `reply` line | posted to GitHub, recorded in the store |
//! | `present_review` | review panel socket, else `review.md` | same |
//!
//! Every invalid call is answered with a tool error (`isError: true`) whose
//! text says what was wrong and how to call again, and records nothing.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::FutureExt as _;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, JsonObject, ServerCapabilities, ServerConfig,
};
use rmcp::{ServerHandler, ServiceExt as _, tool, tool_handler, tool_router};

use review_core::agent_requests::{
    AgentRequest, GeneralComment, InlineComment, ReplyRequest, ReplyTarget, check_message,
};
use review_core::anchor::{CommentLocation, Side, Verdict, anchor};
use review_core::diff::PullRequestDiff;
use review_core::findings::Severity;
use review_core::snapshot::{CommentLookup, PullRequestSnapshot};

use crate::arguments::{
    self, CommentReference, GeneralCommentArguments, GetCommentsArguments, InlineCommentArguments,
    PostReplyArguments, PresentReviewArguments,
};
use crate::comments_file::append_line;
use crate::comments_view::{comments_view, thread_id};
use crate::document::{self, Edit, PresentMode};
use crate::live::LiveSource;
use crate::panel::{Delivery, PROTOCOL, PanelMessage, PanelSettings};
use crate::settings::COMMENTS_FILE_VARIABLE;

const INLINE_USAGE: &str = "path (string, relative to the repository root), line (integer ≥ 1) and \
     message (string); optionally start_line (integer), side (\"RIGHT\" or \"LEFT\"), title, severity \
     (critical, security, performance, logic, improvement or clarity), confidence (0-100) and suggestion";
const GENERAL_USAGE: &str = "message (string)";
const GET_COMMENTS_USAGE: &str = "no arguments, or include_replied (true or false)";
const REPLY_USAGE: &str = "comment_id (the id of a review thread or conversation comment from \
     github_get_pr_comments) and message (string)";
const PRESENT_USAGE: &str = "content (markdown), baseUri (the repository root), optionally mode \
     (\"replace\", \"update-section\" or \"append\") and section";

/// How many of the pull request's files an error about an unknown path lists.
const FILES_SHOWN: usize = 20;

/// What the server reads the pull request from.
#[derive(Debug)]
// Built once per process and moved into the server: its size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Source {
    /// Pipeline mode: the snapshot the pipeline wrote, if it gave one. Without
    /// one the comment tools and `present_review` still work (inline comments
    /// unchecked); the comment-thread tools answer with an error.
    Snapshot(Option<PullRequestSnapshot>),
    /// Live mode: GitHub and the local store, for a developer's own session.
    Live(Box<LiveSource>),
}

/// Everything the server needs, resolved by whoever starts it.
#[derive(Debug)]
pub struct ServerOptions {
    /// Where comment and reply requests are appended (`COMMENTS_FILE`).
    pub comments_file: Option<PathBuf>,
    /// Where the pull request is read from.
    pub source: Source,
    /// Where `present_review` delivers.
    pub panel: PanelSettings,
}

/// The MCP server review-bot gives its agent.
#[derive(Clone)]
pub struct ReviewServer {
    /// State shared by every tool call.
    state: Arc<State>,
    /// rmcp's table of our tools.
    tool_router: ToolRouter<Self>,
}

struct State {
    /// Where requests are appended; `None` makes the write tools warn and succeed (seed 000).
    comments_file: Option<PathBuf>,
    /// Where the pull request is read from.
    backend: Backend,
    /// Where `present_review` delivers.
    panel: PanelSettings,
    /// The review document `present_review` builds, the server's truth.
    document: tokio::sync::Mutex<String>,
    /// Comments replied to during this session, so a second reply is refused
    /// and `github_get_pr_comments` stops listing them (seed 002).
    replied: Mutex<HashSet<(ReplyTarget, u64)>>,
}

enum Backend {
    /// Pipeline mode, with the snapshot and its parsed diff when one was given.
    Snapshot(Option<Box<PullRequest>>),
    /// Live mode.
    Live(Box<LiveSource>),
}

struct PullRequest {
    snapshot: PullRequestSnapshot,
    /// The parsed diff, or why it could not be parsed (inline comments are
    /// then recorded unchecked; the pipeline anchors them again before posting).
    diff: Result<PullRequestDiff, String>,
}

impl ReviewServer {
    /// Builds a server from resolved options.
    pub fn new(options: ServerOptions) -> Self {
        let backend = match options.source {
            Source::Live(live) => Backend::Live(live),
            Source::Snapshot(snapshot) => Backend::Snapshot(snapshot.map(|snapshot| {
            let diff = snapshot.parsed_diff().map_err(|error| error.to_string());
            if let Err(error) = &diff {
                tracing::warn!(
                    repository = %snapshot.repository,
                    pull_request = snapshot.pull_request.number,
                    "the snapshot's diff could not be parsed ({error}); inline comments will be recorded unchecked"
                );
            }
            Box::new(PullRequest { snapshot, diff })
        })),
        };
        Self {
            state: Arc::new(State {
                comments_file: options.comments_file,
                backend,
                panel: options.panel,
                document: tokio::sync::Mutex::new(String::new()),
                replied: Mutex::new(HashSet::new()),
            }),
            tool_router: Self::tool_router(),
        }
    }

    /// Serves MCP over standard input and output until the client hangs up.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|error| ServeError(error.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|error| ServeError(error.to_string()))?;
        Ok(())
    }

    /// The names of the tools this server offers.
    pub fn tool_names(&self) -> Vec<String> {
        self.tool_router
            .list_all()
            .into_iter()
            .map(|tool| tool.name.into_owned())
            .collect()
    }
}

/// The MCP session failed (the client sent something that is not MCP, or the pipe broke).
#[derive(Debug, thiserror::Error)]
#[error("the MCP session over standard input/output failed: {0}")]
pub struct ServeError(String);

#[tool_router]
impl ReviewServer {
    /// Leave a comment on a line of the pull request's diff.
    #[tool(
        description = "Leave a review comment on a line of the pull request's diff. `line` is a line \
            number in the new version of the file (side RIGHT, the default) or, with side LEFT, in the old \
            version, and must be an added, removed or context line shown in the diff. For a comment on \
            several lines give start_line too (same hunk). The comment is posted with the review when it \
            ends. A line just outside a hunk is moved into it, and a line elsewhere in a changed file \
            is listed in the review body under \"Outside the diff\"; the answer says where it lands. \
            Only a file the pull request does not change is refused, with the files it does change.",
        input_schema = arguments::schema::<InlineCommentArguments>()
    )]
    async fn leave_inline_comment(&self, raw: JsonObject) -> CallToolResult {
        let arguments: InlineCommentArguments =
            match arguments::parse("leave_inline_comment", raw, INLINE_USAGE) {
                Ok(arguments) => arguments,
                Err(message) => return tool_error(message),
            };
        let comment = match inline_comment(arguments) {
            Ok(comment) => comment,
            Err(message) => {
                return tool_error(format!(
                    "leave_inline_comment: {message}. Nothing was recorded; call it again with {INLINE_USAGE}."
                ));
            }
        };
        let (comment, note) = match self.anchor_on_diff(comment) {
            Ok(anchored) => anchored,
            Err(message) => return tool_error(message),
        };
        let place = format!(
            "{} line {} ({})",
            comment.path,
            comment.line,
            comment.side_or_default()
        );
        self.record(
            AgentRequest::Inline(comment),
            &format!("Recorded an inline comment on {place}{note}."),
        )
        .await
    }

    /// Leave a comment for the review's summary.
    #[tool(
        description = "Leave a general review comment that is not about one line (it goes into the \
            review's summary). Posted with the review when it ends.",
        input_schema = arguments::schema::<GeneralCommentArguments>()
    )]
    async fn leave_general_comment(&self, raw: JsonObject) -> CallToolResult {
        let arguments: GeneralCommentArguments =
            match arguments::parse("leave_general_comment", raw, GENERAL_USAGE) {
                Ok(arguments) => arguments,
                Err(message) => return tool_error(message),
            };
        let request = AgentRequest::General(GeneralComment {
            message: arguments.message,
        });
        if let Err(problem) = request.check() {
            return tool_error(format!(
                "leave_general_comment: {problem}. Nothing was recorded; call it again with {GENERAL_USAGE}."
            ));
        }
        self.record(request, "Recorded a general comment.").await
    }

    /// List the pull request's review threads and conversation comments.
    #[tool(
        description = "List the pull request's existing review threads (with their diff hunks and \
            replies) and conversation comments, with the ids github_post_pr_reply takes and the \
            thread:: ids of the bot's own comments. Threads and comments already replied to are left \
            out unless include_replied is true.",
        input_schema = arguments::schema::<GetCommentsArguments>(),
        annotations(read_only_hint = true)
    )]
    async fn github_get_pr_comments(&self, raw: JsonObject) -> CallToolResult {
        let arguments: GetCommentsArguments =
            match arguments::parse("github_get_pr_comments", raw, GET_COMMENTS_USAGE) {
                Ok(arguments) => arguments,
                Err(message) => return tool_error(message),
            };
        let snapshot = match self.current_snapshot("github_get_pr_comments").await {
            Ok(snapshot) => snapshot,
            Err(message) => return tool_error(message),
        };
        let snapshot = self.with_session_replies(&snapshot);
        let view = comments_view(&snapshot, arguments.include_replied.unwrap_or(false));
        let text =
            serde_json::to_string_pretty(&view).expect("the comments view always serialises");
        CallToolResult::success(vec![ContentBlock::text(text)])
    }

    /// Reply to a review thread or a conversation comment.
    #[tool(
        description = "Reply to an existing review thread (give the id of its first comment) or \
            conversation comment, by the id github_get_pr_comments lists (a thread:: id works too). \
            Replies inside a thread cannot be replied to; reply to the thread's first comment. The \
            reply is posted when the review ends.",
        input_schema = arguments::schema::<PostReplyArguments>()
    )]
    async fn github_post_pr_reply(&self, raw: JsonObject) -> CallToolResult {
        let arguments: PostReplyArguments =
            match arguments::parse("github_post_pr_reply", raw, REPLY_USAGE) {
                Ok(arguments) => arguments,
                Err(message) => return tool_error(message),
            };
        if let Err(problem) = check_message(&arguments.message) {
            return tool_error(format!(
                "github_post_pr_reply: {problem}. Nothing was recorded; call it again with {REPLY_USAGE}."
            ));
        }
        let snapshot = match self.current_snapshot("github_post_pr_reply").await {
            Ok(snapshot) => snapshot,
            Err(message) => return tool_error(message),
        };
        let (comment_id, target) = match resolve_reply_target(&snapshot, &arguments.comment_id) {
            Ok(found) => found,
            Err(message) => return tool_error(message),
        };
        if !self.claim_reply(target, comment_id) {
            return tool_error(format!(
                "github_post_pr_reply: you already replied to comment {comment_id} in this review; one reply \
                 per comment. Nothing was recorded."
            ));
        }
        if let Backend::Live(live) = &self.state.backend {
            return match live
                .post_reply(&snapshot, comment_id, target, &arguments.message)
                .await
            {
                Ok(posted) => {
                    let mut text = if posted.already_there {
                        format!(
                            "The reply to comment {comment_id} was already posted (found by its \
                             thread:: id); nothing was posted again: {}",
                            posted.url
                        )
                    } else {
                        format!("Posted the reply to comment {comment_id}: {}", posted.url)
                    };
                    if let Some(warning) = &posted.store_warning {
                        let _ = write!(
                            text,
                            "\n\nWarning: the reply is on GitHub, but the local store could not \
                             record it ({warning}); the comment may still be listed as \
                             unanswered. Do not post it again: a retry finds this reply by its \
                             thread:: id and posts nothing."
                        );
                    }
                    CallToolResult::success(vec![ContentBlock::text(text)])
                }
                Err(error) => {
                    self.release_reply(target, comment_id);
                    tracing::error!(pull_request = %live.describe(), "posting a reply failed: {error}");
                    tool_error(format!(
                        "github_post_pr_reply: posting to GitHub failed: {error}. Try again later."
                    ))
                }
            };
        }
        let request = AgentRequest::Reply(ReplyRequest {
            comment_id,
            target,
            message: arguments.message,
        });
        let result = self
            .record(
                request,
                &format!("Recorded a reply to comment {comment_id}."),
            )
            .await;
        if result.is_error == Some(true) {
            self.release_reply(target, comment_id);
        }
        result
    }

    /// Present a review in the review panel (seed 001).
    #[tool(
        description = "Display a code review in the review panel with clickable file references \
            ([auth.ts:42](src/auth.ts#L42)). mode \"replace\" (default) replaces the whole review, \
            \"update-section\" replaces the section whose heading is `section` (a heading and \
            everything up to the next heading of the same or higher level; a missing section is \
            appended), \"append\" adds to the end. baseUri is the directory relative file references \
            resolve against.",
        input_schema = arguments::schema::<PresentReviewArguments>()
    )]
    async fn present_review(&self, raw: JsonObject) -> CallToolResult {
        let arguments: PresentReviewArguments =
            match arguments::parse("present_review", raw, PRESENT_USAGE) {
                Ok(arguments) => arguments,
                Err(message) => return tool_error(message),
            };
        let request = match PresentRequest::from_arguments(arguments) {
            Ok(request) => request,
            Err(message) => return tool_error(message),
        };
        let mut document = self.state.document.lock().await;
        let (next, edit) =
            document::apply(&document, request.mode, &request.content, &request.section);
        let message = PanelMessage {
            protocol: PROTOCOL,
            kind: "present_review",
            mode: request.mode.as_str(),
            section: (request.mode == PresentMode::UpdateSection)
                .then_some(request.section.as_str()),
            base_uri: &request.base_uri,
            content: &request.content,
            document: &next,
        };
        let delivery = self.state.panel.deliver(&message).await;
        // The document is the server's truth whether or not a panel took it:
        // on failure it was saved to the review file.
        *document = next;
        drop(document);
        match delivery {
            Ok(delivery) => present_result(&delivery, &edit),
            Err(error) => tool_error(error.to_string()),
        }
    }
}

#[tool_handler]
impl ServerHandler for ReviewServer {
    /// Runs the tool, turning a panic into a tool error: the agent's turn
    /// waits for every answer, so a call that panicked and never answered
    /// would hang it until the tool timeout. No argument should get here (the
    /// tools check everything the agent sends); this is the backstop.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let tool = request.name.clone();
        let context = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        match std::panic::AssertUnwindSafe(self.tool_router.call(context))
            .catch_unwind()
            .await
        {
            Ok(answer) => answer,
            Err(panic) => {
                let reason = panic
                    .downcast_ref::<&str>()
                    .map(ToString::to_string)
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(%tool, "a tool call panicked: {reason}");
                Ok(tool_error(format!(
                    "{tool} failed with an internal error in review-bot ({reason}). Nothing was \
                     recorded; this is a bug in review-bot, not in your call. Carry on without it."
                ))
                .into())
            }
        }
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("review-bot", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "review-bot's review tools. Leave inline comments on lines of the pull request's diff \
                 and general comments for the review summary; list existing threads and reply to them; \
                 present a markdown review in the review panel. Comments and replies are posted together \
                 when the review ends.",
            )
    }
}

impl ReviewServer {
    /// Appends a request to the comments file, or warns and succeeds without one (seed 000).
    async fn record(&self, request: AgentRequest, success: &str) -> CallToolResult {
        let Some(path) = self.state.comments_file.clone() else {
            tracing::warn!(
                "{COMMENTS_FILE_VARIABLE} is not set: a {} request was accepted but not recorded",
                request_kind(&request)
            );
            return CallToolResult::success(vec![ContentBlock::text(format!(
                "{success} Note: this server was started without {COMMENTS_FILE_VARIABLE}, so it was not \
                 saved anywhere; carry on."
            ))]);
        };
        let line = request.to_json_line();
        let appended = tokio::task::spawn_blocking(move || append_line(&path, &line)).await;
        match appended {
            Ok(Ok(())) => CallToolResult::success(vec![ContentBlock::text(success.to_owned())]),
            Ok(Err(error @ crate::comments_file::AppendError::NotRegularFile { .. })) => {
                tracing::error!(
                    "could not record a {} request: {error}",
                    request_kind(&request)
                );
                tool_error(format!("Could not record the comment: {error}."))
            }
            Ok(Err(error)) => {
                tracing::error!(
                    "could not record a {} request: {error}",
                    request_kind(&request)
                );
                tool_error(format!(
                    "Could not record the request: {error}. Try the call again."
                ))
            }
            Err(join_error) => tool_error(format!(
                "Could not record the request: {join_error}. Try the call again."
            )),
        }
    }

    /// The pull request's comments as they stand: the snapshot, or fresh from GitHub in live mode.
    async fn current_snapshot(&self, tool: &str) -> Result<PullRequestSnapshot, String> {
        match &self.state.backend {
            Backend::Snapshot(Some(pull_request)) => Ok(pull_request.snapshot.clone()),
            Backend::Snapshot(None) => Err(format!(
                "{tool} needs the pull request's snapshot, and this server was started without one \
                 ({} is not set). The comment tools and present_review still work.",
                crate::settings::SNAPSHOT_VARIABLE
            )),
            Backend::Live(live) => live.snapshot().await.map_err(|error| {
                tracing::error!(pull_request = %live.describe(), "reading the comments failed: {error}");
                format!("{tool}: reading the pull request's comments from GitHub failed: {error}. Try again later.")
            }),
        }
    }

    /// The diff inline comments are checked against: `None` without one,
    /// `Some(Err)` when it could not be read.
    fn diff(&self) -> Option<Result<&PullRequestDiff, &str>> {
        match &self.state.backend {
            Backend::Snapshot(None) => None,
            Backend::Snapshot(Some(pull_request)) => {
                Some(pull_request.diff.as_ref().map_err(String::as_str))
            }
            Backend::Live(live) => Some(live.model.as_ref().map_err(String::as_str)),
        }
    }

    /// The snapshot with this session's replies marked as replied.
    fn with_session_replies(&self, snapshot: &PullRequestSnapshot) -> PullRequestSnapshot {
        let replied = self
            .state
            .replied
            .lock()
            .expect("the replied set is never poisoned");
        let mut snapshot = snapshot.clone();
        for thread in &mut snapshot.review_threads {
            thread.replied |= replied.contains(&(ReplyTarget::ReviewComment, thread.root().id));
        }
        for comment in &mut snapshot.issue_comments {
            comment.replied |= replied.contains(&(ReplyTarget::IssueComment, comment.id));
        }
        snapshot
    }

    fn claim_reply(&self, target: ReplyTarget, comment_id: u64) -> bool {
        self.state
            .replied
            .lock()
            .expect("the replied set is never poisoned")
            .insert((target, comment_id))
    }

    fn release_reply(&self, target: ReplyTarget, comment_id: u64) {
        self.state
            .replied
            .lock()
            .expect("the replied set is never poisoned")
            .remove(&(target, comment_id));
    }

    /// Checks an inline comment against the diff. Returns the comment to record
    /// (path normalised, moved where the anchoring rules move it) and a note for
    /// the answer saying where it will land, or the corrective error. Only what
    /// can never be placed — a file the pull request does not change, or a path
    /// git cannot hold — is refused (issue 25: a line two from a hunk, a deleted
    /// file's new side, a pure rename were refused and the finding lost when the
    /// agent did not retry); everything else is recorded.
    fn anchor_on_diff(&self, comment: InlineComment) -> Result<(InlineComment, String), String> {
        let Some(diff) = self.diff() else {
            return Ok((
                comment,
                " (not checked against a diff: this server has no snapshot)".to_owned(),
            ));
        };
        let Ok(diff) = diff else {
            return Ok((
                comment,
                " (not checked: the pull request's diff could not be read)".to_owned(),
            ));
        };
        let side = comment.side_or_default();
        let mut location = CommentLocation::new(comment.path.clone(), comment.line).on_side(side);
        location.start_line = comment.start_line;
        match anchor(diff, &location) {
            Verdict::Inline {
                path,
                line,
                start_line,
            } => Ok((
                InlineComment {
                    path,
                    line,
                    start_line,
                    ..comment
                },
                String::new(),
            )),
            Verdict::Moved {
                path,
                line,
                start_line,
            } => {
                let note = if line == comment.line {
                    let covered = match start_line {
                        Some(start) => {
                            format!("the range now starts at line {start}, where that hunk begins")
                        }
                        None => format!("the comment covers line {line} only"),
                    };
                    format!(
                        " (start_line {} is not in the same diff hunk as line {line}, so {covered}; \
                         it is recorded, do not record it again)",
                        comment.start_line.unwrap_or_default()
                    )
                } else {
                    format!(
                        " (line {} is not part of the diff; it will be posted on line {line}, the \
                         nearest line of the same hunk; it is recorded, do not record it again)",
                        comment.line
                    )
                };
                Ok((
                    InlineComment {
                        path,
                        line,
                        start_line,
                        ..comment
                    },
                    note,
                ))
            }
            Verdict::OutsideDiff { reason } => Ok((
                comment,
                format!(
                    " (GitHub cannot show it inline — {reason} — so it will be listed in the review \
                     body under \"Outside the diff\" with its file and line; it is recorded, do not \
                     record it again)"
                ),
            )),
            Verdict::NotInPr { reason } => {
                let files: Vec<&str> = diff.files().iter().map(|file| file.path.as_str()).collect();
                let mut listed = files
                    .iter()
                    .take(FILES_SHOWN)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ");
                if files.len() > FILES_SHOWN {
                    let _ = write!(listed, " and {} more", files.len() - FILES_SHOWN);
                }
                Err(format!(
                    "leave_inline_comment: {reason}. The files this pull request changes are: {listed}. \
                     Nothing was recorded; call leave_inline_comment again with one of those paths, \
                     relative to the repository root."
                ))
            }
        }
    }
}

/// Turns the parsed arguments into a request, or says which value is wrong.
fn inline_comment(arguments: InlineCommentArguments) -> Result<InlineComment, String> {
    let line = to_line("line", arguments.line)?;
    let start_line = arguments
        .start_line
        .map(|start| to_line("start_line", start))
        .transpose()?;
    let side = match arguments.side.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(side) if side.eq_ignore_ascii_case("right") => Some(Side::Right),
        Some(side) if side.eq_ignore_ascii_case("left") => Some(Side::Left),
        Some(side) => return Err(format!("side must be \"RIGHT\" or \"LEFT\", not {side:?}")),
    };
    let severity = match arguments.severity.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(text) => Some(
            Severity::ALL
                .into_iter()
                .find(|severity| severity.as_str().eq_ignore_ascii_case(text))
                .ok_or_else(|| {
                    format!(
                        "severity must be one of critical, security, performance, logic, improvement, clarity; not {text:?}"
                    )
                })?,
        ),
    };
    let confidence = match arguments.confidence {
        None => None,
        Some(confidence) => Some(
            u8::try_from(confidence)
                .ok()
                .filter(|confidence| *confidence <= 100)
                .ok_or_else(|| format!("confidence must be between 0 and 100, not {confidence}"))?,
        ),
    };
    let comment = InlineComment {
        message: arguments.message,
        // As given: a file name may start or end with a space (the anchorer
        // forgives stray white space around a path that names no file).
        path: arguments.path,
        line,
        // GitHub refuses a range whose ends are equal; it is the same single line.
        start_line: start_line.filter(|start| *start != line),
        side,
        title: arguments.title.filter(|title| !title.trim().is_empty()),
        severity,
        confidence,
        suggestion: arguments
            .suggestion
            .filter(|suggestion| !suggestion.trim().is_empty()),
    };
    comment.check().map_err(|problem| problem.to_string())?;
    Ok(comment)
}

fn to_line(name: &str, value: u64) -> Result<u32, String> {
    u32::try_from(value)
        .ok()
        .filter(|line| *line >= 1)
        .ok_or_else(|| format!("{name} must be a line number from 1, not {value}"))
}

/// Resolves a reply's target in the snapshot, refusing unknown ids and replies to replies.
fn resolve_reply_target(
    snapshot: &PullRequestSnapshot,
    reference: &CommentReference,
) -> Result<(u64, ReplyTarget), String> {
    let lookup = match reference {
        CommentReference::Id(id) => snapshot.find_comment(*id),
        CommentReference::Thread(thread) => find_by_thread_id(snapshot, thread),
    };
    match lookup {
        Some(CommentLookup::ThreadRoot(thread)) => {
            Ok((thread.root().id, ReplyTarget::ReviewComment))
        }
        Some(CommentLookup::Issue(comment)) => Ok((comment.id, ReplyTarget::IssueComment)),
        Some(CommentLookup::ThreadReply { thread, comment }) => Err(format!(
            "github_post_pr_reply: comment {} is a reply inside the thread started by comment {}; GitHub only \
             accepts replies to a thread's first comment. Nothing was recorded; call github_post_pr_reply \
             again with comment_id {}.",
            comment.id,
            thread.root().id,
            thread.root().id
        )),
        None => Err(format!(
            "github_post_pr_reply: this pull request has no review thread or conversation comment {reference}. \
             Nothing was recorded; call github_get_pr_comments (with include_replied: true to see every \
             comment) and use an `id` it lists."
        )),
    }
}

/// Finds the bot's comment whose own footer carries `thread::{thread}`. Only
/// the bot's comments count: a PR author who pastes the bot's footer into
/// their own comment must not receive the reply meant for the bot's thread.
fn find_by_thread_id<'a>(
    snapshot: &'a PullRequestSnapshot,
    thread_reference: &str,
) -> Option<CommentLookup<'a>> {
    let wanted = Some(thread_reference.to_ascii_lowercase());
    let matches = |user: &str, body: &str| thread_id(snapshot, user, body) == wanted;
    for thread in &snapshot.review_threads {
        for (position, comment) in thread.comments.iter().enumerate() {
            if matches(&comment.user, &comment.body) {
                return Some(if position == 0 {
                    CommentLookup::ThreadRoot(thread)
                } else {
                    CommentLookup::ThreadReply { thread, comment }
                });
            }
        }
    }
    snapshot
        .issue_comments
        .iter()
        .find(|comment| matches(&comment.user, &comment.body))
        .map(CommentLookup::Issue)
}

/// A checked `present_review` call.
struct PresentRequest {
    content: String,
    mode: PresentMode,
    base_uri: String,
    section: String,
}

impl PresentRequest {
    /// Seed 001's validation, with its error messages.
    fn from_arguments(arguments: PresentReviewArguments) -> Result<Self, String> {
        let content = arguments
            .content
            .filter(|content| !content.trim().is_empty())
            .ok_or("Content parameter is required")?;
        let mode = match arguments.mode.as_deref() {
            None => PresentMode::Replace,
            Some(mode) => PresentMode::parse(mode)
                .ok_or("Mode must be 'replace', 'update-section', or 'append'")?,
        };
        let base_uri = arguments
            .base_uri
            .filter(|base_uri| !base_uri.trim().is_empty())
            .ok_or("baseUri parameter is required: the directory relative file references resolve against (usually the repository root)")?;
        let section = arguments.section.unwrap_or_default();
        if mode == PresentMode::UpdateSection && section.trim().is_empty() {
            return Err("Section parameter required for update-section mode".to_owned());
        }
        Ok(Self {
            content,
            mode,
            base_uri,
            section,
        })
    }
}

/// The answer of a successful `present_review` (seed 001's `PresentReviewResult`).
fn present_result(delivery: &Delivery, edit: &Edit) -> CallToolResult {
    let edit = match edit {
        Edit::Replaced => "replaced the review",
        Edit::Appended => "appended to the review",
        Edit::SectionUpdated => "updated the section",
        Edit::SectionAppended => "the section did not exist, so it was appended",
    };
    let result = match delivery {
        Delivery::Panel { socket } => serde_json::json!({
            "success": true,
            "delivered_to": "panel",
            "message": format!("Review displayed in the review panel ({edit}; socket {}).", socket.display()),
        }),
        Delivery::File { path, reason } => serde_json::json!({
            "success": true,
            "delivered_to": "file",
            "path": path,
            "message": format!("{reason}; the review was written to {} ({edit}).", path.display()),
        }),
    };
    CallToolResult::success(vec![ContentBlock::text(result.to_string())])
}

fn tool_error(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

fn request_kind(request: &AgentRequest) -> &'static str {
    match request {
        AgentRequest::General(_) => "general comment",
        AgentRequest::Inline(_) => "inline comment",
        AgentRequest::Reply(_) => "reply",
    }
}
