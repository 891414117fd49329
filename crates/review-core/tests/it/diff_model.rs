//! The diff model on hand-written diffs: every git feature the parser handles,
//! GitHub's per-file entries, and the errors malformed input gets.

use std::fmt::Write as _;

use review_core::anchor::Side;
use review_core::diff::{
    ChangeKind, ChangedFile, DiffError, DiffProblem, FileDiff, FileMode, LineKind, PullRequestDiff,
};

fn parse(text: &str) -> PullRequestDiff {
    PullRequestDiff::parse(text).unwrap_or_else(|error| panic!("{error}\n---\n{text}"))
}

fn parse_error(text: &str) -> DiffError {
    PullRequestDiff::parse(text).expect_err("the diff should be rejected")
}

fn only_file(diff: &PullRequestDiff) -> &FileDiff {
    assert_eq!(diff.len(), 1, "{:#?}", diff.files());
    &diff.files()[0]
}

/// `(kind, old_line, new_line, text, no_newline_at_end)` of one line.
type LineSummary<'a> = (LineKind, Option<u32>, Option<u32>, &'a str, bool);

/// The summary of every line of the file.
fn lines_of(file: &FileDiff) -> Vec<LineSummary<'_>> {
    file.hunks
        .iter()
        .flat_map(|hunk| &hunk.lines)
        .map(|line| {
            (
                line.kind,
                line.old_line,
                line.new_line,
                line.text.as_str(),
                line.no_newline_at_end,
            )
        })
        .collect()
}

fn ranges(file: &FileDiff, side: Side) -> Vec<(u32, u32)> {
    file.commentable_ranges(side)
        .map(|range| (range.first, range.last))
        .collect()
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
    let file = diff.file("src/lib.rs").unwrap();
    assert_eq!(file.change, ChangeKind::Modified);
    assert_eq!(file.previous_path, None);
    assert_eq!(file.old_path(), Some("src/lib.rs"));
    assert_eq!(file.new_path(), Some("src/lib.rs"));
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
    assert_eq!(
        lines_of(file),
        vec![
            (LineKind::Context, Some(1), Some(1), "one", false),
            (LineKind::Removed, Some(2), None, "two", false),
            (LineKind::Added, None, Some(2), "deux", false),
            (LineKind::Added, None, Some(3), "zwei", false),
            (LineKind::Context, Some(3), Some(4), "three", false),
            (LineKind::Context, Some(4), Some(5), "four", false),
        ]
    );
    assert_eq!(file.added_lines(), 2);
    assert_eq!(file.removed_lines(), 1);
    assert_eq!(ranges(file, Side::Right), vec![(1, 5)]);
    assert_eq!(ranges(file, Side::Left), vec![(1, 4)]);
}

#[test]
fn several_files_and_hunks_keep_their_order() {
    let diff = parse(
        "diff --git a/b.txt b/b.txt\n\
         --- a/b.txt\n\
         +++ b/b.txt\n\
         @@ -1 +1 @@\n\
         -x\n\
         +y\n\
         @@ -10,2 +10,3 @@ section two\n\
         \x20p\n\
         +q\n\
         \x20r\n\
         diff --git a/a.txt b/a.txt\n\
         --- a/a.txt\n\
         +++ b/a.txt\n\
         @@ -5,0 +6 @@\n\
         +inserted\n",
    );
    let paths: Vec<_> = diff.files().iter().map(|file| file.path.as_str()).collect();
    assert_eq!(paths, ["b.txt", "a.txt"]);
    let b = diff.file("b.txt").unwrap();
    assert_eq!(ranges(b, Side::Right), vec![(1, 1), (10, 12)]);
    let a = diff.file("a.txt").unwrap();
    // `-5,0`: a pure insertion has no old-side lines.
    assert_eq!(ranges(a, Side::Left), vec![]);
    assert_eq!(ranges(a, Side::Right), vec![(6, 6)]);
}

