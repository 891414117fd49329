//! The diff model on hand-written diffs: every git feature the parser handles,
//! and the errors it reports.

use review_core::anchor::Side;
use review_core::diff::{
    ChangeKind, ChangedFile, DiffError, DiffProblem, FileMode, LineKind, LineRange, PullRequestDiff,
};

fn parse(text: &str) -> PullRequestDiff {
    PullRequestDiff::parse(text).unwrap_or_else(|error| panic!("{error}\n---\n{text}"))
}

fn parse_error(text: &str) -> DiffError {
    PullRequestDiff::parse(text).expect_err("the diff should be rejected")
}

#[test]
fn empty_input_is_an_empty_diff() {
    assert!(parse("").is_empty());
    assert!(parse("\n\n").is_empty());
}

#[test]
fn a_modified_file_has_numbered_lines() {
    let diff = parse(
        "diff --git a/src/lib.rs b/src/lib.rs\n\
         index 1111111..2222222 100644\n\
         --- a/src/lib.rs\n\
         +++ b/src/lib.rs\n\
         @@ -1,4 +1,5 @@ fn main() {\n\
         \x20one\n\
         -two\n\
         +deux\n\
         +zwei\n\
         \x20three\n\
         \x20four\n",
    );
    assert_eq!(diff.len(), 1);
    let file = diff.file("src/lib.rs").unwrap();
    assert_eq!(file.change, ChangeKind::Modified);
    assert_eq!(file.previous_path, None);
    assert_eq!(file.old_mode, Some(FileMode(0o100_644)));
    assert_eq!(file.new_mode, Some(FileMode(0o100_644)));
    let hunk = &file.hunks[0];
    assert_eq!(
        (
            hunk.old_start,
            hunk.old_count,
            hunk.new_start,
            hunk.new_count
        ),
        (1, 4, 1, 5)
    );
    assert_eq!(hunk.section, "fn main() {");
    let numbers: Vec<_> = hunk
        .lines
        .iter()
        .map(|line| (line.kind, line.old_line, line.new_line, line.text.as_str()))
        .collect();
    assert_eq!(
        numbers,
        vec![
            (LineKind::Context, Some(1), Some(1), "one"),
            (LineKind::Removed, Some(2), None, "two"),
            (LineKind::Added, None, Some(2), "deux"),
            (LineKind::Added, None, Some(3), "zwei"),
            (LineKind::Context, Some(3), Some(4), "three"),
            (LineKind::Context, Some(4), Some(5), "four"),
        ]
    );
    assert_eq!(file.added_lines(), 2);
    assert_eq!(file.removed_lines(), 1);
    assert_eq!(
        file.commentable_ranges(Side::Right).collect::<Vec<_>>(),
        vec![LineRange { first: 1, last: 5 }]
    );
}

#[test]
fn a_hunk_that_declares_fewer_lines_than_it_has_is_an_error() {
    let error = parse_error("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+c\n");
    assert_eq!(error.line(), 7);
    assert!(matches!(
        error,
        DiffError::Diff {
            problem: DiffProblem::LineAfterCompleteHunk { header_line: 4 },
            ..
        }
    ));
}

#[test]
fn a_github_patch_builds_the_same_model() {
    let diff = PullRequestDiff::from_changed_files([ChangedFile {
        path: "a.txt",
        previous_path: None,
        change: ChangeKind::Modified,
        patch: Some("@@ -1,2 +1,2 @@\n-a\n+b\n c"),
    }])
    .unwrap();
    let file = diff.file("a.txt").unwrap();
    assert_eq!(file.hunks[0].lines.len(), 3);
    assert!(!file.hunks[0].lines[2].no_newline_at_end);
}
