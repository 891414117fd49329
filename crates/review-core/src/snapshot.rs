//! The pull-request snapshot the pipeline hands to the agent's MCP server.
//!
//! In pipeline mode the agent never holds a GitHub credential (DESIGN.md,
//! invariant 5). Instead the pipeline fetches everything the agent may read —
//! the pull request's metadata, its unified diff, its review threads and issue
//! comments, and which of them the bot already replied to — and writes it to a
//! JSON file. `review-bot mcp` serves that file read-only.
//!
//! # Format (version 1)
//!
//! ```json
//! {
//!   "version": 1,
//!   "repository": "octo/widgets",
//!   "pull_request": {
//!     "number": 42, "title": "Add caching", "body": "…", "author": "alice",
//!     "base_ref": "main", "head_ref": "feature", "base_sha": "…", "head_sha": "…"
//!   },
//!   "diff": "diff --git a/src/lib.rs b/src/lib.rs\n…",
//!   "review_threads": [
//!     {
//!       "path": "src/lib.rs", "line": 12, "side": "RIGHT", "start_line": null,
//!       "diff_hunk": "@@ -1,3 +1,12 @@ …", "outdated": false, "replied": false,
//!       "comments": [
//!         { "id": 1001, "user": "bob", "body": "Why a Vec?", "created_at": "2025-01-13T10:30:00Z" }
//!       ]
//!     }
//!   ],
//!   "issue_comments": [
//!     { "id": 2001, "user": "carol", "body": "LGTM overall", "created_at": "…", "replied": true }
//!   ]
//! }
//! ```
//!
//! A review thread is GitHub's top-level review comment followed by its replies
//! in order; only the first comment of a thread can take a reply (GitHub's rule).
//! `replied` says the bot already answered that thread (or issue comment), as
//! recorded in the store; the MCP server hides such entries unless asked.
//!
//! Unknown fields are rejected so that a snapshot written by a newer pipeline
//! fails loudly instead of being half understood; bump [`SNAPSHOT_VERSION`]
//! for any change to the shape.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

/// The snapshot format version this code writes and reads.
pub const SNAPSHOT_VERSION: u32 = 1;

/// Everything the agent may read about one pull request, fetched by the pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PullRequestSnapshot {
    /// Format version; always [`SNAPSHOT_VERSION`] for snapshots this code accepts.
    pub version: u32,
    /// The repository as `owner/name`.
    pub repository: String,
    /// The pull request's metadata.
    pub pull_request: PullRequestInfo,
    /// The pull request's unified diff (base…head), as `git diff` or GitHub's
    /// `.diff` media type prints it. Inline comments are checked against it.
    pub diff: String,
    /// Review threads (inline comment conversations), oldest first.
    #[serde(default)]
    pub review_threads: Vec<ReviewThread>,
    /// Issue comments on the pull request's conversation tab, oldest first.
    #[serde(default)]
    pub issue_comments: Vec<IssueComment>,
}

/// A pull request's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PullRequestInfo {
    /// The pull request number.
    pub number: u64,
    /// The title.
    pub title: String,
    /// The description (may be empty).
    #[serde(default)]
    pub body: String,
    /// The author's login.
    pub author: String,
    /// The branch the pull request merges into.
    pub base_ref: String,
    /// The pull request's branch.
    pub head_ref: String,
    /// The base commit the diff was computed from.
    pub base_sha: String,
    /// The head commit the diff was computed to; reviews are posted against it.
    pub head_sha: String,
}

/// One review thread: a top-level inline comment and its replies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewThread {
    /// The file the thread is on, relative to the repository root.
    pub path: String,
    /// The line the thread is anchored on, or `None` when GitHub no longer
    /// places it on the current diff (an outdated thread).
    #[serde(default)]
    pub line: Option<u64>,
    /// The first line of a multi-line thread.
    #[serde(default)]
    pub start_line: Option<u64>,
    /// Which side of the diff `line` refers to.
    #[serde(default)]
    pub side: Option<ThreadSide>,
    /// The diff hunk GitHub shows above the thread (ends at the commented line).
    #[serde(default)]
    pub diff_hunk: String,
    /// Whether the thread sits on code that has since changed.
    #[serde(default)]
    pub outdated: bool,
    /// Whether the bot already replied to this thread.
    #[serde(default)]
    pub replied: bool,
    /// The thread's comments, top-level comment first. Never empty.
    pub comments: Vec<ThreadComment>,
}

/// The side of a diff a review thread is on (GitHub's `LEFT` / `RIGHT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ThreadSide {
    /// The old file (a deleted or context line, old numbering).
    Left,
    /// The new file (an added or context line, new numbering).
    Right,
}