#[test]
fn a_rename_without_content_change_has_both_paths_and_no_hunks() {
    let diff = parse(
        "diff --git a/old/name.txt b/new/name.txt\n\
         similarity index 100%\n\
         rename from old/name.txt\n\
         rename to new/name.txt\n",
    );
    let file = only_file(&diff);
    assert_eq!(file.change, ChangeKind::Renamed);
    assert_eq!(file.path, "new/name.txt");
    assert_eq!(file.previous_path.as_deref(), Some("old/name.txt"));
    assert_eq!(file.similarity, Some(100));
    assert!(file.hunks.is_empty());
    assert_eq!(
        diff.file_by_previous_path("old/name.txt")
            .map(|file| &file.path),
        Some(&"new/name.txt".to_owned())
    );
}

#[test]
fn a_rename_with_content_change_numbers_old_lines_in_the_old_file() {
    let diff = parse(
        "diff --git a/old.rs b/new.rs\n\
         similarity index 80%\n\
         rename from old.rs\n\
         rename to new.rs\n\
         index 1111111..2222222 100644\n\
         --- a/old.rs\n\
         +++ b/new.rs\n\
         @@ -3,2 +3,2 @@\n\
         -before\n\
         +after\n\
         \x20same\n",
    );
    let file = only_file(&diff);
    assert_eq!(file.change, ChangeKind::Renamed);
    assert_eq!(
        (file.path.as_str(), file.old_path()),
        ("new.rs", Some("old.rs"))
    );
    assert_eq!(file.similarity, Some(80));
    assert_eq!(ranges(file, Side::Left), vec![(3, 4)]);
    assert_eq!(ranges(file, Side::Right), vec![(3, 4)]);
}

#[test]
fn a_rename_with_spaces_in_the_names_takes_them_from_the_rename_headers() {
    let diff = parse(
        "diff --git a/my old name.txt b/my new name.txt\n\
         similarity index 100%\n\
         rename from my old name.txt\n\
         rename to my new name.txt\n",
    );
    let file = only_file(&diff);
    assert_eq!(file.path, "my new name.txt");
    assert_eq!(file.previous_path.as_deref(), Some("my old name.txt"));
}

#[test]
fn a_copy_is_recorded_with_its_source() {
    let diff = parse(
        "diff --git a/src/one.c b/src/two.c\n\
         similarity index 90%\n\
         copy from src/one.c\n\
         copy to src/two.c\n\
         index 1111111..2222222 100644\n\
         --- a/src/one.c\n\
         +++ b/src/two.c\n\
         @@ -1 +1 @@\n\
         -int one;\n\
         +int two;\n",
    );
    let file = only_file(&diff);
    assert_eq!(file.change, ChangeKind::Copied);
    assert_eq!(file.path, "src/two.c");
    assert_eq!(file.previous_path.as_deref(), Some("src/one.c"));
    assert_eq!(file.similarity, Some(90));
}

#[test]
fn a_new_file_has_only_a_new_side() {
    let diff = parse(
        "diff --git a/new.txt b/new.txt\n\
         new file mode 100755\n\
         index 0000000..2222222\n\
         --- /dev/null\n\
         +++ b/new.txt\n\
         @@ -0,0 +1,2 @@\n\
         +#!/bin/sh\n\
         +echo hi\n",
    );
    let file = only_file(&diff);
    assert_eq!(file.change, ChangeKind::Added);
    assert_eq!(file.path, "new.txt");
    assert_eq!(file.old_path(), None);
    assert_eq!(
        (file.old_mode, file.new_mode),
        (None, Some(FileMode(0o100_755)))
    );
    assert!(file.new_mode.unwrap().is_executable());
    assert_eq!(ranges(file, Side::Left), vec![]);
    assert_eq!(ranges(file, Side::Right), vec![(1, 2)]);
}

#[test]
fn a_new_empty_file_has_no_hunks() {
    let diff = parse(
        "diff --git a/empty b/empty\n\
         new file mode 100644\n\
         index 0000000..e69de29\n",
    );
    let file = only_file(&diff);
    assert_eq!(file.change, ChangeKind::Added);
    assert_eq!(file.path, "empty");
    assert!(file.hunks.is_empty());
}

