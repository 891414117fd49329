//! The loop's cycle count, read from the pull request itself (so restarts
//! and replicas agree): how many rounds of review → fix the bot has made.
//!
//! A **cycle** is one round of the loop: something asks for a fix (the
//! bot's review with findings, or a CI failure) and the bot pushes one.
//! Two marks on the pull request count them: the distinct `review::` ids of
//! the bot's reviews and comments (its reviews), and its fix commits, each
//! carrying the [`FIX_TRAILER`] trailer. The write step is about to make
//! cycle `max(reviews, fixes + 1)`: a fix that follows a review shares its
//! cycle, a fix that follows a CI failure starts a new one — so a loop of
//! CI failures and fixes is bounded exactly as one of reviews and fixes.
//!
//! **A hand-back restarts the count.** At the limit the bot labels the pull
//! request `bot-human-intervention`, then posts one comment marked with
//! [`CYCLE_LIMIT_MARKER`] — in that order, so a marked comment proves the
//! label was set. A trigger label found on the pull request after that
//! comment was put back by a person: only the reviews and fixes after the
//! latest marked comment count.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use review_core::footer::{self, ReviewId};
use review_core::snapshot::is_bot_login;
use review_github::{IssueComment, PullRequestCommit, Review, ReviewComment};

/// The trailer every fix commit of the bot carries (`Review-Bot-Fix: <run>`).
pub const FIX_TRAILER: &str = "Review-Bot-Fix";

/// The hidden marker of the bot's cycle-limit hand-over comment.
pub const CYCLE_LIMIT_MARKER: &str = "<!-- review-bot:cycle-limit -->";

/// The cycles found on a pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cycles {
    /// The bot's distinct reviews (since the hand-back, if any).
    pub reviews: usize,
    /// The bot's fix commits (since the hand-back, if any).
    pub fixes: usize,
    /// When the latest cycle-limit hand-over was posted, when a person has
    /// handed the pull request back since: the count starts there.
    pub handed_back_after: Option<DateTime<Utc>>,
}

impl Cycles {
    /// The cycle the next fix would make: `max(reviews, fixes + 1)`.
    pub fn current(&self) -> usize {
        self.reviews.max(self.fixes + 1)
    }

    /// `3 of 5 (2 reviews, 2 fixes)`, for the step's progress line.
    pub fn describe(&self, max: usize) -> String {
        format!(
            "{} of {max} ({} review{}, {} fix{}{})",
            self.current(),
            self.reviews,
            if self.reviews == 1 { "" } else { "s" },
            self.fixes,
            if self.fixes == 1 { "" } else { "es" },
            if self.handed_back_after.is_some() {
                " since a person handed it back"
            } else {
                ""
            }
        )
    }
}

/// Whether `message` is a fix commit of the bot's (has the trailer).
pub fn is_fix_commit(message: &str) -> bool {
    message.lines().any(|line| {
        line.trim_start()
            .strip_prefix(FIX_TRAILER)
            .is_some_and(|rest| rest.starts_with(':'))
    })
}

