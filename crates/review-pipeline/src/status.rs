//! One status comment per pull request (issue 25, item 10): repeated
//! failures on a pull request update one conversation comment instead of
//! adding one per attempt.
//!
//! The comment carries a `thread::` id derived from the repository and the
//! pull request alone ([`thread_id`]), so every step, on every replica,
//! finds the same comment again — but only among comments the bot wrote
//! (`github.bot_login`): a marker pasted into a person's comment is a copy
//! and never makes the bot edit that comment. Without a known login nothing
//! can be trusted as the bot's, and each status is a new comment (as before).
//!
//! The status says which attempt failed on which head, what failed, and what
//! happens next. The hand-over to a person after the last attempt stays a new
//! comment (it is the one that needs a notification); the status then says
//! the bot stopped and points to it.

use review_core::footer::{self, Footer, ReviewId, ThreadId};
use review_core::payload::with_footer;
use review_core::snapshot::is_bot_login;
use review_github::{GitHubClient, GitHubError, IssueComment, RepositoryName};
use uuid::Uuid;

/// The status comments' `thread::` ids: one per pull request.
const STATUS_NAMESPACE: Uuid = Uuid::from_u128(0x5a7c_2e41_9b0d_4f63_a18e_6c3d_0f9b_7e25);

/// The `thread::` id of `repository#number`'s status comment.
pub fn thread_id(repository: &RepositoryName, number: u64) -> ThreadId {
    ThreadId(Uuid::new_v5(
        &STATUS_NAMESPACE,
        format!(
            "status:{}#{number}",
            repository.to_string().to_ascii_lowercase()
        )
        .as_bytes(),
    ))
}

/// The bot's status comment among `comments`: written by `bot_login` (never
/// anyone else's, whatever it says) and carrying the status `thread::` id in
/// its own footer. The newest such comment when there are several.
pub fn find<'a>(
    comments: &'a [IssueComment],
    bot_login: Option<&str>,
    thread: ThreadId,
) -> Option<&'a IssueComment> {
    let bot = bot_login?;
    comments
        .iter()
        .filter(|comment| {
            comment
                .author_login
                .as_deref()
                .is_some_and(|author| is_bot_login(bot, author))
        })
        .filter(|comment| footer::own_footer(&comment.body).thread == Some(thread))
        .max_by_key(|comment| (comment.created_at, comment.id))
}

/// Writes `text` as the status: an edit of `existing` (the comment [`find`]
/// returned) when there is one, else a new comment carrying the status id
/// (a lost answer to the POST is found again by that id, never posted
/// twice). `latest_review` goes into the footer like every non-review bot
/// comment's. Returns the comment's page.
pub async fn publish(
    github: &GitHubClient,
    repository: &RepositoryName,
    number: u64,
    existing: Option<u64>,
    latest_review: Option<ReviewId>,
    text: &str,
) -> Result<IssueComment, GitHubError> {
    let thread = thread_id(repository, number);
    let body = with_footer(text, &Footer::after_review(latest_review, thread).render());
    match existing {
        Some(comment_id) => match github
            .update_issue_comment(repository, comment_id, &body)
            .await
        {
            Ok(comment) => Ok(comment),
            // Deleted by a person meanwhile: start a new one.
            Err(GitHubError::NotFound { .. }) => {
                tracing::info!(comment_id, "the status comment is gone; posting a new one");
                post(github, repository, number, &body, thread).await
            }
            Err(error) => Err(error),
        },
        None => post(github, repository, number, &body, thread).await,
    }
}

async fn post(
    github: &GitHubClient,
    repository: &RepositoryName,
    number: u64,
    body: &str,
    thread: ThreadId,
) -> Result<IssueComment, GitHubError> {
    Ok(github
        .create_issue_comment(repository, number, body, Some(thread))
        .await?
        .item)
}