#[test]
fn a_deleted_file_has_only_an_old_side_and_keeps_its_old_path() {
    let diff = parse(
        "diff --git a/gone.txt b/gone.txt\n\
         deleted file mode 100644\n\
         index 2222222..0000000\n\
         --- a/gone.txt\n\
         +++ /dev/null\n\
         @@ -1,2 +0,0 @@\n\
         -one\n\
         -two\n",
    );
    let file = only_file(&diff);
    assert_eq!(file.change, ChangeKind::Deleted);
    assert_eq!(file.path, "gone.txt");
    assert_eq!(file.new_path(), None);
    assert_eq!(
        (file.old_mode, file.new_mode),
        (Some(FileMode(0o100_644)), None)
    );
    assert_eq!(ranges(file, Side::Left), vec![(1, 2)]);
    assert_eq!(ranges(file, Side::Right), vec![]);
}

#[test]
fn binary_files_are_in_the_diff_without_lines() {
    let diff = parse(
        "diff --git a/logo.png b/logo.png\n\
         index 1111111..2222222 100644\n\
         Binary files a/logo.png and b/logo.png differ\n\
         diff --git a/new.bin b/new.bin\n\
         new file mode 100644\n\
         index 0000000..3333333\n\
         GIT binary patch\n\
         literal 12\n\
         TcmZQzWMXDvWn>0(00ICC\n\
         \n\
         literal 0\n\
         HcmV?d00001\n\
         \n\
         diff --git a/after.txt b/after.txt\n\
         --- a/after.txt\n\
         +++ b/after.txt\n\
         @@ -1 +1 @@\n\
         -a\n\
         +b\n",
    );
    assert_eq!(diff.len(), 3);
    let logo = diff.file("logo.png").unwrap();
    assert!(logo.binary);
    assert_eq!(logo.change, ChangeKind::Modified);
    assert!(logo.hunks.is_empty());
    let new = diff.file("new.bin").unwrap();
    assert!(new.binary);
    assert_eq!(new.change, ChangeKind::Added);
    assert_eq!(diff.file("after.txt").unwrap().hunks.len(), 1);
}

#[test]
fn a_mode_only_change_has_modes_and_no_hunks() {
    let diff = parse(
        "diff --git a/run.sh b/run.sh\n\
         old mode 100644\n\
         new mode 100755\n",
    );
    let file = only_file(&diff);
    assert_eq!(file.change, ChangeKind::ModeOnly);
    assert_eq!(file.old_mode.unwrap().to_string(), "100644");
    assert_eq!(file.new_mode.unwrap().to_string(), "100755");
    assert!(file.hunks.is_empty());
}

#[test]
fn a_mode_change_with_content_is_a_modification() {
    let diff = parse(
        "diff --git a/run.sh b/run.sh\n\
         old mode 100644\n\
         new mode 100755\n\
         index 1111111..2222222\n\
         --- a/run.sh\n\
         +++ b/run.sh\n\
         @@ -1 +1 @@\n\
         -echo a\n\
         +echo b\n",
    );
    let file = only_file(&diff);
    assert_eq!(file.change, ChangeKind::Modified);
    assert_ne!(file.old_mode, file.new_mode);
}

#[test]
fn no_newline_markers_attach_to_the_line_before() {
    let diff = parse(
        "diff --git a/x b/x\n\
         --- a/x\n\
         +++ b/x\n\
         @@ -1,2 +1,2 @@\n\
         \x20keep\n\
         -old\n\
         \\ No newline at end of file\n\
         +new\n\
         \\ No newline at end of file\n",
    );
    assert_eq!(
        lines_of(only_file(&diff)),
        vec![
            (LineKind::Context, Some(1), Some(1), "keep", false),
            (LineKind::Removed, Some(2), None, "old", true),
            (LineKind::Added, None, Some(2), "new", true),
        ]
    );
}

#[test]
fn a_context_line_without_newline_ends_the_hunk() {
    let diff = parse(
        "diff --git a/x b/x\n\
         --- a/x\n\
         +++ b/x\n\
         @@ -1,2 +1,3 @@\n\
         +added\n\
         \x20a\n\
         \x20last\n\
         \\ No newline at end of file\n",
    );
    let lines = lines_of(only_file(&diff));
    assert_eq!(
        lines[2],
        (LineKind::Context, Some(2), Some(3), "last", true)
    );
}

