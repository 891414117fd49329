//! Building a [`PullRequestSnapshot`] from what review-github reads.
//!
//! Live mode builds one on every `github_get_pr_comments` call; the pipeline
//! uses the same function to write the snapshot file it hands the server in
//! pipeline mode, so both modes show the agent the same thing.

use std::collections::{BTreeMap, HashSet};

use review_core::anchor::Side;
use review_core::diff::{LineKind, PullRequestDiff as DiffModel};
use review_core::snapshot::{
    IssueComment, PullRequestInfo, PullRequestSnapshot, ReviewThread, SNAPSHOT_VERSION,
    SnapshotFile, ThreadComment,
};
use review_github::{PullRequest, PullRequestDiff, RepositoryName};

/// The login shown for a deleted GitHub account.
const GHOST: &str = "ghost";

/// What the pipeline (or live mode) read from GitHub about one pull request.
#[derive(Debug, Clone, Copy)]
pub struct GitHubPullRequest<'a> {
    /// The repository.
    pub repository: &'a RepositoryName,
    /// The pull request's metadata.
    pub pull_request: &'a PullRequest,
    /// Its diff (whole, or per file when GitHub refused the whole one).
    pub diff: &'a PullRequestDiff,
    /// Every review comment, in any order.
    pub review_comments: &'a [review_github::ReviewComment],
    /// Every issue comment, in any order.
    pub issue_comments: &'a [review_github::IssueComment],
    /// The ids of the comments the bot already replied to (from the store).
    pub replied: &'a HashSet<u64>,
    /// The login the bot posts as; only its comments carry `thread::` ids.
    pub bot_login: Option<&'a str>,
}

/// Builds the snapshot: threads grouped from the flat review comments (a
/// reply's `in_reply_to` names its thread's first comment), oldest first, and
/// each thread's diff hunk cut from the diff as GitHub shows it (up to the
/// commented line).
pub fn snapshot_from_github(source: GitHubPullRequest<'_>) -> PullRequestSnapshot {
    let (diff, files, files_truncated) = match source.diff {
        PullRequestDiff::Unified(text) => (text.clone(), Vec::new(), false),
        PullRequestDiff::PerFile(changed) => (
            String::new(),
            changed
                .files
                .iter()
                .map(|file| SnapshotFile {
                    path: file.path.clone(),
                    previous_path: file.previous_path.clone(),
                    change: file.change,
                    patch: file.patch.clone(),
                })
                .collect(),
            changed.truncated,
        ),
    };
    let mut snapshot = PullRequestSnapshot {
        version: SNAPSHOT_VERSION,
        repository: source.repository.to_string(),
        bot_login: source.bot_login.map(str::to_owned),
        pull_request: PullRequestInfo {
            number: source.pull_request.number,
            title: source.pull_request.title.clone(),
            body: source.pull_request.body.clone(),
            author: source.pull_request.author_login.clone(),
            base_ref: source.pull_request.base_branch.clone(),
            head_ref: source.pull_request.head_branch.clone(),
            base_sha: source.pull_request.base_sha.clone(),
            head_sha: source.pull_request.head_sha.clone(),
        },
        diff,
        files,
        files_truncated,
        review_threads: Vec::new(),
        issue_comments: Vec::new(),
    };
    let model = snapshot.parsed_diff().ok();
    snapshot.review_threads = threads(
        source.review_comments,
        source.replied,
        source.bot_login,
        model.as_ref(),
    );
    let mut issue_comments: Vec<&review_github::IssueComment> =
        source.issue_comments.iter().collect();
    issue_comments.sort_by_key(|comment| (comment.created_at, comment.id));
    snapshot.issue_comments = issue_comments
        .into_iter()
        .map(|comment| IssueComment {
            id: comment.id,
            user: comment
                .author_login
                .clone()
                .unwrap_or_else(|| GHOST.to_owned()),
            body: comment.body.clone(),
            created_at: comment.created_at.to_rfc3339(),
            replied: source.replied.contains(&comment.id),
        })
        .collect();
    snapshot
}

/// The review threads, oldest first. A thread counts as `replied` only while
/// the store says the bot answered it **and** nobody but the bot has written
/// in it since the bot's last comment there (issue 25: a reviewer's follow-up
/// — "that link is dead, please answer" — has a comment id of its own, so a
/// flag kept per thread hid it from the agent and from the unresolved count).
/// Without the bot's login nobody's comments can be told apart, and the
/// store's flag stands.
fn threads(
    comments: &[review_github::ReviewComment],
    replied: &HashSet<u64>,
    bot_login: Option<&str>,
    diff: Option<&DiffModel>,
) -> Vec<ReviewThread> {
    let mut sorted: Vec<&review_github::ReviewComment> = comments.iter().collect();
    sorted.sort_by_key(|comment| (comment.created_at, comment.id));
    let mut by_root: BTreeMap<u64, Vec<&review_github::ReviewComment>> = BTreeMap::new();
    let mut roots = Vec::new();
    for comment in &sorted {
        if comment.in_reply_to.is_none() {
            roots.push(*comment);
        }
    }
    for comment in &sorted {
        if let Some(root) = comment.in_reply_to {
            by_root.entry(root).or_default().push(comment);
        }
    }
    roots
        .into_iter()
        .map(|root| {
            let side = root.side;
            let answers = by_root.remove(&root.id).unwrap_or_default();
            ReviewThread {
                path: root.path.clone(),
                line: root.line,
                start_line: root.start_line,
                side,
                diff_hunk: root
                    .line
                    .and_then(|line| diff.and_then(|diff| diff_hunk(diff, &root.path, line, side)))
                    .unwrap_or_default(),
                outdated: root.line.is_none(),
                replied: replied.contains(&root.id)
                    && !followed_up(
                        std::iter::once(root).chain(answers.iter().copied()),
                        bot_login,
                    ),
                comments: std::iter::once(root)
                    .chain(answers)
                    .map(|comment| ThreadComment {
                        id: comment.id,
                        user: comment
                            .author_login
                            .clone()
                            .unwrap_or_else(|| GHOST.to_owned()),
                        body: comment.body.clone(),
                        created_at: comment.created_at.to_rfc3339(),
                    })
                    .collect(),
            }
        })
        .collect()
}

