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
    snapshot.review_threads = threads(source.review_comments, source.replied, model.as_ref());
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

fn threads(
    comments: &[review_github::ReviewComment],
    replied: &HashSet<u64>,
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
                replied: replied.contains(&root.id),
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
