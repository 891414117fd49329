//! Property tests of the diff model and the anchorer.
//!
//! Random diffs are rendered as git would print them. An independent walk over
//! the raw text (counting `@@ -a,b +c,d @@` and line prefixes, sharing no code
//! with the parser) says which lines are commentable; the anchorer must agree
//! with it exactly, its `moved` targets must themselves be `inline`, and its
//! `outside_diff` reasons must be true of the walk. diffy, an independent
//! parser, must read the same hunks. No input, random or a mutated real diff,
//! may make the parser panic.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use proptest::prelude::*;
use review_core::anchor::{CommentLocation, OutsideDiffReason, Side, Verdict, anchor};
use review_core::diff::{ChangeKind, ChangedFile, LineKind, PullRequestDiff};

// --- Random diffs --------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    Context,
    Add,
    Remove,
}

#[derive(Debug, Clone)]
struct HunkSpec {
    /// Unchanged lines between the previous hunk (or the file start) and this one.
    gap: u32,
    /// The hunk's lines, with their text.
    lines: Vec<(Operation, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileKind {
    Modified,
    Added,
    Deleted,
}

#[derive(Debug, Clone)]
struct FileSpec {
    kind: FileKind,
    hunks: Vec<HunkSpec>,
    /// Whether the last line of the last hunk gets `\ No newline at end of file`.
    no_newline_at_end: bool,
}

/// Line texts that look like diff syntax once prefixed, CRLF content, unicode.
fn line_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,12}",
        Just("-- a/not-a-header".to_owned()),
        Just("++ b/not-a-header".to_owned()),
        Just("@@ -1,2 +1,2 @@".to_owned()),
        Just("diff --git a/x b/x".to_owned()),
        Just("\\ not a marker".to_owned()),
        Just("crlf line\r".to_owned()),
        Just("ünïcödé ✓".to_owned()),
        Just(String::new()),
    ]
}

fn operation() -> impl Strategy<Value = Operation> {
    prop_oneof![
        3 => Just(Operation::Context),
        2 => Just(Operation::Add),
        2 => Just(Operation::Remove),
    ]
}

fn hunk(first: bool) -> impl Strategy<Value = HunkSpec> {
    // git merges hunks that touch, so hunks after the first are at least one
    // unchanged line apart.
    let gap = if first { 0..12_u32 } else { 1..12_u32 };
    (
        gap,
        prop::collection::vec((operation(), line_text()), 1..12),
    )
        .prop_map(|(gap, lines)| HunkSpec { gap, lines })
}

fn file() -> impl Strategy<Value = FileSpec> {
    let modified = (
        hunk(true),
        prop::collection::vec(hunk(false), 0..5),
        any::<bool>(),
    )
        .prop_map(|(first, mut rest, no_newline_at_end)| {
            rest.insert(0, first);
            FileSpec {
                kind: FileKind::Modified,
                hunks: rest,
                no_newline_at_end,
            }
        });
    let whole = |kind: FileKind, operation: Operation| {
        (prop::collection::vec(line_text(), 1..10), any::<bool>()).prop_map(
            move |(texts, no_newline_at_end)| FileSpec {
                kind,
                hunks: vec![HunkSpec {
                    gap: 0,
                    lines: texts.into_iter().map(|text| (operation, text)).collect(),
                }],
                no_newline_at_end,
            },
        )
    };
    prop_oneof![
        6 => modified,
        1 => whole(FileKind::Added, Operation::Add),
        1 => whole(FileKind::Deleted, Operation::Remove),
    ]
}

/// The path of the `index`-th file: some with spaces and non-ASCII letters.
fn path_of(index: usize) -> String {
    match index % 4 {
        0 => format!("src/file{index}.rs"),
        1 => format!("dir {index}/with space.txt"),
        2 => format!("ünï/{index}.md"),
        _ => format!("{index}"),
    }
}

