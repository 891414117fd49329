//! `github_get_pr_comments`' answer (seed 002), built from a snapshot.
//!
//! Each entry is either a review thread (its first comment, with the replies
//! nested under it, since only the first comment can take a reply) or an
//! issue comment. Entries the bot already replied to are left out unless the
//! caller asks for them; `replied_comments_filtered` says how many were.
//! Diff hunks keep their `@@` header and the lines nearest the comment;
//! overly long bodies are shortened. Both say so when they do.

use std::fmt::Write as _;

use serde::Serialize;

use review_core::anchor::Side;
use review_core::snapshot::{PullRequestSnapshot, ReviewThread, ThreadComment};

/// The most diff-hunk lines shown for a thread, counted back from the commented line.
pub const MAX_HUNK_LINES: usize = 30;

/// The most bytes of diff hunk shown for a thread.
pub const MAX_HUNK_BYTES: usize = 3_000;

/// The most characters of a comment body shown.
pub const MAX_BODY_CHARS: usize = 8_000;

/// The answer of `github_get_pr_comments`.
#[derive(Debug, Clone, Serialize)]
pub struct CommentsView {
    /// The repository, `owner/name`.
    pub repository: String,
    /// The pull request number.
    pub pull_request: u64,
    /// The threads and comments listed.
    pub comments: Vec<CommentEntry>,
    /// How many entries `comments` holds.
    pub total_comments: usize,
    /// How many entries were left out because the bot already replied to them.
    pub replied_comments_filtered: usize,
}

/// One listed thread or comment.
#[derive(Debug, Clone, Serialize)]
pub struct CommentEntry {
    /// The id to pass to `github_post_pr_reply`.
    pub id: u64,
    /// `review_thread` or `issue_comment`.
    pub kind: &'static str,
    /// The author's login.
    pub user: String,
    /// The markdown body (shortened past [`MAX_BODY_CHARS`]).
    pub body: String,
    /// When it was written.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub created_at: String,
    /// The `thread::…` id in the body's own footer, for the bot's own comments
    /// only (a footer pasted into anybody else's comment is not listed);
    /// `github_post_pr_reply` accepts it in place of `id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// For a review thread: the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// For a review thread: the line (absent when the thread is outdated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// For a multi-line review thread: the first line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    /// For a review thread: `LEFT` or `RIGHT`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
    /// For a review thread: whether the code under it changed since.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub outdated: bool,
    /// For a review thread: the diff hunk ending at the commented line (capped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff_hunk: Option<String>,
    /// For a review thread: the replies after the first comment, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replies: Vec<ReplyEntry>,
    /// Whether the bot already replied (only shown when replied entries are included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replied: Option<bool>,
}

/// A reply inside a review thread (it cannot itself be replied to).
#[derive(Debug, Clone, Serialize)]
pub struct ReplyEntry {
    /// GitHub's id.
    pub id: u64,
    /// The author's login.
    pub user: String,
    /// The markdown body (shortened past [`MAX_BODY_CHARS`]).
    pub body: String,
    /// The `thread::…` id in its own footer, when the bot wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
}

/// Builds the answer.
pub fn comments_view(snapshot: &PullRequestSnapshot, include_replied: bool) -> CommentsView {
    let mut comments = Vec::new();
    let mut filtered = 0;
    for thread in &snapshot.review_threads {
        if thread.replied && !include_replied {
            filtered += 1;
            continue;
        }
        comments.push(thread_entry(snapshot, thread, include_replied));
    }
    for comment in &snapshot.issue_comments {
        if comment.replied && !include_replied {
            filtered += 1;
            continue;
        }
        comments.push(CommentEntry {
            id: comment.id,
            kind: "issue_comment",
            user: comment.user.clone(),
            body: cap_body(&comment.body),
            created_at: comment.created_at.clone(),
            thread_id: thread_id(snapshot, &comment.user, &comment.body),
            path: None,
            line: None,
            start_line: None,
            side: None,
            outdated: false,
            diff_hunk: None,
            replies: Vec::new(),
            replied: include_replied.then_some(comment.replied),
        });
    }
    CommentsView {
        repository: snapshot.repository.clone(),
        pull_request: snapshot.pull_request.number,
        total_comments: comments.len(),
        comments,
        replied_comments_filtered: filtered,
    }
}