#[test]
fn carriage_returns_are_content() {
    let diff = parse(
        "diff --git a/win.txt b/win.txt\n\
         --- a/win.txt\n\
         +++ b/win.txt\n\
         @@ -1,2 +1,2 @@\n\
         \x20first\r\n\
         -second\r\n\
         +second, changed\r\n",
    );
    assert_eq!(
        lines_of(only_file(&diff)),
        vec![
            (LineKind::Context, Some(1), Some(1), "first\r", false),
            (LineKind::Removed, Some(2), None, "second\r", false),
            (LineKind::Added, None, Some(2), "second, changed\r", false),
        ]
    );
}

#[test]
fn a_diff_saved_with_crlf_line_endings_still_parses() {
    let text = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n".replace('\n', "\r\n");
    let diff = parse(&text);
    let file = only_file(&diff);
    assert_eq!(file.path, "x");
    assert_eq!(lines_of(file)[1].3, "b\r");
}

#[test]
fn quoted_paths_are_decoded() {
    let diff = parse(
        "diff --git \"a/\\303\\244 \\\"q\\\"\\t.txt\" \"b/\\303\\244 \\\"q\\\"\\t.txt\"\n\
         new file mode 100644\n\
         index 0000000..1111111\n\
         --- /dev/null\n\
         +++ \"b/\\303\\244 \\\"q\\\"\\t.txt\"\n\
         @@ -0,0 +1 @@\n\
         +x\n\
         diff --git \"a/\\346\\227\\245\\346\\234\\254.md\" \"b/\\346\\227\\245\\346\\234\\254.md\"\n\
         old mode 100644\n\
         new mode 100755\n",
    );
    let paths: Vec<_> = diff.files().iter().map(|file| file.path.as_str()).collect();
    assert_eq!(paths, ["ä \"q\"\t.txt", "日本.md"]);
}

#[test]
fn unquoted_unicode_paths_and_paths_with_spaces_are_read() {
    let diff = parse(
        "diff --git a/dir with space/ä.txt b/dir with space/ä.txt\n\
         index 1111111..2222222 100644\n\
         --- a/dir with space/ä.txt\t\n\
         +++ b/dir with space/ä.txt\t\n\
         @@ -1 +1 @@\n\
         -a\n\
         +b\n\
         diff --git a/two words b/two words\n\
         old mode 100644\n\
         new mode 100755\n",
    );
    assert!(diff.file("dir with space/ä.txt").is_some());
    assert!(diff.file("two words").is_some());
}

#[test]
fn a_plain_unified_diff_without_git_headers_is_read() {
    let diff = parse(
        "--- a/x.txt\t2024-01-01 00:00:00.000000000 +0000\n\
         +++ b/x.txt\t2024-01-02 00:00:00.000000000 +0000\n\
         @@ -1 +1 @@\n\
         -a\n\
         +b\n\
         --- /dev/null\n\
         +++ b/y.txt\n\
         @@ -0,0 +1 @@\n\
         +new\n",
    );
    assert_eq!(diff.file("x.txt").unwrap().change, ChangeKind::Modified);
    assert_eq!(diff.file("y.txt").unwrap().change, ChangeKind::Added);
}

#[test]
fn no_prefix_and_mnemonic_prefix_diffs_keep_the_right_paths() {
    let no_prefix =
        parse("diff --git src/x.rs src/x.rs\n--- src/x.rs\n+++ src/x.rs\n@@ -1 +1 @@\n-a\n+b\n");
    assert!(no_prefix.file("src/x.rs").is_some());
    let mnemonic = parse(
        "diff --git i/src/x.rs w/src/x.rs\n--- i/src/x.rs\n+++ w/src/x.rs\n@@ -1 +1 @@\n-a\n+b\n",
    );
    assert!(mnemonic.file("src/x.rs").is_some());
}

