//! Which inline comments GitHub will accept, judged from the pull request's
//! own per-file patches — the recovery path after a 422.
//!
//! GitHub's create-review is atomic: one comment off the diff rejects the
//! whole review and says neither which comment nor why. Probing subsets by
//! posting would create visible reviews (or, with pending reviews, needs the
//! "delete pending review" call outside our OpenAPI subset, collides with a
//! pending review the token's user may have open, and spends writes). Instead
//! we read the diff GitHub itself serves (`pulls/list-files`, a conditional
//! GET that is usually a free 304) and apply GitHub's rule: `line` on `side`
//! must be inside a hunk of that file's patch, and `start_line` in the same
//! hunk. Zero writes, one or a few reads.
//!
//! `review-core` owns anchoring before posting; this module only re-checks
//! after GitHub disagreed with it.

use std::collections::{BTreeSet, HashMap};

use crate::model::{ChangedFiles, DiffSide, NewInlineComment};

/// The lines of one hunk, per side.
#[derive(Debug, Default)]
struct HunkLines {
    left: BTreeSet<u64>,
    right: BTreeSet<u64>,
}

impl HunkLines {
    fn contains(&self, side: DiffSide, line: u64) -> bool {
        match side {
            DiffSide::Left => self.left.contains(&line),
            DiffSide::Right => self.right.contains(&line),
        }
    }
}

/// The hunks of a per-file patch, or `None` when it cannot be parsed.
fn hunks_of(patch: &str) -> Option<Vec<HunkLines>> {
    // GitHub's patch has no `---`/`+++` header and often no final newline.
    let mut text = patch.to_owned();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let parsed = diffy::Patch::from_str(&text).ok()?;
    let hunks = parsed
        .hunks()
        .iter()
        .map(|hunk| {
            let mut lines = HunkLines::default();
            let mut old = hunk.old_range().start() as u64;
            let mut new = hunk.new_range().start() as u64;
            for line in hunk.lines() {
                match line {
                    diffy::Line::Context(_) => {
                        lines.left.insert(old);
                        lines.right.insert(new);
                        old += 1;
                        new += 1;
                    }
                    diffy::Line::Delete(_) => {
                        lines.left.insert(old);
                        old += 1;
                    }
                    diffy::Line::Insert(_) => {
                        lines.right.insert(new);
                        new += 1;
                    }
                }
            }
            lines
        })
        .collect();
    Some(hunks)
}

/// Splits comments into those GitHub should accept inline and those it will
/// not, keeping each group in the original order.
pub(crate) fn partition(
    comments: &[NewInlineComment],
    files: &ChangedFiles,
) -> (Vec<NewInlineComment>, Vec<NewInlineComment>) {
    let mut hunks_by_path: HashMap<&str, Option<Vec<HunkLines>>> = HashMap::new();
    for file in &files.files {
        hunks_by_path.insert(file.path.as_str(), file.patch.as_deref().and_then(hunks_of));
    }
    comments.iter().cloned().partition(|comment| {
        let Some(Some(hunks)) = hunks_by_path.get(comment.path.as_str()) else {
            return false;
        };
        hunks.iter().any(|hunk| {
            if !hunk.contains(comment.side, comment.line) {
                return false;
            }
            match comment.start_line {
                None => true,
                Some(start_line) => {
                    let start_side = comment.start_side.unwrap_or(comment.side);
                    hunk.contains(start_side, start_line)
                        && (start_side != comment.side || start_line < comment.line)
                }
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ChangedFile, FileChange};

    fn comment(path: &str, line: u64, side: DiffSide) -> NewInlineComment {
        NewInlineComment {
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
                    change: FileChange::Modified,
                    additions: 2,
                    deletions: 1,
                    // Lines 10..=13 new (11, 12 added), 10..=12 old (11 deleted);
                    // a second hunk at new 40..=41.
                    patch: Some(
                        "@@ -10,3 +10,4 @@ fn main() {\n a\n-b\n+c\n+d\n e\n@@ -38,2 +40,2 @@\n x\n y"
                            .into(),
                    ),
                },
                ChangedFile {
                    path: "logo.png".into(),
                    previous_path: None,
                    change: FileChange::Added,
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
            comment("src/lib.rs", 11, DiffSide::Right),
            comment("src/lib.rs", 11, DiffSide::Left),
            comment("src/lib.rs", 41, DiffSide::Right),
            comment("src/lib.rs", 20, DiffSide::Right),
            comment("src/lib.rs", 14, DiffSide::Right),
            comment("logo.png", 1, DiffSide::Right),
            comment("missing.rs", 1, DiffSide::Right),
        ];
        let (inline, outside) = partition(&comments, &files());
        let lines: Vec<_> = inline.iter().map(|c| (c.line, c.side)).collect();
        assert_eq!(
            lines,
            vec![
                (11, DiffSide::Right),
                (11, DiffSide::Left),
                (41, DiffSide::Right)
            ]
        );
        assert_eq!(outside.len(), 4);
    }

    #[test]
    fn a_range_must_stay_in_one_hunk_and_run_forwards() {
        let mut in_one_hunk = comment("src/lib.rs", 13, DiffSide::Right);
        in_one_hunk.start_line = Some(10);
        let mut across_hunks = comment("src/lib.rs", 40, DiffSide::Right);
        across_hunks.start_line = Some(12);
        let mut backwards = comment("src/lib.rs", 10, DiffSide::Right);
        backwards.start_line = Some(12);
        let (inline, outside) = partition(&[in_one_hunk, across_hunks, backwards], &files());
        assert_eq!(inline.len(), 1);
        assert_eq!(outside.len(), 2);
    }
}
