//! What is left to do after a push, saved before the push: the replies and
//! the label. A step killed between its push and its last reply leaves this
//! file under `runs/OWNER/REPO/pushed/{pushed sha}.json`; the next step of
//! the pull request sees its head is that commit, finishes the plan (replies
//! found by their `thread::` ids are not posted again) and removes the file.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use review_core::agent_requests::ReplyTarget;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The plan format's version.
pub const PLAN_VERSION: u32 = 1;

/// One reply to post.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedReply {
    /// The comment replied to.
    pub comment_id: u64,
    /// Its kind.
    pub target: ReplyTarget,
    /// The body, footer included.
    pub body: String,
    /// The `thread::` id in the footer.
    pub thread_id: Uuid,
}

/// What follows a push.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushedPlan {
    /// Always [`PLAN_VERSION`].
    pub version: u32,
    /// `owner/name`.
    pub repository: String,
    /// The pull request.
    pub pull_request: u64,
    /// The commit pushed.
    pub pushed_sha: String,
    /// The replies.
    pub replies: Vec<PlannedReply>,
}

fn path(directory: &Path, sha: &str) -> Option<PathBuf> {
    (sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| directory.join(format!("{sha}.json")))
}

impl PushedPlan {
    /// Saves the plan atomically (0600).
    pub fn save(&self, directory: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(directory)?;
        let target = path(directory, &self.pushed_sha)
            .ok_or_else(|| std::io::Error::other("the pushed commit is not a full SHA"))?;
        let temporary = directory.join(format!(".plan-{}", Uuid::new_v4()));
        let mut file = review_sandbox::create_private_file(&temporary)?;
        file.write_all(
            serde_json::to_string_pretty(self)
                .expect("a plan serialises")
                .as_bytes(),
        )?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temporary, &target).inspect_err(|_| {
            let _ = std::fs::remove_file(&temporary);
        })
    }

    /// The plan of the push that made `head_sha`, when there is a readable one.
    pub fn load(directory: &Path, head_sha: &str) -> Option<Self> {
        let path = path(directory, head_sha)?;
        let metadata = std::fs::symlink_metadata(&path).ok()?;
        if !metadata.is_file() || metadata.len() > 64 * 1024 * 1024 {
            return None;
        }
        let text = std::fs::read_to_string(&path).ok()?;
        serde_json::from_str::<Self>(&text)
            .ok()
            .filter(|plan| plan.version == PLAN_VERSION && plan.pushed_sha == head_sha)
    }

    /// Removes the plan of `sha` (done, or its push refused).
    pub fn remove(directory: &Path, sha: &str) {
        if let Some(path) = path(directory, sha)
            && let Err(error) = std::fs::remove_file(&path)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(%error, path = %path.display(), "could not remove a finished push plan");
        }
    }
}