#[test]
fn a_type_change_shown_as_delete_plus_add_is_one_file() {
    let diff = parse(
        "diff --git a/link b/link\n\
         deleted file mode 100644\n\
         index 1111111..0000000\n\
         --- a/link\n\
         +++ /dev/null\n\
         @@ -1 +0,0 @@\n\
         -target contents\n\
         diff --git a/link b/link\n\
         new file mode 120000\n\
         index 0000000..2222222\n\
         --- /dev/null\n\
         +++ b/link\n\
         @@ -0,0 +1 @@\n\
         +target\n\
         \\ No newline at end of file\n",
    );
    let file = only_file(&diff);
    assert_eq!(file.change, ChangeKind::TypeChanged);
    assert_eq!(file.old_mode, Some(FileMode(0o100_644)));
    assert!(file.new_mode.unwrap().is_symlink());
    assert_eq!(ranges(file, Side::Left), vec![(1, 1)]);
    assert_eq!(ranges(file, Side::Right), vec![(1, 1)]);
}

#[test]
fn whitespace_damaged_empty_context_lines_count_as_context() {
    let diff = parse("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n");
    let lines = lines_of(only_file(&diff));
    assert_eq!(lines[1], (LineKind::Context, Some(2), Some(2), "", false));
}

#[test]
fn trailing_blank_lines_after_the_last_file_are_tolerated() {
    let diff = parse("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n\n\n");
    assert_eq!(only_file(&diff).hunks[0].lines.len(), 2);
}

// --- GitHub's per-file entries -------------------------------------------

fn entry<'a>(
    path: &'a str,
    previous_path: Option<&'a str>,
    status: &str,
    file_patch: Option<&'a str>,
) -> ChangedFile<'a> {
    ChangedFile {
        path,
        previous_path,
        change: ChangeKind::from_github_status(status).expect("a documented status"),
        patch: file_patch,
    }
}

#[test]
fn github_entries_build_the_same_model() {
    let diff = PullRequestDiff::from_changed_files([
        entry(
            "a.txt",
            None,
            "modified",
            Some("@@ -1,2 +1,2 @@\n-a\n+b\n c"),
        ),
        entry("new name.txt", Some("old name.txt"), "renamed", None),
        entry("gone.txt", None, "removed", Some("@@ -1 +0,0 @@\n-bye")),
        entry("logo.png", None, "added", None),
        entry("run.sh", None, "changed", None),
        entry(
            "mode-and-content.sh",
            None,
            "changed",
            Some("@@ -1 +1 @@\n-a\n+b"),
        ),
    ])
    .unwrap();
    let a = diff.file("a.txt").unwrap();
    assert_eq!(a.hunks[0].lines.len(), 3);
    // No final newline in a GitHub patch is not "no newline at end of file".
    assert!(!a.hunks[0].lines[2].no_newline_at_end);
    let renamed = diff.file("new name.txt").unwrap();
    assert_eq!(renamed.change, ChangeKind::Renamed);
    assert_eq!(renamed.old_path(), Some("old name.txt"));
    assert!(renamed.content_omitted);
    assert_eq!(diff.file("gone.txt").unwrap().change, ChangeKind::Deleted);
    assert!(diff.file("logo.png").unwrap().content_omitted);
    assert_eq!(diff.file("run.sh").unwrap().change, ChangeKind::ModeOnly);
    assert_eq!(
        diff.file("mode-and-content.sh").unwrap().change,
        ChangeKind::Modified
    );
}

#[test]
fn github_statuses_map_to_change_kinds() {
    for (status, kind) in [
        ("added", ChangeKind::Added),
        ("removed", ChangeKind::Deleted),
        ("modified", ChangeKind::Modified),
        ("renamed", ChangeKind::Renamed),
        ("copied", ChangeKind::Copied),
        ("changed", ChangeKind::ModeOnly),
        ("unchanged", ChangeKind::Modified),
    ] {
        assert_eq!(ChangeKind::from_github_status(status), Some(kind));
    }
    assert_eq!(ChangeKind::from_github_status("exploded"), None);
}

