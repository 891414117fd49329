//! Incremental re-review (issue 28, item 2): a review of a head that follows
//! an earlier reviewed head reviews the changes since then, with the whole
//! pull request as context.
//!
//! - **The earlier head** is the commit of the bot's latest review on the pull
//!   request ([`latest_bot_review`]: GitHub's list of reviews, written by the
//!   bot's login, with a `review::` id in the review's own footer). GitHub is
//!   the record here, not the store: a review posted by another replica, or
//!   before the store was replaced, still counts. A latest review of the head
//!   itself (`bot-review-needed` put back by a person) gives a full review.
//! - **The range** comes from the local checkout, not the compare API
//!   ([`decide`]): the mirror already holds the head with its whole history
//!   (fetched unshallow for the checkout), so `git merge-base --is-ancestor`,
//!   `git rev-list --count` and `git diff --name-only` answer without a single
//!   request against the rate limit, with no 300-file or 250-commit cap, and
//!   the agent reads the same range with `git diff EARLIER..HEAD` in its
//!   worktree (the mirror is shown to it read-only). An earlier head absent
//!   from the mirror after that fetch is not in the head's history.
//! - **A force-push or rebase** (the earlier head is no longer an ancestor of
//!   the head) gives a full review, and the body says so.
//! - **The earlier findings** named to the agent ([`earlier_findings`]) are
//!   the threads the bot started with a finding (a `thread::` footer in its
//!   own comment), newest first.
//!
//! What the agent may comment on does not change: inline comments still
//! anchor on the pull request's diff (GitHub accepts nothing else), a finding
//! on a line the range did not touch is posted when it is new, and one that
//! repeats an earlier finding is dropped by its fingerprint as in every
//! re-review. Anything that stops the range from being known (no bot login,
//! the reviews unreadable, git failing) falls back to a full review, logged.

use std::collections::BTreeSet;
use std::path::Path;

use review_agent::prompts::EarlierFinding;
use review_core::footer::{self, ReviewId};
use review_core::snapshot::PullRequestSnapshot;
use review_github::Review;

use crate::checkout::CheckoutError;
use crate::git::{Git, RunOptions};

use super::short_sha;

/// The bot's latest review on the pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlierReview {
    /// The commit it reviewed.
    pub commit: String,
    /// Its `review::` id.
    pub review_id: ReviewId,
}

/// What this review covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The whole pull request: a first review, a head reviewed before and
    /// asked for again, or the range could not be known.
    Full,
    /// The changes since the bot's last reviewed head.
    Since(Range),
    /// The whole pull request again: the earlier reviewed head is no longer
    /// in the branch's history (force-pushed or rebased).
    Rewritten {
        /// The earlier reviewed head.
        earlier: String,
    },
}

/// The changes since the last reviewed head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    /// The earlier reviewed head (a full SHA).
    pub earlier: String,
    /// The head under review (a full SHA).
    pub head: String,
    /// Commits in `earlier..head`.
    pub commits: usize,
    /// Files of the pull request the range changed, sorted.
    pub files: Vec<String>,
    /// Files the range changed that the pull request does not (a merge of
    /// the base branch).
    pub other_files: usize,
}

/// Whether `sha` is a full hexadecimal commit id (what may go on a git
/// command line as a revision).
fn is_full_sha(sha: &str) -> bool {
    sha.len() == 40 && sha.bytes().all(|byte| byte.is_ascii_hexdigit())
}

/// The bot's latest submitted review on the pull request with a `review::`
/// id in its own footer (the bot's replies make reviews with no footer of
/// their own: they are not reviews of a head).
pub fn latest_bot_review(reviews: &[Review], bot: &str) -> Option<EarlierReview> {
    reviews
        .iter()
        .filter(|review| review.state != "PENDING")
        .filter(|review| {
            review
                .author_login
                .as_deref()
                .is_some_and(|login| review_core::snapshot::is_bot_login(bot, login))
        })
        .filter_map(|review| {
            Some(EarlierReview {
                commit: review.commit_id.clone().filter(|sha| is_full_sha(sha))?,
                review_id: footer::own_footer(&review.body).review?,
            })
        })
        .next_back()
}