/// The attempt line of a status: which attempt on which head. The count is
/// read back from the bot's own status comment by [`next_attempt`], so it
/// holds across `step`s, restarts and replicas.
pub fn attempt_line(attempt: u32, head_sha: &str) -> String {
    format!(
        "**Attempt {attempt}** on {} (the bot runs at most `agent.max_attempts` attempts on one \
         commit as a service; then a person takes over).",
        review_core::payload::inline_code(&short_head(head_sha))
    )
}

/// `text` (a heading paragraph, then the rest) with the attempt line after
/// its heading.
pub fn with_attempt_line(text: &str, attempt: u32, head_sha: &str) -> String {
    let line = attempt_line(attempt, head_sha);
    match text.split_once("\n\n") {
        Some((heading, rest)) => format!("{heading}\n\n{line}\n\n{rest}"),
        None => format!("{text}\n\n{line}"),
    }
}

/// The attempt a new failure on `head_sha` is: one more than the status
/// comment `previous` (the bot's own, from [`find`]) counted on the same
/// head, else the first.
pub fn next_attempt(previous: Option<&str>, head_sha: &str) -> u32 {
    let marker = format!(
        "** on {}",
        review_core::payload::inline_code(&short_head(head_sha))
    );
    previous
        .and_then(|body| {
            body.lines().find_map(|line| {
                let (count, rest) = line.strip_prefix("**Attempt ")?.split_once("**")?;
                rest.starts_with(&marker[2..])
                    .then(|| count.parse::<u32>().ok())
                    .flatten()
            })
        })
        .map_or(1, |count| count.saturating_add(1))
}

fn short_head(head_sha: &str) -> String {
    head_sha.chars().take(12).collect()
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    fn comment(id: u64, author: &str, body: &str) -> IssueComment {
        IssueComment {
            id,
            author_login: Some(author.to_owned()),
            body: body.to_owned(),
            created_at: Utc::now(),
            updated_at: Utc::now(),
            html_url: format!("https://github.example/c/{id}"),
        }
    }

    #[test]
    fn the_status_comment_is_found_only_among_the_bots_own_comments() {
        let repository = RepositoryName::parse("Octo/Widgets").unwrap();
        let thread = thread_id(&repository, 7);
        assert_eq!(
            thread,
            thread_id(&RepositoryName::parse("octo/widgets").unwrap(), 7),
            "the id ignores case like GitHub"
        );
        assert_ne!(thread, thread_id(&repository, 8));
        let footer = Footer::after_review(None, thread).render();
        let comments = vec![
            comment(1, "octocat", &format!("copied: {footer}")),
            comment(2, "review-bot[bot]", "unrelated"),
            comment(3, "review-bot[bot]", &format!("status\n\n{footer}")),
            comment(4, "mallory", &format!("status\n\n{footer}")),
            comment(5, "review-bot[bot]", &format!("> {footer}\n\nquoting it")),
        ];
        assert_eq!(
            find(&comments, Some("review-bot[bot]"), thread).map(|c| c.id),
            Some(3)
        );
        assert_eq!(find(&comments, Some("mallory-bot"), thread), None);
        assert_eq!(find(&comments, None, thread), None);
    }

    #[test]
    fn the_attempt_count_is_read_back_from_the_status_on_the_same_head() {
        let head = "0123456789abcdef0123456789abcdef01234567";
        let other = "fedcba9876543210fedcba9876543210fedcba98";
        assert_eq!(next_attempt(None, head), 1);
        let first = format!("### ⚠️ failed\n\n{}\n\nmore", attempt_line(1, head));
        assert_eq!(next_attempt(Some(&first), head), 2);
        let third = format!("### x\n\n{}", attempt_line(3, head));
        assert_eq!(next_attempt(Some(&third), head), 4);
        // Another head starts again; garbage is no count.
        assert_eq!(next_attempt(Some(&third), other), 1);
        assert_eq!(
            next_attempt(Some("**Attempt ∞** on `0123456789ab`"), head),
            1
        );
        assert_eq!(next_attempt(Some("**Attempt"), head), 1);
    }
}
