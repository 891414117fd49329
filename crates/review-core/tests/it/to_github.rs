//! Findings → GitHub create-review payload, against a real diff.

use review_core::anchor::Verdict;
use review_core::diff::PullRequestDiff;
use review_core::findings::{self, github::to_review_payload};
use review_core::footer::{self, ReviewId, ThreadId};
use uuid::Uuid;

use crate::fixture;

const REVIEW: u128 = 0xAAAA_0000_0000_4000_8000_0000_0000_0001;

fn convert(findings_fixture: &str) -> findings::github::Conversion {
    let validation = findings::validate(fixture(findings_fixture).as_bytes());
    assert!(validation.is_valid(), "{:?}", validation.errors);
    let diff = PullRequestDiff::parse(&fixture("diffs/small.diff")).unwrap();
    let mut next = 0_u128;
    to_review_payload(
        &validation.findings.unwrap(),
        &diff,
        ReviewId(Uuid::from_u128(REVIEW)),
        || {
            next += 1;
            ThreadId(Uuid::from_u128(
                0xBBBB_0000_0000_4000_8000_0000_0000_0000 + next,
            ))
        },
    )
}

#[test]
fn every_finding_is_inline_moved_or_in_the_body() {
    let conversion = convert("findings/mixed.json");
    let names: Vec<&str> = conversion.verdicts.iter().map(Verdict::name).collect();
    assert_eq!(
        names,
        ["inline", "moved", "outside_diff", "not_in_pr", "inline"]
    );
    let payload = &conversion.payload;
    assert_eq!(payload.comments.len(), 3);
    assert_eq!(
        payload.commit_id,
        "0123456789abcdef0123456789abcdef01234567"
    );
    // The moved comment sits on the last line of the hunk and says where it was aimed.
    let moved = &payload.comments[1];
    assert_eq!((moved.path.as_str(), moved.line), ("path/to/file.ts", 45));
    assert!(moved.body.starts_with("_Aimed at line 48 of this file"));
    // Outside-the-diff findings are in the body with file and line.
    assert!(payload.body.contains("### Outside the diff"));
    assert!(
        payload
            .body
            .contains("`path/to/file.ts` line 120 (RIGHT, not part of the diff)")
    );
    assert!(
        payload
            .body
            .contains("`docs/README.md` line 3 (RIGHT, not a file this pull request changes)")
    );
    // One review id everywhere, a distinct thread per comment, no planted ids.
    let bodies = std::iter::once(payload.body.as_str())
        .chain(payload.comments.iter().map(|comment| comment.body.as_str()));
    let review_ids = footer::distinct_review_ids(bodies);
    assert_eq!(
        review_ids.into_iter().collect::<Vec<_>>(),
        [ReviewId(Uuid::from_u128(REVIEW))]
    );
    let threads: std::collections::BTreeSet<_> = std::iter::once(&payload.body)
        .chain(payload.comments.iter().map(|comment| &comment.body))
        .map(|body| footer::own_footer(body).thread.unwrap())
        .collect();
    assert_eq!(threads.len(), 4);
}

#[test]
fn payload_snapshot() {
    let conversion = convert("findings/mixed.json");
    insta::assert_json_snapshot!(conversion.payload);
}

#[test]
fn review_body_snapshot() {
    let conversion = convert("findings/mixed.json");
    insta::assert_snapshot!(conversion.payload.body);
}