/// The findings the bot raised in earlier reviews: the threads it started
/// with a finding (its own comment, a `thread::` footer), newest first, with
/// the line they point at now (`None` when outdated) and their title.
pub fn earlier_findings(snapshot: &PullRequestSnapshot) -> Vec<EarlierFinding> {
    let mut findings: Vec<(u64, EarlierFinding)> = snapshot
        .review_threads
        .iter()
        .filter_map(|thread| {
            let root = thread.comments.first()?;
            if !snapshot.written_by_bot(&root.user) {
                return None;
            }
            footer::own_footer(&root.body).thread?;
            Some((
                root.id,
                EarlierFinding {
                    path: thread.path.clone(),
                    line: thread.line.filter(|_| !thread.outdated),
                    title: super::compose::title_of(&root.body)
                        .unwrap_or_else(|| "Finding".to_owned()),
                },
            ))
        })
        .collect();
    findings.sort_by_key(|(id, _)| std::cmp::Reverse(*id));
    findings.into_iter().map(|(_, finding)| finding).collect()
}

/// Decides the scope of a review of `head` after the bot reviewed `earlier`,
/// from the mirror (which holds `head` and its whole history): the range when
/// `earlier` is an ancestor of `head`, [`Scope::Rewritten`] when it is not (or
/// is not in the mirror at all), [`Scope::Full`] when `earlier` is `head`.
/// `pull_request_files`: the paths of the pull request's diff.
pub async fn decide(
    git: &Git,
    mirror: &Path,
    earlier: &str,
    head: &str,
    pull_request_files: &BTreeSet<&str>,
) -> Result<Scope, CheckoutError> {
    if earlier == head || !is_full_sha(earlier) || !is_full_sha(head) {
        return Ok(Scope::Full);
    }
    let answers = RunOptions {
        accept_codes: &[1],
        ..RunOptions::default()
    };
    let rewritten = || Scope::Rewritten {
        earlier: earlier.to_owned(),
    };
    let known = git
        .run_with(
            mirror,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &format!("{earlier}^{{commit}}"),
            ],
            &answers,
        )
        .await?;
    if known.code != 0 {
        return Ok(rewritten());
    }
    let ancestor = git
        .run_with(
            mirror,
            &["merge-base", "--is-ancestor", earlier, head],
            &answers,
        )
        .await?;
    if ancestor.code != 0 {
        return Ok(rewritten());
    }
    let range = format!("{earlier}..{head}");
    let counted = git
        .run(mirror, &["rev-list", "--count", &range, "--"], None)
        .await?;
    let commits = counted.stdout.trim().parse().unwrap_or(0);
    let changed = git
        .run(
            mirror,
            &[
                "diff",
                "--name-only",
                "-z",
                "--no-renames",
                "--no-ext-diff",
                "--no-textconv",
                earlier,
                head,
                "--",
            ],
            None,
        )
        .await?;
    if changed.truncated {
        // Over a mebibyte of file names: too large a range to list; the
        // whole pull request is reviewed, as for a first review.
        tracing::warn!(%earlier, %head, "the range since the last review lists too many files; a full review");
        return Ok(Scope::Full);
    }
    let (files, other): (BTreeSet<&str>, BTreeSet<&str>) = changed
        .stdout
        .split('\0')
        .filter(|path| !path.is_empty())
        .partition(|path| pull_request_files.contains(path));
    Ok(Scope::Since(Range {
        earlier: earlier.to_owned(),
        head: head.to_owned(),
        commits,
        files: files.into_iter().map(str::to_owned).collect(),
        other_files: other.len(),
    }))
}