/// Counts the cycles from the pull request's lists. Without the bot's login
/// no review is trusted as the bot's (fix commits still count: a trailer a
/// person forges only makes the bot stop sooner).
pub fn count(
    bot_login: Option<&str>,
    reviews: &[Review],
    review_comments: &[ReviewComment],
    issue_comments: &[IssueComment],
    commits: &[PullRequestCommit],
) -> Cycles {
    let mine = |author: Option<&str>| {
        bot_login.is_some_and(|bot| author.is_some_and(|author| is_bot_login(bot, author)))
    };
    // The bot's writings with their times.
    let writings: Vec<(Option<DateTime<Utc>>, &str)> = reviews
        .iter()
        .filter(|review| mine(review.author_login.as_deref()))
        .map(|review| (review.submitted_at, review.body.as_str()))
        .chain(
            review_comments
                .iter()
                .filter(|comment| mine(comment.author_login.as_deref()))
                .map(|comment| (Some(comment.created_at), comment.body.as_str())),
        )
        .chain(
            issue_comments
                .iter()
                .filter(|comment| mine(comment.author_login.as_deref()))
                .map(|comment| (Some(comment.created_at), comment.body.as_str())),
        )
        .collect();
    let handed_back_after = issue_comments
        .iter()
        .filter(|comment| mine(comment.author_login.as_deref()))
        .filter(|comment| comment.body.contains(CYCLE_LIMIT_MARKER))
        .map(|comment| comment.created_at)
        .max();
    // Undated (a pending review, a commit without a date): counted.
    let after = |time: Option<DateTime<Utc>>| {
        handed_back_after.is_none_or(|since| time.is_none_or(|time| time > since))
    };
    let before: BTreeSet<ReviewId> = footer::distinct_review_ids(
        writings
            .iter()
            .filter(|(time, _)| !after(*time))
            .map(|(_, body)| *body),
    );
    let since: BTreeSet<ReviewId> = footer::distinct_review_ids(
        writings
            .iter()
            .filter(|(time, _)| after(*time))
            .map(|(_, body)| *body),
    );
    let fixes = commits
        .iter()
        .filter(|commit| is_fix_commit(&commit.message) && after(commit.committed_at))
        .count();
    Cycles {
        reviews: since.difference(&before).count(),
        fixes,
        handed_back_after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone as _;

    fn at(minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, minute, 0).unwrap()
    }

    fn review(author: &str, id: u128, minute: u32) -> Review {
        Review {
            id: u64::from(minute),
            author_login: Some(author.to_owned()),
            body: format!("body\n\n<sub>review::{}</sub>", uuid::Uuid::from_u128(id)),
            state: "COMMENTED".to_owned(),
            commit_id: None,
            submitted_at: Some(at(minute)),
            html_url: String::new(),
        }
    }

    fn comment(author: &str, body: &str, minute: u32) -> IssueComment {
        IssueComment {
            id: u64::from(minute),
            author_login: Some(author.to_owned()),
            body: body.to_owned(),
            created_at: at(minute),
            updated_at: at(minute),
            html_url: String::new(),
        }
    }

    fn commit(message: &str, minute: u32) -> PullRequestCommit {
        PullRequestCommit {
            sha: format!("{minute:040}"),
            message: message.to_owned(),
            committed_at: Some(at(minute)),
        }
    }

    const FIX: &str = "Address review comments\n\nRenamed it.\n\nReview-Bot-Fix: 1234\n";

    #[test]
    fn fixes_after_ci_failures_count_as_cycles_of_their_own() {
        let reviews = [review("bot", 1, 1)];
        let commits = [commit("Initial", 0), commit(FIX, 2), commit(FIX, 4)];
        let cycles = count(Some("bot"), &reviews, &[], &[], &commits);
        assert_eq!((cycles.reviews, cycles.fixes), (1, 2));
        assert_eq!(cycles.current(), 3);
        // A fix that follows its review shares the review's cycle.
        let cycles = count(Some("bot"), &reviews, &[], &[], &commits[..1]);
        assert_eq!(cycles.current(), 1);
        let reviews = [review("bot", 1, 1), review("bot", 2, 3)];
        let cycles = count(Some("bot"), &reviews, &[], &[], &commits[..2]);
        assert_eq!(cycles.current(), 2);
    }

    #[test]
    fn only_the_bots_reviews_and_trailed_commits_count() {
        let reviews = [review("octocat", 1, 1)];
        let commits = [
            commit("Review-Bot-Fix is mentioned: not a trailer", 2),
            commit("Fix\n\nReview-Bot-Fixed: 1", 3),
        ];
        let cycles = count(Some("bot"), &reviews, &[], &[], &commits);
        assert_eq!((cycles.reviews, cycles.fixes), (0, 0));
        assert!(is_fix_commit(FIX));
        assert_eq!(
            count(None, &[review("bot", 1, 1)], &[], &[], &[]).reviews,
            0
        );
    }

    #[test]
    fn a_hand_back_after_the_cycle_limit_restarts_the_count() {
        let reviews = [
            review("bot", 1, 1),
            review("bot", 2, 3),
            review("bot", 3, 7),
        ];
        let commits = [commit(FIX, 2), commit(FIX, 4), commit(FIX, 8)];
        let hand_over = format!(
            "stops here\n\n{CYCLE_LIMIT_MARKER}\n\n<sub>review::{} · thread::{}</sub>",
            uuid::Uuid::from_u128(2),
            uuid::Uuid::from_u128(99)
        );
        // A CI comment after the hand-over repeats the old review id: not a new review.
        let ci = format!(
            "CI failed\n\n<sub>review::{}</sub>",
            uuid::Uuid::from_u128(3)
        );
        let comments = [comment("bot", &hand_over, 5), comment("bot", &ci, 9)];
        let cycles = count(Some("bot"), &reviews, &[], &comments, &commits);
        assert_eq!(cycles.handed_back_after, Some(at(5)));
        assert_eq!((cycles.reviews, cycles.fixes), (1, 1));
        assert_eq!(cycles.current(), 2);
        // The same marker from someone else is not the bot's hand-over.
        let forged = [comment("octocat", &hand_over, 5)];
        let cycles = count(Some("bot"), &reviews, &[], &forged, &commits);
        assert_eq!(cycles.handed_back_after, None);
        assert_eq!(cycles.current(), 4);
    }
}