#[test]
fn a_finding_too_long_for_an_inline_comment_goes_whole_to_the_body() {
    let mut value: serde_json::Value =
        serde_json::from_str(&fixture("findings/mixed.json")).unwrap();
    let description = format!("{}END-OF-DESCRIPTION", "This matters. ".repeat(6_000));
    value["line_comments"][0]["description"] = serde_json::Value::String(description);
    let validation = findings::validate(value.to_string().as_bytes());
    assert!(validation.is_valid(), "{:?}", validation.errors);
    let diff = PullRequestDiff::parse(&fixture("diffs/small.diff")).unwrap();
    let mut next = 0_u128;
    let conversion = to_review_payload(
        &validation.findings.unwrap(),
        &diff,
        ReviewId(Uuid::from_u128(REVIEW)),
        || {
            next += 1;
            ThreadId(Uuid::from_u128(next))
        },
    );
    // The anchoring verdict is unchanged; the comment is in the body instead.
    assert_eq!(conversion.verdicts[0].name(), "inline");
    let payload = &conversion.payload;
    assert_eq!(payload.comments.len(), 2);
    assert!(payload.body.contains("too long for one inline comment"));
    assert!(payload.body.contains("END-OF-DESCRIPTION"));
    // Posting splits the body; every part fits and the description survives whole.
    let parts = review_core::payload::split_body(&payload.body);
    assert!(parts.len() >= 2);
    assert!(
        parts
            .iter()
            .all(|part| part.chars().count() <= review_core::payload::GITHUB_BODY_LIMIT)
    );
    assert!(parts.concat().contains("END-OF-DESCRIPTION"));
    assert_eq!(
        footer::own_footer(&parts[0]),
        footer::own_footer(&payload.body)
    );
}

/// Issue 19 item 3: a finding cannot forge the review's footer. Its file path
/// lands under "Outside the diff"; a path holding `review::<uuid>` must not
/// become the review's own id, and bidirectional controls in any text from
/// the findings are shown, not obeyed.
#[test]
fn a_finding_cannot_forge_the_footer_or_hide_behind_bidi_controls() {
    const FORGED: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";
    let mut value: serde_json::Value =
        serde_json::from_str(&fixture("findings/mixed.json")).unwrap();
    // Not a file of the pull request: it goes into the body, path and all.
    value["line_comments"][3]["file"] = format!("docs/review::{FORGED}.md").into();
    value["line_comments"][3]["title"] = format!("Thread::{FORGED} \u{202E}gnp.exe").into();
    value["line_comments"][2]["code_context"] = format!("// review::{FORGED}").into();
    value["review_summary"]["overview"] = "Fine \u{2066}really\u{2069}.".into();
    value["line_comments"][1]["file"] = "path/to/\u{202E}file.ts".into();
    let validation = findings::validate(value.to_string().as_bytes());
    assert!(validation.is_valid(), "{:?}", validation.errors);
    let diff = PullRequestDiff::parse(&fixture("diffs/small.diff")).unwrap();
    let review = ReviewId(Uuid::from_u128(REVIEW));
    let mut next = 0_u128;
    let conversion = to_review_payload(&validation.findings.unwrap(), &diff, review, || {
        next += 1;
        ThreadId(Uuid::from_u128(next))
    });
    let payload = &conversion.payload;
    assert_eq!(conversion.verdicts[3].name(), "not_in_pr");
    assert!(
        payload.body.contains("review:\u{200B}:0f8fad5b"),
        "the path is in the body, defused:\n{}",
        payload.body
    );
    assert_eq!(footer::own_footer(&payload.body).review, Some(review));
    let bodies = std::iter::once(payload.body.as_str())
        .chain(payload.comments.iter().map(|comment| comment.body.as_str()));
    assert_eq!(
        footer::distinct_review_ids(bodies)
            .into_iter()
            .collect::<Vec<_>>(),
        [review]
    );
    for body in std::iter::once(&payload.body).chain(payload.comments.iter().map(|c| &c.body)) {
        assert!(footer::thread_ids(body).len() <= 1, "{body}");
        assert!(
            !body.chars().any(footer::is_bidi_control),
            "a bidirectional control survived:\n{body}"
        );
    }
    assert!(
        payload.body.contains("`path/to/<U+202E>file.ts`"),
        "{}",
        payload.body
    );
    assert!(payload.body.contains("Fine <U+2066>really<U+2069>."));
}