/// The `thread::{uuid}` id of a comment's own footer, when `user` is the bot
/// (see [`PullRequestSnapshot::own_thread_id`]).
pub fn thread_id(snapshot: &PullRequestSnapshot, user: &str, body: &str) -> Option<String> {
    snapshot
        .own_thread_id(user, body)
        .map(|thread| format!("thread::{thread}"))
}

fn thread_entry(
    snapshot: &PullRequestSnapshot,
    thread: &ReviewThread,
    include_replied: bool,
) -> CommentEntry {
    let root: &ThreadComment = thread.root();
    CommentEntry {
        id: root.id,
        kind: "review_thread",
        user: root.user.clone(),
        body: cap_body(&root.body),
        created_at: root.created_at.clone(),
        thread_id: thread_id(snapshot, &root.user, &root.body),
        path: Some(thread.path.clone()),
        line: thread.line,
        start_line: thread.start_line,
        side: thread.side,
        outdated: thread.outdated,
        diff_hunk: (!thread.diff_hunk.is_empty()).then(|| cap_hunk(&thread.diff_hunk)),
        replies: thread.comments[1..]
            .iter()
            .map(|reply| ReplyEntry {
                id: reply.id,
                user: reply.user.clone(),
                body: cap_body(&reply.body),
                thread_id: thread_id(snapshot, &reply.user, &reply.body),
            })
            .collect(),
        replied: include_replied.then_some(thread.replied),
    }
}

/// Keeps the `@@` header and the last lines of a hunk (GitHub's hunk ends at
/// the commented line, so the end is what matters).
pub fn cap_hunk(hunk: &str) -> String {
    let lines: Vec<&str> = hunk.lines().collect();
    if lines.len() <= MAX_HUNK_LINES + 1 && hunk.len() <= MAX_HUNK_BYTES {
        return hunk.to_owned();
    }
    let header = lines.first().filter(|line| line.starts_with("@@"));
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0;
    let body_start = usize::from(header.is_some());
    for line in lines[body_start..].iter().rev().take(MAX_HUNK_LINES) {
        if bytes + line.len() + 1 > MAX_HUNK_BYTES {
            break;
        }
        bytes += line.len() + 1;
        kept.push(line);
    }
    kept.reverse();
    let omitted = lines.len() - kept.len() - usize::from(header.is_some());
    let mut capped = String::new();
    if let Some(header) = header {
        capped.push_str(header);
        capped.push('\n');
    }
    let _ = writeln!(capped, "… ({omitted} earlier lines of the hunk omitted)");
    capped.push_str(&kept.join("\n"));
    capped
}

fn cap_body(body: &str) -> String {
    let total = body.chars().count();
    if total <= MAX_BODY_CHARS {
        return body.to_owned();
    }
    let kept: String = body.chars().take(MAX_BODY_CHARS).collect();
    format!(
        "{kept}\n… ({} more characters not shown)",
        total - MAX_BODY_CHARS
    )
}

#[cfg(test)]
mod tests {
    use review_core::snapshot::{IssueComment, PullRequestInfo, SNAPSHOT_VERSION};

    use super::*;

    fn comment(id: u64, body: &str) -> ThreadComment {
        ThreadComment {
            id,
            user: if id == 1 { "review-bot[bot]" } else { "bob" }.into(),
            body: body.into(),
            created_at: String::new(),
        }
    }