/// One comment of a review thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadComment {
    /// GitHub's review comment id.
    pub id: u64,
    /// The author's login.
    pub user: String,
    /// The comment's markdown body.
    pub body: String,
    /// When it was written (ISO 8601, as GitHub reports it).
    #[serde(default)]
    pub created_at: String,
}

/// One issue comment on the pull request's conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssueComment {
    /// GitHub's issue comment id.
    pub id: u64,
    /// The author's login.
    pub user: String,
    /// The comment's markdown body.
    pub body: String,
    /// When it was written (ISO 8601, as GitHub reports it).
    #[serde(default)]
    pub created_at: String,
    /// Whether the bot already replied to this comment.
    #[serde(default)]
    pub replied: bool,
}

/// Why a snapshot was refused.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The text is not a snapshot (bad JSON, missing or unknown fields).
    #[error(
        "the pull-request snapshot is not valid JSON of the expected shape: {0}; \
         it is written by the review pipeline — rerun the job, or check that the \
         pipeline and `review-bot mcp` are the same version"
    )]
    Malformed(#[from] serde_json::Error),
    /// The snapshot was written in a format version this code does not read.
    #[error(
        "the pull-request snapshot has format version {found}, this review-bot reads \
         version {SNAPSHOT_VERSION}; run the same review-bot version for the pipeline and the MCP server"
    )]
    UnsupportedVersion {
        /// The version found in the file.
        found: u32,
    },
    /// The snapshot is well-formed JSON but breaks a rule of the format.
    #[error("the pull-request snapshot is inconsistent: {0}")]
    Inconsistent(String),
}

/// A comment the agent can address by id, found by [`PullRequestSnapshot::find_comment`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommentLookup<'a> {
    /// The first comment of a review thread: it can take a reply.
    ThreadRoot(&'a ReviewThread),
    /// A reply inside a review thread: GitHub only accepts replies to the thread's first comment.
    ThreadReply {
        /// The thread the reply belongs to.
        thread: &'a ReviewThread,
        /// The reply itself.
        comment: &'a ThreadComment,
    },
    /// An issue comment on the conversation tab.
    Issue(&'a IssueComment),
}

impl PullRequestSnapshot {
    /// Parses and checks a snapshot file's text.
    pub fn from_json(text: &str) -> Result<Self, SnapshotError> {
        // Read the version first, so that a newer format is reported as such
        // rather than as "unknown field".
        #[derive(Deserialize)]
        struct VersionOnly {
            version: u32,
        }
        let VersionOnly { version } = serde_json::from_str(text)?;
        if version != SNAPSHOT_VERSION {
            return Err(SnapshotError::UnsupportedVersion { found: version });
        }
        let snapshot: Self = serde_json::from_str(text)?;
        snapshot.check()?;
        Ok(snapshot)
    }

    /// Serialises the snapshot as the pipeline writes it.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a snapshot always serialises")
    }

    /// Checks the rules the types cannot express: non-empty threads and
    /// comment ids unique across the pull request.
    pub fn check(&self) -> Result<(), SnapshotError> {
        if !is_owner_slash_name(&self.repository) {
            return Err(SnapshotError::Inconsistent(format!(
                "repository {:?} is not of the form owner/name",
                self.repository
            )));
        }
        let mut review_ids = HashSet::new();
        for thread in &self.review_threads {
            if thread.comments.is_empty() {
                return Err(SnapshotError::Inconsistent(format!(
                    "a review thread on {} has no comments",
                    thread.path
                )));
            }
            for comment in &thread.comments {
                if !review_ids.insert(comment.id) {
                    return Err(SnapshotError::Inconsistent(format!(
                        "review comment id {} appears twice",
                        comment.id
                    )));
                }
            }
        }
        let mut issue_ids = HashSet::new();
        for comment in &self.issue_comments {
            if !issue_ids.insert(comment.id) {
                return Err(SnapshotError::Inconsistent(format!(
                    "issue comment id {} appears twice",
                    comment.id
                )));
            }
        }
        Ok(())
    }

    /// Finds a review or issue comment by GitHub id.
    ///
    /// GitHub numbers review comments and issue comments from separate
    /// sequences, so an id can in principle name one of each; the review
    /// comment wins, because only review comments take threaded replies.
    pub fn find_comment(&self, id: u64) -> Option<CommentLookup<'_>> {
        for thread in &self.review_threads {
            if let Some(position) = thread.comments.iter().position(|c| c.id == id) {
                return Some(if position == 0 {
                    CommentLookup::ThreadRoot(thread)
                } else {
                    CommentLookup::ThreadReply {
                        thread,
                        comment: &thread.comments[position],
                    }
                });
            }
        }
        self.issue_comments
            .iter()
            .find(|c| c.id == id)
            .map(CommentLookup::Issue)
    }
}

