//! The anchoring rules, one test per rule.

use review_core::anchor::{CommentLocation, Side, Verdict, anchor};
use review_core::diff::PullRequestDiff;

/// One file, `src/a.rs`, with hunks at new lines 10-14 and 30-33.
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

fn inline(line: u32, start_line: Option<u32>) -> Verdict {
    Verdict::Inline {
        path: "src/a.rs".into(),
        line,
        start_line,
    }
}

fn moved(line: u32, start_line: Option<u32>) -> Verdict {
    Verdict::Moved {
        path: "src/a.rs".into(),
        line,
        start_line,
    }
}

#[test]
fn right_lines_inside_a_hunk_are_inline() {
    let diff = two_hunks();
    for line in 10..=14 {
        assert_eq!(
            anchor(&diff, &CommentLocation::new("src/a.rs", line)),
            inline(line, None)
        );
    }
}

#[test]
fn lines_near_one_hunk_move_onto_it() {
    let diff = two_hunks();
    assert_eq!(
        anchor(&diff, &CommentLocation::new("src/a.rs", 7)),
        moved(10, None)
    );
    assert_eq!(
        anchor(&diff, &CommentLocation::new("./src/a.rs", 17)),
        moved(14, None)
    );
    assert_eq!(
        anchor(&diff, &CommentLocation::new("src/a.rs", 6)).name(),
        "outside_diff"
    );
    assert_eq!(
        anchor(
            &diff,
            &CommentLocation::new("src/a.rs", 9).on_side(Side::Left)
        ),
        moved(10, None)
    );
}