/// Renders files as `git diff` prints them (with `core.quotepath` off).
fn render(files: &[FileSpec]) -> String {
    let mut text = String::new();
    for (index, file) in files.iter().enumerate() {
        let path = path_of(index);
        let tab = if path.contains(' ') { "\t" } else { "" };
        writeln!(text, "diff --git a/{path} b/{path}").unwrap();
        match file.kind {
            FileKind::Modified => {
                writeln!(
                    text,
                    "index 1111111..2222222 100644\n--- a/{path}{tab}\n+++ b/{path}{tab}"
                )
            }
            FileKind::Added => writeln!(
                text,
                "new file mode 100644\nindex 0000000..2222222\n--- /dev/null\n+++ b/{path}{tab}"
            ),
            FileKind::Deleted => writeln!(
                text,
                "deleted file mode 100644\nindex 1111111..0000000\n--- a/{path}{tab}\n+++ /dev/null"
            ),
        }
        .unwrap();
        let (mut old_position, mut new_position) = (1_u32, 1_u32);
        for (hunk_index, hunk) in file.hunks.iter().enumerate() {
            old_position += hunk.gap;
            new_position += hunk.gap;
            let count = |wanted: &[Operation]| {
                u32::try_from(
                    hunk.lines
                        .iter()
                        .filter(|(operation, _)| wanted.contains(operation))
                        .count(),
                )
                .unwrap()
            };
            let old_count = count(&[Operation::Context, Operation::Remove]);
            let new_count = count(&[Operation::Context, Operation::Add]);
            let old_start = if old_count > 0 {
                old_position
            } else {
                old_position - 1
            };
            let new_start = if new_count > 0 {
                new_position
            } else {
                new_position - 1
            };
            writeln!(
                text,
                "@@ -{old_start},{old_count} +{new_start},{new_count} @@ hunk {hunk_index}"
            )
            .unwrap();
            for (operation, line) in &hunk.lines {
                let prefix = match operation {
                    Operation::Context => ' ',
                    Operation::Add => '+',
                    Operation::Remove => '-',
                };
                writeln!(text, "{prefix}{line}").unwrap();
            }
            old_position += old_count;
            new_position += new_count;
        }
        if file.no_newline_at_end {
            text.push_str("\\ No newline at end of file\n");
        }
    }
    text
}

// --- The independent walk ------------------------------------------------

/// What a plain walk over the diff text finds commentable.
#[derive(Default)]
struct Walk {
    /// `(path, side, line)` → the hunk (counted across the diff) it is in.
    commentable: HashMap<(String, Side, u32), usize>,
    /// Every path the diff names.
    paths: HashSet<String>,
}

impl Walk {
    fn of(text: &str) -> Self {
        let mut walk = Self::default();
        let (mut old_path, mut new_path) = (String::new(), String::new());
        let (mut old_left, mut new_left, mut old_line, mut new_line) = (0_u32, 0_u32, 0_u32, 0_u32);
        let mut hunk = 0;
        for line in text.lines() {
            let path = if new_path == "/dev/null" {
                &old_path
            } else {
                &new_path
            };
            if old_left > 0 || new_left > 0 {
                let mut record = |side, number| {
                    walk.commentable.insert((path.clone(), side, number), hunk);
                };
                match line.chars().next() {
                    Some(' ') => {
                        record(Side::Left, old_line);
                        record(Side::Right, new_line);
                        (old_line, new_line, old_left, new_left) =
                            (old_line + 1, new_line + 1, old_left - 1, new_left - 1);
                    }
                    Some('+') => {
                        record(Side::Right, new_line);
                        (new_line, new_left) = (new_line + 1, new_left - 1);
                    }
                    Some('-') => {
                        record(Side::Left, old_line);
                        (old_line, old_left) = (old_line + 1, old_left - 1);
                    }
                    _ => {}
                }
            } else if let Some(name) = line.strip_prefix("--- ") {
                let name = name.trim_end_matches('\t');
                name.strip_prefix("a/")
                    .unwrap_or(name)
                    .clone_into(&mut old_path);
            } else if let Some(name) = line.strip_prefix("+++ ") {
                let name = name.trim_end_matches('\t');
                name.strip_prefix("b/")
                    .unwrap_or(name)
                    .clone_into(&mut new_path);
                let path = if new_path == "/dev/null" {
                    &old_path
                } else {
                    &new_path
                };
                walk.paths.insert(path.clone());
            } else if let Some(ranges) = line.strip_prefix("@@ -") {
                let ranges = ranges.split(" @@").next().unwrap();
                let (old, new) = ranges.split_once(" +").unwrap();
                let split = |range: &str| {
                    let (start, count) = range.split_once(',').unwrap();
                    (start.parse::<u32>().unwrap(), count.parse::<u32>().unwrap())
                };
                (old_line, old_left) = split(old);
                (new_line, new_left) = split(new);
                hunk += 1;
            }
        }
        walk
    }

