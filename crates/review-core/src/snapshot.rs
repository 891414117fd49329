//! The pull-request snapshot the pipeline hands to the agent's MCP server.
//!
//! In pipeline mode the agent never holds a GitHub credential (DESIGN.md,
//! invariant 5). Instead the pipeline fetches everything the agent may read —
//! the pull request's metadata, its unified diff, its review threads and issue
//! comments, and which of them the bot already replied to — and writes it to a
//! JSON file. `review-bot mcp` serves that file read-only.
//!
//! # Format (version 2)
//!
//! ```json
//! {
//!   "version": 2,
//!   "repository": "octo/widgets",
//!   "bot_login": "review-bot[bot]",
//!   "pull_request": {
//!     "number": 42, "title": "Add caching", "body": "…", "author": "alice",
//!     "base_ref": "main", "head_ref": "feature", "base_sha": "…", "head_sha": "…"
//!   },
//!   "diff": "diff --git a/src/lib.rs b/src/lib.rs\n…",
//!   "files": [],
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
//! `diff` is the whole unified diff. When GitHub refuses it as too large
//! (past 300 files or 20,000 lines), `diff` is empty and `files` holds the
//! per-file patches instead (`path`, `previous_path`, `change`, `patch`;
//! `patch` is absent for binary and huge files), with `files_truncated` set
//! when GitHub's 3,000-file cap cut the list.
//!
//! A review thread is GitHub's top-level review comment followed by its replies
//! in order; only the first comment of a thread can take a reply (GitHub's rule).
//! `replied` says the bot already answered that thread (or issue comment), as
//! recorded in the store; the MCP server hides such entries unless asked.
//!
//! `bot_login` is the account the bot posts as: the PAT's user, or a GitHub
//! App's bot account `{app-slug}[bot]`. Only comments written by that login
//! carry the bot's `thread::` ids ([`PullRequestSnapshot::own_thread_id`]):
//! anybody can paste a bot's footer into their own comment, and a reply aimed
//! at the bot's thread must never be recorded against theirs. Without
//! `bot_login` no comment's `thread::` id is trusted (numeric ids still work).
//! The cycle count follows the same rule ([`review_cycles`]).
//!
//! Unknown fields are rejected so that a snapshot written by a newer pipeline
//! fails loudly instead of being half understood; bump [`SNAPSHOT_VERSION`]
//! for any change to the shape.

use std::collections::{BTreeSet, HashSet};

use serde::{Deserialize, Serialize};

use crate::anchor::Side;
use crate::diff::{ChangeKind, ChangedFile, DiffError, PullRequestDiff};
use crate::footer::{self, ReviewId, ThreadId};

/// The snapshot format version this code writes and reads. Version 2 added
/// `bot_login`.
pub const SNAPSHOT_VERSION: u32 = 2;

/// Everything the agent may read about one pull request, fetched by the pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PullRequestSnapshot {
    /// Format version; always [`SNAPSHOT_VERSION`] for snapshots this code accepts.
    pub version: u32,
    /// The repository as `owner/name`.
    pub repository: String,
    /// The login the bot posts as (`octo-reviewer`, or `review-bot[bot]` for a
    /// GitHub App). Only its comments carry `thread::` ids; `None` trusts none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot_login: Option<String>,
    /// The pull request's metadata.
    pub pull_request: PullRequestInfo,
    /// The pull request's unified diff (base…head), as `git diff` or GitHub's
    /// `.diff` media type prints it. Inline comments are checked against it.
    /// Empty when `files` carries the per-file patches instead.
    #[serde(default)]
    pub diff: String,
    /// The per-file patches, when GitHub would not give the whole diff.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<SnapshotFile>,
    /// Whether `files` stopped at GitHub's cap, so some changed files are missing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub files_truncated: bool,
    /// Review threads (inline comment conversations), oldest first.
    #[serde(default)]
    pub review_threads: Vec<ReviewThread>,
    /// Issue comments on the pull request's conversation tab, oldest first.
    #[serde(default)]
    pub issue_comments: Vec<IssueComment>,
}