#[test]
fn a_malformed_github_patch_names_the_file_and_its_line() {
    let error = PullRequestDiff::from_changed_files([
        entry("ok.txt", None, "modified", Some("@@ -1 +1 @@\n-a\n+b")),
        entry("bad.txt", None, "modified", Some("@@ -1,3 +1,3 @@\n a\n?b")),
    ])
    .unwrap_err();
    assert_eq!(error.line(), 3);
    assert!(matches!(&error, DiffError::Patch { path, .. } if path == "bad.txt"));
}

#[test]
fn a_path_listed_twice_is_an_error() {
    let error = PullRequestDiff::from_changed_files([
        entry("a", None, "modified", None),
        entry("a", None, "modified", None),
    ])
    .unwrap_err();
    assert_eq!(
        error,
        DiffError::DuplicateChangedFile {
            path: "a".into(),
            first_entry: 1,
            entry: 2
        }
    );
    let error = parse_error(
        "diff --git a/a b/a\nold mode 100644\nnew mode 100755\n\
         diff --git a/a b/a\nold mode 100755\nnew mode 100644\n",
    );
    assert_eq!(
        error,
        DiffError::DuplicatePath {
            path: "a".into(),
            first_line: 1,
            line: 4
        }
    );
}

// --- Malformed input ------------------------------------------------------

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

/// Every malformed input gets an error naming its line and what was expected;
/// the snapshot is the list of messages an operator would read.
#[test]
fn malformed_diffs_get_errors_that_name_the_line() {
    let cases: &[(&str, &str)] = &[
        ("not a diff", "<html>rate limited</html>\n"),
        ("one file's patch", "@@ -1 +1 @@\n-a\n+b\n"),
        (
            "truncated hunk",
            "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n",
        ),
        (
            "too many added lines",
            "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n+b\n+c\n",
        ),
        ("bad hunk header", "--- a/x\n+++ b/x\n@@ -1,a +1 @@\n"),
        ("zero start with lines", "--- a/x\n+++ b/x\n@@ -0,2 +1 @@\n"),
        ("huge range", "--- a/x\n+++ b/x\n@@ -4294967295,2 +1 @@\n"),
        (
            "bad hunk line",
            "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n*b\n",
        ),
        (
            "hunks out of order",
            "--- a/x\n+++ b/x\n@@ -5 +5 @@\n-a\n+b\n@@ -1 +1 @@\n-a\n+b\n",
        ),
        (
            "marker first",
            "--- a/x\n+++ b/x\n@@ -1 +1 @@\n\\ No newline at end of file\n",
        ),
        (
            "line after marker",
            "--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n-a\n\\ No newline at end of file\n-b\n+c\n",
        ),
        (
            "minus without plus",
            "diff --git a/x b/x\n--- a/x\n@@ -1 +1 @@\n",
        ),
        ("rename from only", "diff --git a/x b/y\nrename from x\n"),
        (
            "bad mode",
            "diff --git a/x b/x\nold mode 10064z\nnew mode 100755\n",
        ),
        (
            "bad similarity",
            "diff --git a/x b/y\nsimilarity index 120%\n",
        ),
        ("bad quoting", "diff --git a/x b/x\n--- \"a/x\n+++ b/x\n"),
        (
            "unreadable diff --git line",
            "diff --git a/o ld b/n ew\nold mode 100644\nnew mode 100755\n",
        ),
        ("both /dev/null", "--- /dev/null\n+++ /dev/null\n"),
        ("combined diff", "diff --cc file.c\nindex 1,2..3\n"),
        (
            "combined hunk",
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@@ -1 -1 +1 @@@\n",
        ),
        (
            "junk after a file",
            "diff --git a/x b/x\nold mode 100644\nnew mode 100755\nsomething else\n",
        ),
        (
            "bad binary payload",
            "diff --git a/x b/x\nGIT binary patch\nliteral 1\nnot base85 !\n",
        ),
    ];
    let mut report = String::new();
    for (name, text) in cases {
        writeln!(report, "{name}:\n  {}", parse_error(text)).unwrap();
    }
    insta::assert_snapshot!(report);
}
