//! The anchoring rules, one test per rule, on hand-written diffs.

use std::fmt::Write as _;

use review_core::anchor::{
    CommentLocation, NoLinesCause, NotInPrReason, OutsideDiffReason, PathProblem, Side, Verdict,
    anchor, nearest_commentable_ranges,
};
use review_core::diff::{ChangeKind, ChangedFile, LineRange, PullRequestDiff};

/// `src/a.rs` with two hunks: old 10-13 / new 10-14, and old 29-32 / new 30-33.
fn two_hunks() -> PullRequestDiff {
    PullRequestDiff::parse(
        "diff --git a/src/a.rs b/src/a.rs\n\
         --- a/src/a.rs\n\
         +++ b/src/a.rs\n\
         @@ -10,4 +10,5 @@\n\
         \x20a\n\
         -b\n\
         +b2\n\
         +b3\n\
         \x20c\n\
         \x20d\n\
         @@ -29,4 +30,4 @@\n\
         \x20e\n\
         -f\n\
         +f2\n\
         \x20g\n\
         \x20h\n",
    )
    .unwrap()
}

/// `near.rs` with new-side hunks 10-12 and 17-19: lines 13-16 lie between.
fn close_hunks() -> PullRequestDiff {
    PullRequestDiff::parse(
        "--- a/near.rs\n+++ b/near.rs\n\
         @@ -10,3 +10,3 @@\n a\n-b\n+B\n c\n\
         @@ -17,3 +17,3 @@\n d\n-e\n+E\n f\n",
    )
    .unwrap()
}

/// Files of every kind that has no lines on some side.
fn special_files() -> PullRequestDiff {
    PullRequestDiff::parse(
        "diff --git a/gone.txt b/gone.txt\n\
         deleted file mode 100644\n\
         --- a/gone.txt\n\
         +++ /dev/null\n\
         @@ -1,3 +0,0 @@\n\
         -one\n\
         -two\n\
         -three\n\
         diff --git a/new.txt b/new.txt\n\
         new file mode 100644\n\
         --- /dev/null\n\
         +++ b/new.txt\n\
         @@ -0,0 +1,2 @@\n\
         +one\n\
         +two\n\
         diff --git a/logo.png b/logo.png\n\
         Binary files a/logo.png and b/logo.png differ\n\
         diff --git a/run.sh b/run.sh\n\
         old mode 100644\n\
         new mode 100755\n\
         diff --git a/old/name.rs b/new/name.rs\n\
         similarity index 90%\n\
         rename from old/name.rs\n\
         rename to new/name.rs\n\
         --- a/old/name.rs\n\
         +++ b/new/name.rs\n\
         @@ -5,3 +5,3 @@\n\
         \x20keep\n\
         -old\n\
         +new\n\
         \x20keep\n\
         diff --git a/grow.txt b/grow.txt\n\
         --- a/grow.txt\n\
         +++ b/grow.txt\n\
         @@ -3,0 +4,2 @@\n\
         +x\n\
         +y\n",
    )
    .unwrap()
}

fn at(path: &str, line: u32) -> CommentLocation {
    CommentLocation::new(path, line)
}

fn inline(path: &str, line: u32, start_line: Option<u32>) -> Verdict {
    Verdict::Inline {
        path: path.into(),
        line,
        start_line,
    }
}

fn moved(path: &str, line: u32, start_line: Option<u32>) -> Verdict {
    Verdict::Moved {
        path: path.into(),
        line,
        start_line,
    }
}

fn outside(verdict: &Verdict) -> &OutsideDiffReason {
    match verdict {
        Verdict::OutsideDiff { reason } => reason,
        other => panic!("expected outside_diff, got {other:?}"),
    }
}

fn not_in_pr(verdict: &Verdict) -> &NotInPrReason {
    match verdict {
        Verdict::NotInPr { reason } => reason,
        other => panic!("expected not_in_pr, got {other:?}"),
    }
}

#[test]
fn right_lines_inside_a_hunk_are_inline() {
    let diff = two_hunks();
    for line in (10..=14).chain(30..=33) {
        assert_eq!(
            anchor(&diff, &at("src/a.rs", line)),
            inline("src/a.rs", line, None)
        );
    }
}