impl Scope {
    /// The paragraph that opens the review body's overview: "Changes since
    /// …" or why this is a full review; nothing for a plain full review.
    pub fn body_note(&self) -> Option<String> {
        match self {
            Scope::Full => None,
            Scope::Since(range) => {
                let earlier = review_core::payload::inline_code(short_sha(&range.earlier));
                let commits = format!(
                    "{} commit{}",
                    range.commits,
                    if range.commits == 1 { "" } else { "s" }
                );
                Some(if range.files.is_empty() {
                    format!(
                        "**Changes since {earlier}** ({commits}): they change no file of this \
                         pull request, so this review only checked that the earlier findings \
                         still hold."
                    )
                } else {
                    format!(
                        "**Changes since {earlier}** ({commits}, {} file{} of this pull \
                         request): this review looked at what changed since the bot's last \
                         review, with the whole pull request as context.",
                        range.files.len(),
                        if range.files.len() == 1 { "" } else { "s" },
                    )
                })
            }
            Scope::Rewritten { earlier } => Some(format!(
                "**Full review:** {} is no longer in this branch's history (force-pushed or \
                 rebased), so the whole pull request was reviewed again.",
                review_core::payload::inline_code(short_sha(earlier))
            )),
        }
    }

    /// The short line for the progress output.
    pub fn progress(&self) -> String {
        match self {
            Scope::Full => "full review".to_owned(),
            Scope::Since(range) => format!(
                "changes since {} ({} commit{}, {} file{})",
                short_sha(&range.earlier),
                range.commits,
                if range.commits == 1 { "" } else { "s" },
                range.files.len(),
                if range.files.len() == 1 { "" } else { "s" },
            ),
            Scope::Rewritten { earlier } => format!(
                "full review: {} is no longer in the branch's history",
                short_sha(earlier)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(author: &str, body: &str, commit: &str, state: &str) -> Review {
        Review {
            id: 1,
            author_login: Some(author.to_owned()),
            body: body.to_owned(),
            state: state.to_owned(),
            commit_id: Some(commit.to_owned()),
            submitted_at: None,
            html_url: String::new(),
        }
    }

    #[test]
    fn the_latest_review_is_the_bots_own_with_a_review_footer() {
        let first = ReviewId(uuid::Uuid::from_u128(1));
        let second = ReviewId(uuid::Uuid::from_u128(2));
        let body = |id: ReviewId| {
            footer::Footer::for_review(id, footer::ThreadId(uuid::Uuid::from_u128(9)))
                .append_to("## Review summary")
        };
        let (a, b, c) = ("a".repeat(40), "b".repeat(40), "c".repeat(40));
        let reviews = vec![
            review("review-bot", &body(first), &a, "COMMENTED"),
            review("review-bot", &body(second), &b, "COMMENTED"),
            // A reply makes a review without a footer of its own.
            review("review-bot", "", &c, "COMMENTED"),
            // Someone quoting the bot's footer is not the bot.
            review("octocat", &body(first), &c, "COMMENTED"),
            review("review-bot", &body(first), "not-a-sha", "COMMENTED"),
            review("review-bot", &body(first), &c, "PENDING"),
        ];
        assert_eq!(
            latest_bot_review(&reviews, "review-bot"),
            Some(EarlierReview {
                commit: b,
                review_id: second
            })
        );
        assert_eq!(latest_bot_review(&reviews[..1], "someone-else"), None);
    }

    #[test]
    fn the_body_says_what_the_review_covered() {
        let range = Range {
            earlier: "0123456789abcdef0123456789abcdef01234567".to_owned(),
            head: "f".repeat(40),
            commits: 1,
            files: vec!["src/lib.rs".to_owned()],
            other_files: 0,
        };
        let note = Scope::Since(range.clone()).body_note().unwrap();
        assert!(
            note.starts_with("**Changes since `0123456789ab`** (1 commit, 1 file of"),
            "{note}"
        );
        let note = Scope::Since(Range {
            files: Vec::new(),
            ..range.clone()
        })
        .body_note()
        .unwrap();
        assert!(
            note.contains("change no file of this pull request"),
            "{note}"
        );
        let note = Scope::Rewritten {
            earlier: range.earlier,
        }
        .body_note()
        .unwrap();
        assert!(
            note.contains(
                "`0123456789ab` is no longer in this branch's history (force-pushed or rebased)"
            ),
            "{note}"
        );
        assert_eq!(Scope::Full.body_note(), None);
    }
}