impl ReviewThread {
    /// The thread's first comment, the one replies are addressed to.
    pub fn root(&self) -> &ThreadComment {
        &self.comments[0]
    }
}

fn is_owner_slash_name(repository: &str) -> bool {
    let mut parts = repository.split('/');
    matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some(owner), Some(name), None) if !owner.is_empty() && !name.is_empty()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> PullRequestSnapshot {
        PullRequestSnapshot {
            version: SNAPSHOT_VERSION,
            repository: "octo/widgets".into(),
            pull_request: PullRequestInfo {
                number: 42,
                title: "Add caching".into(),
                body: String::new(),
                author: "alice".into(),
                base_ref: "main".into(),
                head_ref: "feature".into(),
                base_sha: "a".repeat(40),
                head_sha: "b".repeat(40),
            },
            diff: String::new(),
            review_threads: vec![ReviewThread {
                path: "src/lib.rs".into(),
                line: Some(3),
                start_line: None,
                side: Some(ThreadSide::Right),
                diff_hunk: "@@ -1 +1,3 @@".into(),
                outdated: false,
                replied: false,
                comments: vec![
                    ThreadComment {
                        id: 1,
                        user: "bob".into(),
                        body: "why?".into(),
                        created_at: String::new(),
                    },
                    ThreadComment {
                        id: 2,
                        user: "alice".into(),
                        body: "because".into(),
                        created_at: String::new(),
                    },
                ],
            }],
            issue_comments: vec![IssueComment {
                id: 1,
                user: "carol".into(),
                body: "hi".into(),
                created_at: String::new(),
                replied: true,
            }],
        }
    }

    #[test]
    fn round_trips_through_json() {
        let snapshot = sample();
        let parsed = PullRequestSnapshot::from_json(&snapshot.to_json()).unwrap();
        assert_eq!(parsed, snapshot);
    }

    #[test]
    fn a_newer_version_is_reported_as_such() {
        let text = snapshot_text_with(|value| value["version"] = 2.into());
        let error = PullRequestSnapshot::from_json(&text).unwrap_err();
        assert!(
            matches!(error, SnapshotError::UnsupportedVersion { found: 2 }),
            "{error}"
        );
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let text = snapshot_text_with(|value| value["token"] = "ghp_x".into());
        let error = PullRequestSnapshot::from_json(&text).unwrap_err();
        assert!(
            error.to_string().contains("unknown field `token`"),
            "{error}"
        );
    }

    #[test]
    fn empty_threads_and_duplicate_ids_are_inconsistent() {
        let text = snapshot_text_with(|value| {
            value["review_threads"][0]["comments"] = serde_json::json!([]);
        });
        assert!(matches!(
            PullRequestSnapshot::from_json(&text),
            Err(SnapshotError::Inconsistent(_))
        ));
        let text =
            snapshot_text_with(|value| value["review_threads"][0]["comments"][1]["id"] = 1.into());
        assert!(matches!(
            PullRequestSnapshot::from_json(&text),
            Err(SnapshotError::Inconsistent(_))
        ));
        let text = snapshot_text_with(|value| value["repository"] = "widgets".into());
        assert!(matches!(
            PullRequestSnapshot::from_json(&text),
            Err(SnapshotError::Inconsistent(_))
        ));
    }

    #[test]
    fn find_comment_tells_roots_replies_and_issue_comments_apart() {
        let snapshot = sample();
        assert!(matches!(
            snapshot.find_comment(1),
            Some(CommentLookup::ThreadRoot(thread)) if thread.root().id == 1
        ));
        assert!(matches!(
            snapshot.find_comment(2),
            Some(CommentLookup::ThreadReply { comment, .. }) if comment.id == 2
        ));
        let mut only_issue = snapshot.clone();
        only_issue.review_threads.clear();
        assert!(matches!(
            only_issue.find_comment(1),
            Some(CommentLookup::Issue(comment)) if comment.user == "carol"
        ));
        assert_eq!(snapshot.find_comment(99), None);
    }

    fn snapshot_text_with(edit: impl FnOnce(&mut serde_json::Value)) -> String {
        let mut value = serde_json::to_value(sample()).unwrap();
        edit(&mut value);
        value.to_string()
    }
}