#[test]
fn left_lines_inside_a_hunk_are_inline_with_old_numbers() {
    let diff = two_hunks();
    for line in (10..=13).chain(29..=32) {
        let location = at("src/a.rs", line).on_side(Side::Left);
        assert_eq!(anchor(&diff, &location), inline("src/a.rs", line, None));
    }
    // New line 14 exists, old line 14 is not in the first hunk: it moves back.
    let location = at("src/a.rs", 14).on_side(Side::Left);
    assert_eq!(anchor(&diff, &location), moved("src/a.rs", 13, None));
}

#[test]
fn lines_within_three_of_one_hunk_move_to_its_nearest_line() {
    let diff = two_hunks();
    for line in 7..=9 {
        assert_eq!(
            anchor(&diff, &at("src/a.rs", line)),
            moved("src/a.rs", 10, None)
        );
    }
    for line in 15..=17 {
        assert_eq!(
            anchor(&diff, &at("src/a.rs", line)),
            moved("src/a.rs", 14, None)
        );
    }
    assert_eq!(
        anchor(&diff, &at("src/a.rs", 36)),
        moved("src/a.rs", 33, None)
    );
    assert_eq!(
        anchor(&diff, &at("src/a.rs", 1).on_side(Side::Left)).name(),
        "outside_diff"
    );
}

#[test]
fn lines_farther_than_three_from_every_hunk_are_outside_the_diff() {
    let diff = two_hunks();
    for line in [1, 6, 18, 25, 26, 37, 1000] {
        let verdict = anchor(&diff, &at("src/a.rs", line));
        assert!(
            matches!(outside(&verdict), OutsideDiffReason::NotNearAHunk { .. }),
            "line {line}: {verdict:?}"
        );
    }
    assert_eq!(
        outside(&anchor(&diff, &at("src/a.rs", 18))),
        &OutsideDiffReason::NotNearAHunk {
            side: Side::Right,
            nearest: LineRange {
                first: 10,
                last: 14
            }
        }
    );
    // 25 is 5 lines from the second hunk and 11 from the first.
    assert_eq!(
        outside(&anchor(&diff, &at("src/a.rs", 25))),
        &OutsideDiffReason::NotNearAHunk {
            side: Side::Right,
            nearest: LineRange {
                first: 30,
                last: 33
            }
        }
    );
}

#[test]
fn lines_within_three_of_two_hunks_are_ambiguous() {
    let diff = close_hunks();
    assert_eq!(
        anchor(&diff, &at("near.rs", 13)),
        moved("near.rs", 12, None)
    );
    assert_eq!(
        outside(&anchor(&diff, &at("near.rs", 14))),
        &OutsideDiffReason::BetweenHunks {
            side: Side::Right,
            before: LineRange {
                first: 10,
                last: 12
            },
            after: LineRange {
                first: 17,
                last: 19
            }
        }
    );
    assert!(matches!(
        outside(&anchor(&diff, &at("near.rs", 15))),
        OutsideDiffReason::BetweenHunks { .. }
    ));
    assert_eq!(
        anchor(&diff, &at("near.rs", 16)),
        moved("near.rs", 17, None)
    );
}

#[test]
fn a_range_inside_one_hunk_is_inline() {
    let diff = two_hunks();
    let location = at("src/a.rs", 14).with_start_line(11);
    assert_eq!(anchor(&diff, &location), inline("src/a.rs", 14, Some(11)));
    let location = at("src/a.rs", 13).with_start_line(10).on_side(Side::Left);
    assert_eq!(anchor(&diff, &location), inline("src/a.rs", 13, Some(10)));
}

#[test]
fn a_range_of_one_line_drops_its_start() {
    // GitHub answers 422 "start line must precede the end line" otherwise.
    let diff = two_hunks();
    let location = at("src/a.rs", 12).with_start_line(12);
    assert_eq!(anchor(&diff, &location), inline("src/a.rs", 12, None));
}

#[test]
fn a_reversed_range_is_swapped_and_reported_moved() {
    let diff = two_hunks();
    let location = at("src/a.rs", 11).with_start_line(13);
    assert_eq!(anchor(&diff, &location), moved("src/a.rs", 13, Some(11)));
}

#[test]
fn a_range_whose_start_leaves_the_hunk_is_clamped_to_its_first_line() {
    let diff = two_hunks();
    let location = at("src/a.rs", 32).with_start_line(12);
    assert_eq!(anchor(&diff, &location), moved("src/a.rs", 32, Some(30)));
    let location = at("src/a.rs", 12).with_start_line(2);
    assert_eq!(anchor(&diff, &location), moved("src/a.rs", 12, Some(10)));
    // Clamped onto `line` itself: a single-line comment.
    let location = at("src/a.rs", 30).with_start_line(20);
    assert_eq!(anchor(&diff, &location), moved("src/a.rs", 30, None));
}