    fn is_commentable(&self, path: &str, side: Side, line: u32) -> bool {
        self.commentable
            .contains_key(&(path.to_owned(), side, line))
    }

    /// Commentable lines at most `distance` before `line` (nearest first).
    fn before(&self, path: &str, side: Side, line: u32, distance: u32) -> Vec<u32> {
        (line.saturating_sub(distance)..line)
            .rev()
            .filter(|&near| self.is_commentable(path, side, near))
            .collect()
    }

    /// Commentable lines at most `distance` after `line` (nearest first).
    fn after(&self, path: &str, side: Side, line: u32, distance: u32) -> Vec<u32> {
        (line + 1..=line + distance)
            .filter(|&near| self.is_commentable(path, side, near))
            .collect()
    }

    fn has_side(&self, path: &str, side: Side) -> bool {
        self.commentable
            .keys()
            .any(|(other, other_side, _)| other == path && *other_side == side)
    }
}

fn comments(files: usize) -> impl Strategy<Value = Vec<CommentLocation>> {
    let side = prop_oneof![Just(Side::Left), Just(Side::Right)];
    // Mostly files of the diff, sometimes one it does not have.
    let file = prop_oneof![9 => 0..files, 1 => Just(files)];
    prop::collection::vec(
        (file, 0..70_u32, prop::option::of(0..70_u32), side).prop_map(
            |(file, line, start_line, side)| CommentLocation {
                path: path_of(file),
                line,
                start_line,
                side,
            },
        ),
        1..60,
    )
}

