//! The review's plan: everything the bot will write to GitHub for one review,
//! decided before the first write and saved in the store (where any replica,
//! or a restart with an empty work directory, finds it) and, for the
//! operator to read, in the run directory.
//!
//! Writing the plan first is what makes a review resumable (DESIGN.md
//! invariant 4): a process killed after posting the review but before the
//! replies or the labels is run again, finds its unfinished run and this plan
//! in the store (or, from an older version, the file in its run directory),
//! and executes the same plan — the review
//! is found by its `review::` id, each reply by its `thread::` id, the labels
//! are set to what they should be. Nothing is posted twice and nothing left
//! undone. The file is written atomically (a temporary file renamed over it)
//! with mode 0600; a plan that does not parse is ignored (the review is made
//! again, under the same review id, so it still cannot be posted twice).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use review_core::payload::ReviewPayload;
use review_store::{JobKind, JobPlanKey, Store, StoreError};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::compose::{PlannedReply, PostedFinding, ReviewOutcome, ThreadToResolve};

/// The plan file's name in the run directory.
pub const PLAN_FILE_NAME: &str = "plan.json";

/// The plan format's version.
pub const PLAN_VERSION: u32 = 1;

/// What the bot will write for one review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewPlan {
    /// Always [`PLAN_VERSION`].
    pub version: u32,
    /// The review's id (`review::` footers).
    pub review_id: Uuid,
    /// `owner/name`.
    pub repository: String,
    /// The pull request.
    pub pull_request: u64,
    /// The head commit reviewed.
    pub head_sha: String,
    /// How the review ends.
    pub outcome: ReviewOutcome,
    /// What to post.
    pub action: PlannedAction,
}

/// What to post.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum PlannedAction {
    /// One review, then replies.
    Review {
        /// The create-review request.
        payload: ReviewPayload,
        /// Replies to earlier threads.
        replies: Vec<PlannedReply>,
        /// The findings the review posts (fingerprinted once posted).
        posted: Vec<PostedFinding>,
        /// Findings left out because an earlier review posted them.
        repeated: usize,
        /// The bot's threads to resolve after posting (issue 28, item 1).
        #[serde(default)]
        resolve: Vec<ThreadToResolve>,
        /// Findings the verification pass (`review.verify`) withheld as
        /// unlikely: not posted, kept here with the verifier's verdict.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        withheld: Vec<super::verify::WithheldFinding>,
    },
    /// The build or tests failed: one conversation comment.
    BuildFailed {
        /// The comment, footer included.
        body: String,
        /// The `thread::` id in its footer.
        thread_id: Uuid,
    },
}

impl ReviewPlan {
    /// The plan's path in `run_directory`.
    pub fn path(run_directory: &Path) -> PathBuf {
        run_directory.join(PLAN_FILE_NAME)
    }

