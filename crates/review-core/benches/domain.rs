//! The domain rules at pull-request scale: validate a 1,000-comment findings
//! file, turn it into a review against a 3,000-file / 100,000-changed-line
//! diff, merge two passes of 500 comments each, count review ids across 1,000
//! comment bodies, and discover commands in a README.
//!
//! Run with short settings on a shared machine:
//! `cargo bench -p review-core --bench domain -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use review_core::anchor::CommentLocation;
use review_core::build_commands::commands_in_markdown;
use review_core::diff::PullRequestDiff;
use review_core::findings::{self, github::to_review_payload};
use review_core::footer::{self, Footer, ReviewId, ThreadId};
use review_core::passes::{InlineComment, Pass, PassOutput, merge_passes};
use serde_json::{Value, json};
use uuid::Uuid;

#[path = "support/synthetic_pull_request.rs"]
mod synthetic_pull_request;

const COMMENTS: usize = 1_000;

/// A findings file with one line comment per location.
fn findings_file(locations: &[CommentLocation]) -> Vec<u8> {
    let comments: Vec<Value> = locations
        .iter()
        .enumerate()
        .map(|(index, location)| {
            let mut comment = json!({
                "file": location.path, "line": location.line, "side": location.side,
                "confidence": index % 101,
                "confidence_level": findings::ConfidenceLevel::for_confidence(
                    u8::try_from(index % 101).unwrap()
                ),
                "severity": findings::Severity::ALL[index % 6],
                "title": format!("Finding number {index}"),
                "description": "The value can be null here when the request is retried; check it before use.",
                "code_context": "let value = cache.get(key).unwrap();",
                "suggestion": "Return an error instead of unwrapping."
            });
            if let Some(start_line) = location.start_line {
                comment["start_line"] = json!(start_line);
            }
            comment
        })
        .collect();
    serde_json::to_vec(&json!({
        "version": "1.0",
        "pr_info": { "number": 1, "repo": "acme/big", "title": "Big", "description": "",
                     "head_sha": "0123456789abcdef0123456789abcdef01234567" },
        "review_summary": { "overview": "Large change.",
                            "confidence_breakdown": { "high": 1000, "medium": 1000, "low": 1000, "suggestions": 1000 },
                            "key_findings": ["one", "two"], "security_assessment": "ok", "positive_highlights": "ok" },
        "line_comments": comments,
        "review_event": "COMMENT",
        "metadata": { "reviewed_at": "2025-01-13T10:30:00Z", "reviewer_agent": "bench",
                      "files_analyzed": 3000, "total_issues": 1000 }
    }))
    .unwrap()
}

fn benchmarks(criterion: &mut Criterion) {
    let pull_request = synthetic_pull_request::generate(3_000, 100_000);
    let diff = PullRequestDiff::parse(&pull_request.text).expect("the synthetic diff parses");
    let locations = synthetic_pull_request::comments(&pull_request, COMMENTS);
    let bytes = findings_file(&locations);
    let validation = findings::validate(&bytes);
    assert!(validation.is_valid(), "{:?}", validation.errors.first());
    let parsed = validation.findings.unwrap();
    let passes: Vec<PassOutput> = [Pass::Architecture, Pass::Detailed]
        .into_iter()
        .enumerate()
        .map(|(half, pass)| PassOutput {
            pass,
            inline_comments: locations[half * 500..(half + 1) * 500]
                .iter()
                .enumerate()
                .map(|(index, location)| InlineComment {
                    location: location.clone(),
                    body: format!(
                        "Finding {} about the retry path and a possible null value",
                        index % 50
                    ),
                })
                .collect(),
            general_comments: Vec::new(),
            thread_responses: Vec::new(),
        })
        .collect();
    let bodies: Vec<String> = (0..COMMENTS)
        .map(|index| {
            let review = ReviewId(Uuid::from_u128((index % 7) as u128));
            let thread = ThreadId(Uuid::from_u128(index as u128));
            Footer::new(review, thread).append_to(&"Some comment text. ".repeat(20))
        })
        .collect();
    let readme = include_str!("../tests/fixtures/docs/messy-monorepo.md");

    let mut group = criterion.benchmark_group("domain");
    group.sample_size(10);
    group.bench_function("validate a findings file of 1,000 comments", |bencher| {
        bencher.iter(|| findings::validate(black_box(&bytes)).is_valid());
    });
    group.bench_function("findings to review payload, 1,000 comments", |bencher| {
        bencher.iter(|| {
            let mut next = 0_u128;
            to_review_payload(black_box(&parsed), &diff, ReviewId(Uuid::nil()), || {
                next += 1;
                ThreadId(Uuid::from_u128(next))
            })
            .payload
            .comments
            .len()
        });
    });
    group.bench_function("merge two passes of 500 comments", |bencher| {
        bencher.iter(|| merge_passes(black_box(&passes), &[]).inline_comments.len());
    });
    group.bench_function("count review ids in 1,000 bodies", |bencher| {
        bencher.iter(|| {
            footer::distinct_review_ids(black_box(&bodies).iter().map(String::as_str)).len()
        });
    });
    group.bench_function("discover commands in a README", |bencher| {
        bencher.iter(|| commands_in_markdown(black_box(readme)));
    });
    // The largest real README of the fixtures (132 code blocks).
    let real_readme = include_str!("../tests/fixtures/real/sharkdp-fd/README.md");
    group.bench_function(
        "discover commands in sharkdp/fd's 28 KB README",
        |bencher| {
            bencher.iter(|| commands_in_markdown(black_box(real_readme)));
        },
    );
    group.finish();
}

criterion_group!(domain, benchmarks);
criterion_main!(domain);