fn diff_and_comments() -> impl Strategy<Value = (Vec<FileSpec>, Vec<CommentLocation>)> {
    prop::collection::vec(file(), 1..6).prop_flat_map(|files| {
        let count = files.len();
        (Just(files), comments(count))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// (a) Every `inline` verdict is a line the walk finds commentable (a range
    /// lies in one hunk of the walk), and every line the walk finds is `inline`.
    #[test]
    fn inline_verdicts_agree_with_an_independent_walk((files, comments) in diff_and_comments()) {
        let text = render(&files);
        let diff = PullRequestDiff::parse(&text).map_err(|error| TestCaseError::fail(format!("{error}\n{text}")))?;
        let walk = Walk::of(&text);
        for location in &comments {
            if let Verdict::Inline { path, line, start_line } = anchor(&diff, location) {
                let hunk = walk.commentable.get(&(path.clone(), location.side, line));
                prop_assert!(hunk.is_some(), "{location:?} inline but not in the walk\n{text}");
                if let Some(start) = start_line {
                    prop_assert!(start < line);
                    prop_assert_eq!(walk.commentable.get(&(path.clone(), location.side, start)), hunk);
                }
            }
        }
        for (path, side, line) in walk.commentable.keys() {
            let location = CommentLocation { path: path.clone(), line: *line, start_line: None, side: *side };
            prop_assert_eq!(
                anchor(&diff, &location),
                Verdict::Inline { path: path.clone(), line: *line, start_line: None }
            );
        }
    }

    /// (c) `moved` targets are themselves `inline`, at most 3 lines away; the
    /// other verdicts' reasons are true of the walk.
    #[test]
    fn moved_targets_are_inline_and_reasons_are_true((files, comments) in diff_and_comments()) {
        let text = render(&files);
        let diff = PullRequestDiff::parse(&text).unwrap();
        let walk = Walk::of(&text);
        for location in &comments {
            let verdict = anchor(&diff, location);
            match &verdict {
                Verdict::Inline { .. } => {}
                Verdict::Moved { path, line, start_line } => {
                    let target = CommentLocation {
                        path: path.clone(), line: *line, start_line: *start_line, side: location.side,
                    };
                    prop_assert_eq!(
                        anchor(&diff, &target),
                        Verdict::Inline { path: path.clone(), line: *line, start_line: *start_line }
                    );
                    let reversed = location.start_line.is_some_and(|start| start > location.line);
                    let (path, side, asked) = (&location.path, location.side, location.line);
                    if !reversed && !walk.is_commentable(path, side, asked) {
                        // Exactly one hunk is near, and the move goes to its nearest line.
                        let (before, after) = (walk.before(path, side, asked, 3), walk.after(path, side, asked, 3));
                        prop_assert!(before.is_empty() != after.is_empty(), "{location:?} → {verdict:?}");
                        prop_assert_eq!(Some(line), before.first().or(after.first()));
                    }
                }
                Verdict::OutsideDiff { reason } => match reason {
                    OutsideDiffReason::NoCommentableLines { .. } => {
                        prop_assert!(!walk.has_side(&location.path, location.side));
                    }
                    OutsideDiffReason::InvalidLine => prop_assert_eq!(location.line, 0),
                    OutsideDiffReason::NotNearAHunk { .. } | OutsideDiffReason::BetweenHunks { .. } => {
                        let line = location.start_line.map_or(location.line, |start| start.max(location.line));
                        let (path, side) = (&location.path, location.side);
                        prop_assert!(!walk.is_commentable(path, side, line));
                        let before = !walk.before(path, side, line, 3).is_empty();
                        let after = !walk.after(path, side, line, 3).is_empty();
                        if matches!(reason, OutsideDiffReason::NotNearAHunk { .. }) {
                            prop_assert!(!before && !after, "{location:?}: {reason}");
                        } else {
                            prop_assert!(before && after, "{location:?}: {reason}");
                        }
                    }
                },
                Verdict::NotInPr { .. } => prop_assert!(!walk.paths.contains(&location.path)),
            }
        }
    }

    /// diffy, an independent parser, reads the same hunks and lines.
    #[test]
    fn diffy_reads_the_same_hunks(files in prop::collection::vec(file(), 1..6)) {
        let text = render(&files);
        let ours = PullRequestDiff::parse(&text).unwrap();
        let theirs: Vec<_> = diffy::patch_set::PatchSet::parse(&text, diffy::patch_set::ParseOptions::gitdiff())
            .collect::<Result<_, _>>()
            .map_err(|error| TestCaseError::fail(format!("diffy: {error}")))?;
        prop_assert_eq!(ours.len(), theirs.len());
        for (file, patch) in ours.files().iter().zip(&theirs) {
            let patch = patch.patch().as_text().unwrap();
            prop_assert_eq!(file.hunks.len(), patch.hunks().len());
            for (hunk, their_hunk) in file.hunks.iter().zip(patch.hunks()) {
                let (old, new) = (their_hunk.old_range(), their_hunk.new_range());
                prop_assert_eq!(
                    (hunk.old_start, hunk.old_count, hunk.new_start, hunk.new_count),
                    (
                        u32::try_from(old.start()).unwrap(), u32::try_from(old.len()).unwrap(),
                        u32::try_from(new.start()).unwrap(), u32::try_from(new.len()).unwrap(),
                    )
                );
                let their_lines: Vec<(LineKind, &str)> = their_hunk.lines().iter().map(|line| match line {
                    diffy::Line::Context(text) => (LineKind::Context, *text),
                    diffy::Line::Insert(text) => (LineKind::Added, *text),
                    diffy::Line::Delete(text) => (LineKind::Removed, *text),
                }).map(|(kind, text)| (kind, text.strip_suffix('\n').unwrap_or(text))).collect();
                let our_lines: Vec<(LineKind, &str)> = hunk.lines.iter().map(|line| (line.kind, line.text.as_str())).collect();
                prop_assert_eq!(our_lines, their_lines);
            }
        }
    }

    /// (b) Arbitrary text never makes the parser panic; an error names a line
    /// of the input (or the one just past its end).
    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        check_no_panic(&text);
    }

    /// (b) Text made of diff syntax never makes the parser panic.
    #[test]
    fn diff_like_text_never_panics(
        pieces in prop::collection::vec(prop_oneof![
            Just("diff --git a/x b/x\n"), Just("diff --git \"a/\\303\" b/y\n"), Just("--- a/x\n"),
            Just("+++ b/x\n"), Just("--- /dev/null\n"), Just("+++ /dev/null\n"),
            Just("@@ -1,2 +1,2 @@\n"), Just("@@ -0,0 +1 @@\n"), Just("@@ -4294967295 +1 @@\n"),
            Just(" a\n"), Just("+b\n"), Just("-c\n"), Just("\\ No newline at end of file\n"),
            Just("rename from x\n"), Just("rename to \"y\\t\"\n"), Just("new file mode 100644\n"),
            Just("deleted file mode 100644\n"), Just("old mode 100644\n"), Just("new mode 1007\n"),
            Just("similarity index 50%\n"), Just("GIT binary patch\n"), Just("literal 3\n"),
            Just("zcmV-J0KET+\n"), Just("Binary files a/x and b/x differ\n"), Just("\n"), Just("\r\n"),
            Just("\""), Just("\\"), Just("ä"), Just("@@@ -1 -1 +1 @@@\n"),
        ], 0..40)
    ) {
        check_no_panic(&pieces.concat());
    }

    /// (b) A real diff with random damage never makes the parser panic.
    #[test]
    fn mutated_diffs_never_panic(
        files in prop::collection::vec(file(), 1..4),
        mutations in prop::collection::vec((any::<prop::sample::Index>(), 0..6_u8, any::<char>()), 1..6),
    ) {
        let mut lines: Vec<String> = render(&files).lines().map(str::to_owned).collect();
        for (index, mutation, character) in mutations {
            if lines.is_empty() {
                break;
            }
            let at = index.index(lines.len());
            match mutation {
                0 => { lines.remove(at); }
                1 => { let copy = lines[at].clone(); lines.insert(at, copy); }
                2 => lines[at].insert(0, character),
                3 => lines[at] = lines[at].chars().skip(1).collect(),
                4 => lines[at] = lines[at].replace(|c: char| c.is_ascii_digit(), &character.to_string()),
                _ => lines.truncate(at),
            }
        }
        check_no_panic(&lines.join("\n"));
    }

    /// (b) GitHub patches with arbitrary text never make the builder panic.
    #[test]
    fn arbitrary_patches_never_panic(patch in "(@@ -[0-9]{1,3}(,[0-9]{1,2})? \\+[0-9]{1,3}(,[0-9]{1,2})? @@[a-z ]{0,4}\n|[ +\\-\\\\][a-z]{0,3}\n|[^\n]{0,6}\n){0,20}") {
        let _ = PullRequestDiff::from_changed_files([ChangedFile {
            path: "x",
            previous_path: None,
            change: ChangeKind::Modified,
            patch: Some(&patch),
        }]);
    }
}

fn check_no_panic(text: &str) {
    match PullRequestDiff::parse(text) {
        Ok(diff) => {
            // Whatever parsed must anchor without panicking too.
            for file in diff.files() {
                for line in [0, 1, 2, 5, u32::MAX] {
                    for side in [Side::Left, Side::Right] {
                        let location = CommentLocation::new(file.path.clone(), line)
                            .with_start_line(1)
                            .on_side(side);
                        let _ = anchor(&diff, &location);
                    }
                }
            }
        }
        Err(error) => {
            let line_count = text.split('\n').count();
            assert!(
                (1..=line_count + 1).contains(&error.line()),
                "{error} names a line outside the input's {line_count} lines"
            );
        }
    }
}
