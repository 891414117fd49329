//! Parse and index a 3,000-file / 100,000-changed-line diff, then anchor
//! 1,000 comments of mixed verdicts against it.
//!
//! Run with short settings on a shared machine:
//! `cargo bench -p review-core --bench anchor -- --warm-up-time 1 --measurement-time 3`

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use review_core::anchor::anchor;
use review_core::diff::PullRequestDiff;

#[path = "support/synthetic_pull_request.rs"]
mod synthetic_pull_request;

const FILES: usize = 3_000;
const CHANGED_LINES: usize = 100_000;
const COMMENTS: usize = 1_000;

fn benchmarks(criterion: &mut Criterion) {
    let pull_request = synthetic_pull_request::generate(FILES, CHANGED_LINES);
    let diff = PullRequestDiff::parse(&pull_request.text).expect("the synthetic diff parses");
    let changed: usize = diff
        .files()
        .iter()
        .map(|file| file.added_lines() + file.removed_lines())
        .sum();
    assert_eq!((diff.len(), changed), (FILES, CHANGED_LINES));
    let comments = synthetic_pull_request::comments(&pull_request, COMMENTS);
    let mut mix: BTreeMap<&str, usize> = BTreeMap::new();
    for comment in &comments {
        *mix.entry(anchor(&diff, comment).name()).or_default() += 1;
    }
    eprintln!(
        "diff: {FILES} files, {CHANGED_LINES} changed lines, {} bytes, {} lines of text; verdicts of the {COMMENTS} comments: {mix:?}",
        pull_request.text.len(),
        pull_request.text.lines().count(),
    );

    let mut group = criterion.benchmark_group("anchor");
    group.sample_size(10);
    group.bench_function(
        "parse and index 3,000 files / 100,000 changed lines",
        |bencher| {
            bencher.iter(|| PullRequestDiff::parse(black_box(&pull_request.text)).unwrap());
        },
    );
    group.bench_function("anchor 1,000 comments", |bencher| {
        bencher.iter(|| {
            comments
                .iter()
                .map(|comment| anchor(black_box(&diff), comment))
                .filter(review_core::anchor::Verdict::is_postable_inline)
                .count()
        });
    });
    group.finish();
}

criterion_group!(anchor_benchmarks, benchmarks);
criterion_main!(anchor_benchmarks);
