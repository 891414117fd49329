//! Which inline comments GitHub will accept, judged from the pull request's
//! own per-file patches — the recovery path after a 422.
//!
//! GitHub's create-review is atomic: one comment off the diff rejects the
//! whole review and says neither which comment nor why. Probing subsets by
//! posting would create visible reviews (or, with pending reviews, needs the
//! "delete pending review" call outside our OpenAPI subset, collides with a
//! pending review the token's user may have open, and spends writes). Instead
//! we read the diff GitHub itself serves (`pulls/list-files`, a conditional
//! GET that is usually a free 304) and ask `review_core::anchor` — the same
//! rules the pipeline applied before posting — about each comment exactly as
//! it was sent. Zero writes, one or a few reads.

use review_core::anchor::{CommentLocation, Verdict, anchor};
use review_core::diff::PullRequestDiff;

use crate::model::{ChangedFiles, PayloadComment};

/// Splits comments into those GitHub should accept inline as sent and those
/// it will not, keeping each group in the original order. `None` when the
/// files' patches cannot be read (the caller then moves every comment).
pub(crate) fn partition(
    comments: &[PayloadComment],
    files: &ChangedFiles,
) -> Option<(Vec<PayloadComment>, Vec<PayloadComment>)> {
    let diff = match PullRequestDiff::from_changed_files(
        files.files.iter().map(|file| file.as_core()),
    ) {
        Ok(diff) => diff,
        Err(error) => {
            tracing::warn!(%error, "cannot read the pull request's patches to find the refused comments");
            return None;
        }
    };
    Some(comments.iter().cloned().partition(|comment| {
        let crosses_sides = comment
            .start_side
            .is_some_and(|start_side| start_side != comment.side);
        let location = CommentLocation {
            path: comment.path.clone(),
            line: comment.line,
            start_line: comment.start_line,
            side: comment.side,
        };
        // Only a comment that is inline exactly as sent is kept: a `moved`
        // verdict means GitHub refuses it where it is.
        !crosses_sides
            && matches!(
                anchor(&diff, &location),
                Verdict::Inline { ref path, line, start_line }
                    if *path == comment.path && line == comment.line && start_line == comment.start_line
            )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ChangeKind, ChangedFile, Side};

    fn comment(path: &str, line: u32, side: Side) -> PayloadComment {
        PayloadComment {
            path: path.to_owned(),
            body: format!("{path}:{line}"),
            line,
            side,
            start_line: None,
            start_side: None,
        }
    }

    fn files() -> ChangedFiles {
        ChangedFiles {
            files: vec![
                ChangedFile {
                    path: "src/lib.rs".into(),
                    previous_path: None,
                    change: ChangeKind::Modified,
                    additions: 2,
                    deletions: 1,
                    // New lines 10..=13 (11, 12 added), old 10..=12 (11 deleted);
                    // a second hunk at new 40..=41.
                    patch: Some(
                        "@@ -10,3 +10,4 @@ fn main() {\n a\n-b\n+c\n+d\n e\n@@ -38,2 +40,2 @@\n x\n y"
                            .into(),
                    ),
                },
                ChangedFile {
                    path: "logo.png".into(),
                    previous_path: None,
                    change: ChangeKind::Added,
                    additions: 0,
                    deletions: 0,
                    patch: None,
                },
            ],
            truncated: false,
        }
    }

    #[test]
    fn lines_inside_hunks_stay_inline_and_the_rest_move() {
        let comments = vec![
            comment("src/lib.rs", 11, Side::Right),
            comment("src/lib.rs", 11, Side::Left),
            comment("src/lib.rs", 41, Side::Right),
            comment("src/lib.rs", 20, Side::Right),
            comment("src/lib.rs", 14, Side::Right),
            comment("logo.png", 1, Side::Right),
            comment("missing.rs", 1, Side::Right),
        ];
        let (inline, outside) = partition(&comments, &files()).unwrap();
        let lines: Vec<_> = inline.iter().map(|c| (c.line, c.side)).collect();
        assert_eq!(
            lines,
            vec![(11, Side::Right), (11, Side::Left), (41, Side::Right)]
        );
        assert_eq!(outside.len(), 4);
    }

    #[test]
    fn a_range_must_stay_in_one_hunk_and_run_forwards() {
        let mut in_one_hunk = comment("src/lib.rs", 13, Side::Right);
        in_one_hunk.start_line = Some(10);
        let mut across_hunks = comment("src/lib.rs", 40, Side::Right);
        across_hunks.start_line = Some(12);
        let mut backwards = comment("src/lib.rs", 10, Side::Right);
        backwards.start_line = Some(12);
        let (inline, outside) =
            partition(&[in_one_hunk, across_hunks, backwards], &files()).unwrap();
        assert_eq!(inline.len(), 1);
        assert_eq!(outside.len(), 2);
    }
}