#[test]
fn a_moved_range_keeps_a_start_that_is_still_before_it() {
    let diff = two_hunks();
    let location = at("src/a.rs", 16).with_start_line(12);
    assert_eq!(anchor(&diff, &location), moved("src/a.rs", 14, Some(12)));
    let location = at("src/a.rs", 8).with_start_line(5);
    assert_eq!(anchor(&diff, &location), moved("src/a.rs", 10, None));
}

#[test]
fn line_zero_is_outside_the_diff() {
    let diff = two_hunks();
    assert_eq!(
        outside(&anchor(&diff, &at("src/a.rs", 0))),
        &OutsideDiffReason::InvalidLine
    );
}

#[test]
fn sides_without_lines_take_no_comments() {
    let diff = special_files();
    let cause = |path: &str, line: u32, side: Side| match outside(&anchor(
        &diff,
        &at(path, line).on_side(side),
    )) {
        OutsideDiffReason::NoCommentableLines { cause, .. } => *cause,
        other => panic!("{path} {side}: {other:?}"),
    };
    assert_eq!(cause("gone.txt", 1, Side::Right), NoLinesCause::DeletedFile);
    assert_eq!(cause("new.txt", 1, Side::Left), NoLinesCause::AddedFile);
    assert_eq!(cause("logo.png", 1, Side::Right), NoLinesCause::Binary);
    assert_eq!(cause("logo.png", 1, Side::Left), NoLinesCause::Binary);
    assert_eq!(
        cause("run.sh", 1, Side::Right),
        NoLinesCause::NoContentChange
    );
    assert_eq!(
        cause("grow.txt", 4, Side::Left),
        NoLinesCause::NoLinesOnSide
    );
    // The other sides do take comments.
    let left = at("gone.txt", 3).on_side(Side::Left);
    assert_eq!(anchor(&diff, &left), inline("gone.txt", 3, None));
    assert_eq!(anchor(&diff, &at("new.txt", 2)), inline("new.txt", 2, None));
    assert_eq!(
        anchor(&diff, &at("grow.txt", 5)),
        inline("grow.txt", 5, None)
    );
}

#[test]
fn omitted_github_content_takes_no_comments() {
    let diff = PullRequestDiff::from_changed_files([ChangedFile {
        path: "huge.json",
        previous_path: None,
        change: ChangeKind::Modified,
        patch: None,
    }])
    .unwrap();
    assert_eq!(
        outside(&anchor(&diff, &at("huge.json", 1))),
        &OutsideDiffReason::NoCommentableLines {
            side: Side::Right,
            cause: NoLinesCause::ContentOmitted
        }
    );
}

#[test]
fn renamed_files_take_comments_on_their_new_path_on_both_sides() {
    let diff = special_files();
    assert_eq!(
        anchor(&diff, &at("new/name.rs", 6)),
        inline("new/name.rs", 6, None)
    );
    let left = at("new/name.rs", 6).on_side(Side::Left);
    assert_eq!(anchor(&diff, &left), inline("new/name.rs", 6, None));
    assert_eq!(
        not_in_pr(&anchor(&diff, &at("old/name.rs", 6).on_side(Side::Left))),
        &NotInPrReason::PreviousPathOf {
            path: "new/name.rs".into(),
            change: ChangeKind::Renamed
        }
    );
}

#[test]
fn paths_are_normalised_before_lookup() {
    let diff = two_hunks();
    assert_eq!(
        anchor(&diff, &at("./src/a.rs", 11)),
        inline("src/a.rs", 11, None)
    );
    assert_eq!(
        anchor(&diff, &at("src//./a.rs", 11)),
        inline("src/a.rs", 11, None)
    );
}

#[test]
fn unknown_and_unsafe_paths_are_not_in_the_pull_request() {
    let diff = two_hunks();
    assert_eq!(
        not_in_pr(&anchor(&diff, &at("src/b.rs", 11))),
        &NotInPrReason::NotChanged {
            path: "src/b.rs".into()
        }
    );
    for (path, problem) in [
        ("/src/a.rs", PathProblem::Absolute),
        ("src/../src/a.rs", PathProblem::ParentSegment),
        ("src\\a.rs", PathProblem::Backslash),
        ("", PathProblem::Empty),
        (
            "src/a.rs\0",
            PathProblem::ControlCharacter {
                code_point: 0,
                byte: 8,
            },
        ),
    ] {
        assert_eq!(
            not_in_pr(&anchor(&diff, &at(path, 11))),
            &NotInPrReason::UnsafePath(problem),
            "{path:?}"
        );
    }
}

