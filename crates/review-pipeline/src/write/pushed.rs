//! What is left to do after a push, saved before the push: the replies and
//! the label. The plan lives in the store (`review_store`'s job plans), not
//! on one machine's disk: a step killed between its push and its last reply
//! leaves it under the pushed commit, and the next step of the pull request —
//! on this machine with an empty work directory, or on another replica —
//! sees the head is that commit, finishes the plan (replies found by their
//! `thread::` ids are not posted again) and removes it. No agent runs and
//! nothing is pushed again.

use review_core::agent_requests::ReplyTarget;
use review_store::{JobKind, JobPlanKey, Store, StoreError};
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

impl PushedPlan {
    /// The store's key of this plan.
    fn key(&self) -> JobPlanKey<'_> {
        key(&self.repository, self.pull_request, &self.pushed_sha)
    }

    /// Saves the plan in the store, under the commit about to be pushed.
    pub async fn save(&self, store: &Store) -> Result<(), StoreError> {
        let text = serde_json::to_string(self).expect("a plan serialises");
        store.save_job_plan(&self.key(), &text).await
    }

    /// The plan of the push that made `head_sha`, when the store has one.
    /// A plan this binary cannot read (another version's, damaged) is
    /// reported in the log and treated as none.
    pub async fn load(
        store: &Store,
        repository: &str,
        pull_request: u64,
        head_sha: &str,
    ) -> Result<Option<Self>, StoreError> {
        let key = key(repository, pull_request, head_sha);
        let Some(text) = store.job_plan(&key).await? else {
            return Ok(None);
        };
        match serde_json::from_str::<Self>(&text) {
            Ok(plan)
                if plan.version == PLAN_VERSION
                    && plan.pushed_sha == head_sha
                    && plan.pull_request == pull_request =>
            {
                Ok(Some(plan))
            }
            Ok(plan) => {
                tracing::warn!(
                    version = plan.version,
                    pushed_sha = %plan.pushed_sha,
                    "ignoring a push plan of another version or commit"
                );
                Ok(None)
            }
            Err(error) => {
                tracing::warn!(%error, "ignoring a push plan that does not parse");
                Ok(None)
            }
        }
    }

    /// Removes the plan (done, or its push refused); a failure is logged:
    /// a plan left behind only waits for a head that has moved on.
    pub async fn remove(&self, store: &Store) {
        if let Err(error) = store.remove_job_plan(&self.key()).await {
            tracing::warn!(%error, pushed_sha = %self.pushed_sha, "could not remove a finished push plan");
        }
    }

    /// Removes the pull request's plans for commits other than `head_sha`
    /// (pushes that never happened); a failure is logged.
    pub async fn remove_stale(store: &Store, repository: &str, pull_request: u64, head_sha: &str) {
        let key = key(repository, pull_request, head_sha);
        match store.remove_other_job_plans(&key).await {
            Ok(0) => {}
            Ok(removed) => {
                tracing::info!(removed, "removed push plans of pushes that never happened");
            }
            Err(error) => tracing::warn!(%error, "could not remove stale push plans"),
        }
    }
}

/// The store's key of the plan of `pushed_sha`.
fn key<'a>(repository: &'a str, pull_request: u64, pushed_sha: &'a str) -> JobPlanKey<'a> {
    JobPlanKey {
        repository,
        pull_request,
        job: JobKind::Write,
        plan_id: pushed_sha,
    }
}