    /// Saves the plan atomically (0600).
    pub fn save(&self, run_directory: &Path) -> std::io::Result<()> {
        let path = Self::path(run_directory);
        let temporary = run_directory.join(format!(".{PLAN_FILE_NAME}.{}", Uuid::new_v4()));
        let mut file = review_sandbox::create_private_file(&temporary)?;
        let text = serde_json::to_string_pretty(self).expect("a plan serialises");
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temporary, &path).inspect_err(|_| {
            let _ = std::fs::remove_file(&temporary);
        })
    }

    /// The plan saved in `run_directory` for this review, if there is a
    /// readable one. Anything else (missing, not a regular file, unreadable,
    /// another review's) is `None`, with a warning for what is not simply missing.
    pub fn load(run_directory: &Path, review_id: Uuid) -> Option<Self> {
        let path = Self::path(run_directory);
        let metadata = std::fs::symlink_metadata(&path).ok()?;
        if !metadata.is_file() || metadata.len() > 64 * 1024 * 1024 {
            tracing::warn!(path = %path.display(), "ignoring the saved plan: not a regular file of at most 64 MiB");
            return None;
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "ignoring the saved plan: unreadable");
                return None;
            }
        };
        match serde_json::from_str::<Self>(&text) {
            Ok(plan) if plan.version == PLAN_VERSION && plan.review_id == review_id => Some(plan),
            Ok(_) => {
                tracing::warn!(path = %path.display(), "ignoring the saved plan: another version or review");
                None
            }
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "ignoring the saved plan: it does not parse");
                None
            }
        }
    }

    /// The store's key of the plan of `review_id`.
    fn store_key<'a>(repository: &'a str, pull_request: u64, review_id: &'a str) -> JobPlanKey<'a> {
        JobPlanKey {
            repository,
            pull_request,
            job: JobKind::Review,
            plan_id: review_id,
        }
    }

    /// Saves the plan in the store under its review id, where a step on any
    /// machine finds it (issue 25, item 6): a review killed after deciding
    /// is finished from here, with no second agent run, even when its run
    /// directory is gone (a fresh work directory, another replica).
    pub async fn save_in_store(&self, store: &Store) -> Result<(), StoreError> {
        let review_id = self.review_id.to_string();
        let text = serde_json::to_string(self).expect("a plan serialises");
        store
            .save_job_plan(
                &Self::store_key(&self.repository, self.pull_request, &review_id),
                &text,
            )
            .await
    }

    /// The plan the store holds for this review, if there is a readable one
    /// (one that does not parse, or is another version's, is `None` with a
    /// warning).
    pub async fn load_from_store(
        store: &Store,
        repository: &str,
        pull_request: u64,
        review_id: Uuid,
    ) -> Result<Option<Self>, StoreError> {
        let id = review_id.to_string();
        let Some(text) = store
            .job_plan(&Self::store_key(repository, pull_request, &id))
            .await?
        else {
            return Ok(None);
        };
        Ok(match serde_json::from_str::<Self>(&text) {
            Ok(plan) if plan.version == PLAN_VERSION && plan.review_id == review_id => Some(plan),
            Ok(_) => {
                tracing::warn!("ignoring the stored plan: another version or review");
                None
            }
            Err(error) => {
                tracing::warn!(%error, "ignoring the stored plan: it does not parse");
                None
            }
        })
    }

    /// Removes the plan from the store once everything in it is on GitHub; a
    /// failure is logged (a plan left behind belongs to a finished run and
    /// is never read again).
    pub async fn remove_from_store(&self, store: &Store) {
        let review_id = self.review_id.to_string();
        if let Err(error) = store
            .remove_job_plan(&Self::store_key(
                &self.repository,
                self.pull_request,
                &review_id,
            ))
            .await
        {
            tracing::warn!(%error, "could not remove the finished review's plan from the store");
        }
    }

    /// The plan as a reader checks it before anything is posted
    /// (`review --dry-run`): the review's markdown, then each inline comment
    /// with its path and line, then the replies.
    pub fn render(&self) -> String {
        let mut text = String::new();
        let _ = writeln!(
            text,
            "# Review of {}#{} at {}\n",
            self.repository, self.pull_request, self.head_sha
        );
        let _ = writeln!(
            text,
            "Outcome: {} (label {})\n",
            self.outcome.as_str(),
            self.outcome
                .label_outcome()
                .next_label()
                .map_or("unchanged", |label| label.name())
        );
        match &self.action {
            PlannedAction::BuildFailed { body, .. } => {
                let _ = writeln!(text, "## Comment\n\n{body}");
            }
            PlannedAction::Review {
                payload,
                replies,
                withheld,
                ..
            } => {
                let _ = writeln!(text, "## Review body\n\n{}\n", payload.body);
                let _ = writeln!(text, "## Inline comments ({})\n", payload.comments.len());
                for comment in &payload.comments {
                    let lines = match comment.start_line {
                        Some(start) => format!("lines {start}-{}", comment.line),
                        None => format!("line {}", comment.line),
                    };
                    let _ = writeln!(
                        text,
                        "### {} {lines} ({})\n\n{}\n",
                        comment.path, comment.side, comment.body
                    );
                }
                if !withheld.is_empty() {
                    let _ = writeln!(
                        text,
                        "## Withheld by the verification pass ({})\n",
                        withheld.len()
                    );
                    for finding in withheld {
                        let _ = writeln!(
                            text,
                            "- {} line {}: {} ({} {}: {})",
                            finding.path,
                            finding.line,
                            review_core::payload::single_line(&finding.title),
                            finding.verdict,
                            finding.confidence,
                            review_core::payload::single_line(&finding.reason)
                        );
                    }
                    text.push('\n');
                }
                if !replies.is_empty() {
                    let _ = writeln!(text, "## Replies ({})\n", replies.len());
                    for reply in replies {
                        let _ = writeln!(
                            text,
                            "### To comment {}{}\n\n{}\n",
                            reply.comment_id,
                            if reply.resolved { " (resolved)" } else { "" },
                            reply.body
                        );
                    }
                }
            }
        }
        text
    }
}
