//! Measures the parsed diff model of a 3,000-file / 100,000-changed-line pull
//! request: its heap size (summed from the model's own strings and vectors)
//! and the resident memory the parse adds, read from `/proc/self/status`.
//!
//! `cargo run --release -p review-core --example diff_memory`
//! (or under `/usr/bin/time -v` for the process's peak).

use std::mem::{size_of, size_of_val};
use std::time::Instant;

use review_core::diff::{DiffLine, Hunk, PullRequestDiff};

// The benchmark also uses the generator's hunk positions and comments; this
// example only needs the diff text.
#[allow(dead_code)]
#[path = "../benches/support/synthetic_pull_request.rs"]
mod synthetic_pull_request;

/// A field of `/proc/self/status` in kB (`VmRSS`, `VmHWM`).
fn status_kilobytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().trim_end_matches(" kB").parse().ok())
        .unwrap_or(0)
}

/// The heap bytes the model's files, hunks, lines and strings hold (not the
/// index's hash maps, which add a path copy and two small vectors per file).
fn model_heap_bytes(diff: &PullRequestDiff) -> usize {
    size_of_val(diff.files())
        + diff
            .files()
            .iter()
            .map(|file| {
                file.path.capacity()
                    + file.previous_path.as_ref().map_or(0, String::capacity)
                    + file.hunks.capacity() * size_of::<Hunk>()
                    + file
                        .hunks
                        .iter()
                        .map(|hunk| {
                            hunk.section.capacity()
                                + hunk.lines.capacity() * size_of::<DiffLine>()
                                + hunk
                                    .lines
                                    .iter()
                                    .map(|line| line.text.capacity())
                                    .sum::<usize>()
                        })
                        .sum::<usize>()
            })
            .sum::<usize>()
}

fn main() {
    let pull_request = synthetic_pull_request::generate(3_000, 100_000);
    let before = status_kilobytes("VmRSS");
    let started = Instant::now();
    let diff = PullRequestDiff::parse(&pull_request.text).expect("the synthetic diff parses");
    let elapsed = started.elapsed();
    let after = status_kilobytes("VmRSS");
    let lines: usize = diff
        .files()
        .iter()
        .flat_map(|file| &file.hunks)
        .map(|hunk| hunk.lines.len())
        .sum();
    println!(
        "input: {} bytes of diff text, {} files, {lines} hunk lines",
        pull_request.text.len(),
        diff.len()
    );
    println!("parse + index: {elapsed:?} (one run)");
    println!(
        "model heap (files, hunks, lines, strings): {} KiB; DiffLine is {} bytes",
        model_heap_bytes(&diff) / 1024,
        size_of::<DiffLine>()
    );
    println!(
        "resident memory added by the parse: {} kB (VmRSS {before} kB → {after} kB); peak VmHWM {} kB",
        after.saturating_sub(before),
        status_kilobytes("VmHWM")
    );
}