#[test]
fn stray_white_space_around_a_path_is_forgiven_and_odd_misses_say_why() {
    let diff = two_hunks();
    for path in [" src/a.rs", "src/a.rs\n", "\tsrc/a.rs "] {
        assert_eq!(
            anchor(&diff, &at(path, 11)).target(),
            Some(("src/a.rs", 11, None)),
            "{path:?}"
        );
    }
    assert!(matches!(
        not_in_pr(&anchor(&diff, &at("src/b.rs\n", 11))),
        NotInPrReason::UnsafePath(PathProblem::ControlCharacter { code_point: 10, .. })
    ));
}

#[test]
fn nearest_commentable_ranges_come_nearest_first() {
    let diff = two_hunks();
    let nearest =
        |line, limit| nearest_commentable_ranges(&diff, "src/a.rs", line, Side::Right, limit);
    assert_eq!(
        nearest(26, 5).unwrap(),
        vec![
            LineRange {
                first: 30,
                last: 33
            },
            LineRange {
                first: 10,
                last: 14
            }
        ]
    );
    assert_eq!(
        nearest(18, 1).unwrap(),
        vec![LineRange {
            first: 10,
            last: 14
        }]
    );
    assert!(nearest_commentable_ranges(&diff, "nope.rs", 1, Side::Right, 3).is_err());
    let special = special_files();
    assert_eq!(
        nearest_commentable_ranges(&special, "gone.txt", 1, Side::Right, 3).unwrap(),
        vec![]
    );
}

#[test]
fn locations_and_verdicts_have_github_shaped_json() {
    let location: CommentLocation =
        serde_json::from_str(r#"{"path": "src/a.rs", "line": 12}"#).unwrap();
    assert_eq!(location, at("src/a.rs", 12));
    let location: CommentLocation =
        serde_json::from_str(r#"{"path": "x", "line": 3, "start_line": 1, "side": "LEFT"}"#)
            .unwrap();
    assert_eq!(location, at("x", 3).with_start_line(1).on_side(Side::Left));
    assert!(serde_json::from_str::<Side>(r#""left""#).is_err());
    assert_eq!(serde_json::to_string(&Side::Right).unwrap(), r#""RIGHT""#);

    let diff = two_hunks();
    let verdicts: Vec<Verdict> = [
        at("src/a.rs", 12),
        at("src/a.rs", 16),
        at("src/a.rs", 22),
        at("../x", 1),
    ]
    .iter()
    .map(|location| anchor(&diff, location))
    .collect();
    insta::assert_json_snapshot!(verdicts);
}

/// The reasons are read by operators in the review body and by the agent in
/// the MCP server's corrective errors.
#[test]
fn every_reason_says_what_to_do() {
    let diff = special_files();
    let two = two_hunks();
    let close = close_hunks();
    let cases = [
        (&diff, at("gone.txt", 1)),
        (&diff, at("new.txt", 1).on_side(Side::Left)),
        (&diff, at("logo.png", 1)),
        (&diff, at("run.sh", 1)),
        (&diff, at("grow.txt", 4).on_side(Side::Left)),
        (&diff, at("old/name.rs", 6)),
        (&two, at("src/a.rs", 0)),
        (&two, at("src/a.rs", 22)),
        (&close, at("near.rs", 14)),
        (&two, at("README.md", 1)),
        (&two, at("/etc/passwd", 1)),
        (&two, at("a\tb", 1)),
    ];
    let mut report = String::new();
    for (diff, location) in cases {
        let verdict = anchor(diff, &location);
        let reason = match &verdict {
            Verdict::OutsideDiff { reason } => reason.to_string(),
            Verdict::NotInPr { reason } => reason.to_string(),
            other => panic!("{other:?}"),
        };
        writeln!(
            report,
            "{} {} {}: {}\n  {reason}",
            location.path,
            location.side,
            location.line,
            verdict.name()
        )
        .unwrap();
    }
    insta::assert_snapshot!(report);
}