/// One changed file with its patch, when the snapshot carries per-file patches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotFile {
    /// The file's path (the old path of a deleted file).
    pub path: String,
    /// The path before a rename or copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_path: Option<String>,
    /// What happened to the file.
    pub change: ChangeKind,
    /// The hunks without file headers; absent for binary and very large files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
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
    pub line: Option<u32>,
    /// The first line of a multi-line thread.
    #[serde(default)]
    pub start_line: Option<u32>,
    /// Which side of the diff `line` refers to.
    #[serde(default)]
    pub side: Option<Side>,
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

    /// The diff model of the pull request: from `files` when present, else from `diff`.
    pub fn parsed_diff(&self) -> Result<PullRequestDiff, DiffError> {
        if self.files.is_empty() {
            PullRequestDiff::parse(&self.diff)
        } else {
            PullRequestDiff::from_changed_files(self.files.iter().map(|file| ChangedFile {
                path: &file.path,
                previous_path: file.previous_path.as_deref(),
                change: file.change,
                patch: file.patch.as_deref(),
            }))
        }
    }

    /// Serialises the snapshot as the pipeline writes it.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a snapshot always serialises")
    }

    /// Checks the rules the types cannot express: non-empty threads and
    /// comment ids unique across the pull request.
    pub fn check(&self) -> Result<(), SnapshotError> {
        if !self.diff.trim().is_empty() && !self.files.is_empty() {
            return Err(SnapshotError::Inconsistent(
                "both `diff` and `files` are set; give the unified diff or the per-file patches, not both"
                    .to_owned(),
            ));
        }
        if let Some(login) = &self.bot_login
            && !is_login(login)
        {
            return Err(SnapshotError::Inconsistent(format!(
                "bot_login {login:?} is not a GitHub login (letters, digits and hyphens, \
                 `[bot]` at the end for an App's bot account)"
            )));
        }
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

impl PullRequestSnapshot {
    /// Whether `user` is the bot's own login (GitHub logins compare without case).
    pub fn written_by_bot(&self, user: &str) -> bool {
        self.bot_login
            .as_deref()
            .is_some_and(|bot| is_bot_login(bot, user))
    }

    /// The `thread::` id in the own footer of a comment `user` wrote, if `user`
    /// is the bot. A thread id in anybody else's comment is a copy (a quote, or
    /// a forgery) and is ignored.
    pub fn own_thread_id(&self, user: &str, body: &str) -> Option<ThreadId> {
        if self.written_by_bot(user) {
            footer::own_footer(body).thread
        } else {
            None
        }
    }
}

/// Whether `user` is `bot_login` (GitHub logins compare without case).
pub fn is_bot_login(bot_login: &str, user: &str) -> bool {
    !bot_login.is_empty() && user.eq_ignore_ascii_case(bot_login)
}

/// The review cycles the bot has run on a pull request: the distinct
/// `review::` ids in comments and reviews written by `bot_login`, given as
/// `(author login, body)`. Ids in anybody else's text are copies and do not
/// count, so nobody can push a pull request to the cycle limit (or hide a
/// cycle) by pasting footers.
pub fn review_cycles<'a, I>(bot_login: &str, comments: I) -> BTreeSet<ReviewId>
where
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    footer::distinct_review_ids(
        comments
            .into_iter()
            .filter(|(author, _)| is_bot_login(bot_login, author))
            .map(|(_, body)| body),
    )
}