    fn snapshot() -> PullRequestSnapshot {
        PullRequestSnapshot {
            version: SNAPSHOT_VERSION,
            repository: "octo/widgets".into(),
            bot_login: Some("review-bot[bot]".into()),
            pull_request: PullRequestInfo {
                number: 7,
                title: "t".into(),
                body: String::new(),
                author: "alice".into(),
                base_ref: "main".into(),
                head_ref: "f".into(),
                base_sha: "a".into(),
                head_sha: "b".into(),
            },
            diff: String::new(),
            files: Vec::new(),
            files_truncated: false,
            review_threads: vec![
                ReviewThread {
                    path: "src/a.rs".into(),
                    line: Some(4),
                    start_line: None,
                    side: Some(Side::Right),
                    diff_hunk: "@@ -1,2 +1,4 @@\n a\n+b".into(),
                    outdated: false,
                    replied: false,
                    comments: vec![
                        comment(1, &format!("why?\n\n<sub>thread::{THREAD}</sub>")),
                        // Bob quoting the bot's footer does not make it his.
                        comment(2, &format!("because\n\n<sub>thread::{THREAD}</sub>")),
                    ],
                },
                ReviewThread {
                    path: "src/b.rs".into(),
                    line: None,
                    start_line: None,
                    side: None,
                    diff_hunk: String::new(),
                    outdated: true,
                    replied: true,
                    comments: vec![comment(3, "old")],
                },
            ],
            issue_comments: vec![IssueComment {
                id: 10,
                user: "carol".into(),
                body: "please add tests".into(),
                created_at: String::new(),
                replied: false,
            }],
        }
    }

    const THREAD: &str = "0b6c3c55-8f1e-4f0e-9a8e-3c1f2a9d7e11";

    #[test]
    fn replied_threads_are_filtered_and_counted() {
        let view = comments_view(&snapshot(), false);
        let listed: Vec<u64> = view.comments.iter().map(|entry| entry.id).collect();
        assert_eq!(listed, [1, 10]);
        assert_eq!(view.total_comments, 2);
        assert_eq!(view.replied_comments_filtered, 1);
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(json["comments"][0]["replies"][0]["id"], 2);
        assert_eq!(
            json["comments"][0]["thread_id"],
            format!("thread::{THREAD}")
        );
        assert!(json["comments"][0]["replies"][0].get("thread_id").is_none());
        assert_eq!(json["comments"][0]["path"], "src/a.rs");
        assert_eq!(json["comments"][0]["line"], 4);
        assert_eq!(json["comments"][1]["kind"], "issue_comment");
        assert!(json["comments"][1].get("path").is_none());
        assert!(json["comments"][0].get("replied").is_none());

        let all = comments_view(&snapshot(), true);
        assert_eq!(all.total_comments, 3);
        assert_eq!(all.replied_comments_filtered, 0);
        assert_eq!(all.comments[1].replied, Some(true));
    }

    #[test]
    fn long_hunks_keep_their_header_and_tail() {
        let mut hunk = "@@ -1,100 +1,100 @@".to_owned();
        for line in 0..100 {
            let _ = write!(hunk, "\n line {line}");
        }
        let capped = cap_hunk(&hunk);
        let lines: Vec<&str> = capped.lines().collect();
        assert_eq!(lines[0], "@@ -1,100 +1,100 @@");
        assert_eq!(lines[1], "… (70 earlier lines of the hunk omitted)");
        assert_eq!(lines.last(), Some(&" line 99"));
        assert_eq!(lines.len(), 2 + MAX_HUNK_LINES);
        let wide = format!("@@ -1 +1 @@\n+{}\n+tail", "x".repeat(5_000));
        let capped = cap_hunk(&wide);
        assert!(capped.len() < MAX_HUNK_BYTES, "{}", capped.len());
        assert!(capped.ends_with("+tail"));
        assert_eq!(cap_hunk("@@ -1 +1 @@\n+a"), "@@ -1 +1 @@\n+a");
    }

    #[test]
    fn long_bodies_are_shortened_and_say_so() {
        let body = "é".repeat(MAX_BODY_CHARS + 5);
        let capped = cap_body(&body);
        assert!(capped.ends_with("… (5 more characters not shown)"));
    }
}