/// Whether someone other than the bot wrote after the bot's last comment in a
/// thread (`comments` oldest first). With no comment of the bot's in it, or
/// no bot login, nothing is a follow-up.
fn followed_up<'a>(
    comments: impl Iterator<Item = &'a review_github::ReviewComment>,
    bot_login: Option<&str>,
) -> bool {
    let Some(bot) = bot_login else {
        return false;
    };
    let mut bot_spoke = false;
    let mut followed = false;
    for comment in comments {
        let by_bot = comment
            .author_login
            .as_deref()
            .is_some_and(|author| review_core::snapshot::is_bot_login(bot, author));
        if by_bot {
            bot_spoke = true;
            followed = false;
        } else if bot_spoke {
            followed = true;
        }
    }
    followed
}

/// The hunk containing `line` (on `side`), from its header down to that line,
/// as GitHub's `diff_hunk` shows it.
pub fn diff_hunk(diff: &DiffModel, path: &str, line: u32, side: Option<Side>) -> Option<String> {
    let side = side.unwrap_or(Side::Right);
    let file = diff.file(path)?;
    let hunk = file
        .hunks
        .iter()
        .find(|hunk| hunk.range(side).is_some_and(|range| range.contains(line)))?;
    let mut text = format!(
        "@@ -{},{} +{},{} @@",
        hunk.old_start, hunk.old_count, hunk.new_start, hunk.new_count
    );
    if !hunk.section.is_empty() {
        text.push(' ');
        text.push_str(&hunk.section);
    }
    for diff_line in &hunk.lines {
        let marker = match diff_line.kind {
            LineKind::Context => ' ',
            LineKind::Added => '+',
            LineKind::Removed => '-',
        };
        text.push('\n');
        text.push(marker);
        text.push_str(&diff_line.text);
        let number = match side {
            Side::Left => diff_line.old_line,
            Side::Right => diff_line.new_line,
        };
        if number == Some(line) {
            break;
        }
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comment(
        id: u64,
        in_reply_to: Option<u64>,
        author: &str,
        minute: u32,
    ) -> review_github::ReviewComment {
        review_github::ReviewComment {
            id,
            review_id: None,
            in_reply_to,
            author_login: Some(author.to_owned()),
            body: format!("comment {id}"),
            path: "src/lib.rs".to_owned(),
            line: Some(3),
            start_line: None,
            side: Some(Side::Right),
            original_line: Some(3),
            commit_id: "0".repeat(40),
            created_at: chrono::DateTime::from_timestamp(1_700_000_000 + i64::from(minute) * 60, 0)
                .unwrap(),
            html_url: String::new(),
        }
    }

    /// Issue 25 item 9: a reviewer writing after the bot's reply reopens the
    /// thread for the agent; the bot writing last closes it again.
    #[test]
    fn a_follow_up_after_the_bots_reply_reopens_the_thread() {
        let replied: HashSet<u64> = [1].into_iter().collect();
        let asked = comment(1, None, "alice", 0);
        let answered = comment(2, Some(1), "review-bot[bot]", 1);
        let follow_up = comment(3, Some(1), "alice", 2);
        let answered_again = comment(4, Some(1), "Review-Bot[bot]", 3);
        let replied_of = |comments: &[review_github::ReviewComment], bot: Option<&str>| {
            threads(comments, &replied, bot, None)[0].replied
        };
        let bot = Some("review-bot[bot]");
        assert!(replied_of(&[asked.clone(), answered.clone()], bot));
        assert!(!replied_of(
            &[asked.clone(), answered.clone(), follow_up.clone()],
            bot
        ));
        assert!(replied_of(
            &[
                asked.clone(),
                answered.clone(),
                follow_up.clone(),
                answered_again
            ],
            bot
        ));
        // Without the bot's login nobody can be told apart: the store's flag stands.
        assert!(replied_of(&[asked.clone(), answered, follow_up], None));
        // Not answered at all stays unanswered, whoever wrote.
        assert!(!threads(&[asked], &HashSet::new(), bot, None)[0].replied);
    }
}