/// A GitHub login: letters, digits and single hyphens, at most 39
/// characters; an App's bot account adds `[bot]`.
fn is_login(login: &str) -> bool {
    let name = login.strip_suffix("[bot]").unwrap_or(login);
    !name.is_empty()
        && name.len() <= 39
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
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
            bot_login: Some("review-bot[bot]".into()),
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
            files: Vec::new(),
            files_truncated: false,
            review_threads: vec![ReviewThread {
                path: "src/lib.rs".into(),
                line: Some(3),
                start_line: None,
                side: Some(Side::Right),
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
        let text = snapshot_text_with(|value| value["version"] = 3.into());
        let error = PullRequestSnapshot::from_json(&text).unwrap_err();
        assert!(
            matches!(error, SnapshotError::UnsupportedVersion { found: 3 }),
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
    fn the_diff_comes_from_the_unified_text_or_the_per_file_patches() {
        let mut snapshot = sample();
        snapshot.diff =
            "diff --git a/a.rs b/a.rs\n--- a/a.rs\n+++ b/a.rs\n@@ -1 +1,2 @@\n a\n+b\n".into();
        assert_eq!(snapshot.parsed_diff().unwrap().files()[0].path, "a.rs");
        snapshot.files = vec![SnapshotFile {
            path: "b.rs".into(),
            previous_path: None,
            change: ChangeKind::Added,
            patch: Some("@@ -0,0 +1 @@\n+b".into()),
        }];
        assert!(matches!(
            snapshot.check(),
            Err(SnapshotError::Inconsistent(_))
        ));
        snapshot.diff.clear();
        let text = snapshot.to_json();
        let parsed = PullRequestSnapshot::from_json(&text).unwrap();
        assert_eq!(parsed.parsed_diff().unwrap().files()[0].path, "b.rs");
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

    const THREAD: &str = "0b6c3c55-8f1e-4f0e-9a8e-3c1f2a9d7e11";
    const REVIEW: &str = "7d1e5b9a-2c4f-4e8a-b1d3-9f6a0c2e4b77";

    #[test]
    fn only_the_bots_own_comments_carry_thread_ids() {
        let snapshot = sample();
        let body = format!("Unused.\n\n<sub>thread::{THREAD}</sub>");
        let id = snapshot.own_thread_id("review-bot[bot]", &body).unwrap();
        assert_eq!(id.to_string(), THREAD);
        // Logins compare without case, as GitHub's do.
        assert!(snapshot.own_thread_id("Review-Bot[bot]", &body).is_some());
        // The same footer pasted by somebody else, or a look-alike login.
        for user in ["mallory", "review-bot", "review-bot[bot]x", ""] {
            assert_eq!(snapshot.own_thread_id(user, &body), None, "{user}");
        }
        // Without a bot login, nobody's footer is trusted.
        let unknown = PullRequestSnapshot {
            bot_login: None,
            ..sample()
        };
        assert_eq!(unknown.own_thread_id("review-bot[bot]", &body), None);
    }

    #[test]
    fn review_cycles_count_only_the_bots_footers() {
        let bot = format!("Review.\n\n<sub>review::{REVIEW}</sub>");
        let forged = "Copied: review::11111111-2222-4333-8444-555555555555";
        let cycles = review_cycles(
            "review-bot[bot]",
            [
                ("review-bot[bot]", bot.as_str()),
                ("mallory", forged),
                ("REVIEW-BOT[BOT]", bot.as_str()),
            ],
        );
        assert_eq!(
            cycles.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [REVIEW]
        );
        assert!(review_cycles("", [("", bot.as_str())]).is_empty());
    }

    #[test]
    fn a_bot_login_must_look_like_one() {
        for login in ["octo-reviewer", "review-bot[bot]", "a"] {
            let text = snapshot_text_with(|value| value["bot_login"] = login.into());
            assert!(PullRequestSnapshot::from_json(&text).is_ok(), "{login}");
        }
        for login in ["", "[bot]", "two words", "x".repeat(40).as_str()] {
            let text = snapshot_text_with(|value| value["bot_login"] = login.into());
            assert!(
                matches!(
                    PullRequestSnapshot::from_json(&text),
                    Err(SnapshotError::Inconsistent(_))
                ),
                "{login:?}"
            );
        }
    }

    fn snapshot_text_with(edit: impl FnOnce(&mut serde_json::Value)) -> String {
        let mut value = serde_json::to_value(sample()).unwrap();
        edit(&mut value);
        value.to_string()
    }
}
