//! Measures what one review costs the panel (`cargo bench -p review-panel --bench render`):
//! render time, peak heap during the render, heap kept per version, the
//! page's size and the bytes read from files, for
//!
//! - a normal review: 50 findings, each with file references and a code block;
//! - the hostile 20 KB review of issue 26: four wide Markdown tables (rows
//!   padded to a 1,000-column header) and one 4 MiB file referenced under a
//!   dozen spellings;
//!
//! and what 100 versions of each keep. Memory is the process's resident size
//! (`VmRSS`, and its peak `VmHWM` reset before each render through
//! `/proc/self/clear_refs`); what a version holds is its HTML and the page's
//! JSON; bytes read are the process's `rchar` (`/proc/self/io`).

// A measuring script, read top to bottom: byte counts as f64 for MiB are exact enough.
#![allow(
    clippy::cast_precision_loss,
    clippy::too_many_lines,
    clippy::format_push_string
)]

use std::path::Path;
use std::time::Instant;

use review_panel::Limits;
use review_panel::protocol::PresentReview;
use review_panel::state::State;

/// A figure from `/proc/self/status`, in bytes (`VmRSS`, `VmHWM`).
fn status_bytes(field: &str) -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix(field)
                    .and_then(|rest| rest.strip_prefix(':'))
                    .and_then(|rest| rest.trim().trim_end_matches(" kB").parse::<usize>().ok())
            })
        })
        .map_or(0, |kib| kib * 1024)
}

/// Resets the peak resident size (`VmHWM`) to the current one.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn read_bytes() -> usize {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|line| line.strip_prefix("rchar: ").map(str::to_owned))
        })
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0)
}

/// Files a normal review references: ten 300-line sources.
fn normal_files(base: &Path) {
    std::fs::create_dir_all(base.join("src")).unwrap();
    for file in 0..10 {
        let mut text = String::new();
        for line in 1..=300 {
            text.push_str(&format!(
                "    let value_{line} = compute({line}, {file});\n"
            ));
        }
        std::fs::write(base.join(format!("src/module_{file}.rs")), text).unwrap();
    }
}

/// A normal review: a summary table of 50 findings and a section for each.
fn normal_review() -> String {
    let mut text = String::from(
        "# Review\n\nThe change adds a cache in front of the store. Fifty findings, most minor.\n\n\
         | # | File | Severity | Finding |\n|---|---|---|---|\n",
    );
    for finding in 1..=50 {
        let file = finding % 10;
        let line = finding * 5;
        text.push_str(&format!(
            "| {finding} | [src/module_{file}.rs:{line}](src/module_{file}.rs#L{line}) | minor | The value is computed twice |\n"
        ));
    }
    text.push_str("\n## Findings\n\n");
    for finding in 1..=50 {
        let file = finding % 10;
        let line = finding * 5;
        text.push_str(&format!(
            "### {finding}. The value is computed twice\n\n\
             In [`src/module_{file}.rs:{line}`][] the value is computed again although \
             [the caller](src/module_{file}.rs#L{}-L{}) already has it. Keep the first \
             result:\n\n```rust\nlet value = compute({line}, {file});\nstore.insert(key, value);\n```\n\n",
            line + 1,
            line + 3
        ));
    }
    text
}

/// The hostile review: four wide tables, and a 4 MiB file under many spellings.
fn hostile_files(base: &Path) {
    std::fs::create_dir_all(base.join("src")).unwrap();
    let line = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
    let text = line.repeat(4 * 1024 * 1024 / line.len());
    std::fs::write(base.join("src/big.txt"), text).unwrap();
    std::os::unix::fs::symlink("src/big.txt", base.join("alias.txt")).unwrap();
}

fn hostile_review(base: &Path) -> String {
    let base = base.display();
    let mut text = String::from("# Hostile\n\n");
    for spelling in [
        "src/big.txt".to_owned(),
        "./src/big.txt".to_owned(),
        "src//big.txt".to_owned(),
        "src/./big.txt".to_owned(),
        "./src/./big.txt".to_owned(),
        ".//src//big.txt".to_owned(),
        "src/%62ig.txt".to_owned(),
        "alias.txt".to_owned(),
        "./alias.txt".to_owned(),
        format!("{base}/src/big.txt"),
        format!("{base}//src/big.txt"),
        format!("file://{base}/src/big.txt"),
    ] {
        text.push_str(&format!("[big]({spelling}#L2) "));
    }
    text.push_str("\n\n");
    for table in 1..=4 {
        text.push_str(&format!("## Table {table}\n\n"));
        text.push_str(&"|a".repeat(1000));
        text.push_str("|\n");
        text.push_str(&"|-".repeat(1000));
        text.push_str("|\n");
        text.push_str(&"|a|\n".repeat(480));
        text.push('\n');
    }
    text
}

fn message(base: &Path, document: &str) -> PresentReview {
    PresentReview {
        protocol: review_panel::protocol::PROTOCOL.to_owned(),
        kind: "present_review".to_owned(),
        mode: "replace".to_owned(),
        section: None,
        base_uri: base.display().to_string(),
        content: String::new(),
        document: document.to_owned(),
    }
}

fn measure(label: &str, base: &Path, document: &str, rounds: usize, versions: usize) {
    let state = State::new(
        review_panel::DEFAULT_EDITOR_URL.to_owned(),
        Limits::default(),
        base.join("panel.sock"),
    );
    let resident_before = status_bytes("VmRSS");
    let mut times = Vec::new();
    let mut peaks = Vec::new();
    let mut reads = Vec::new();
    for _ in 0..rounds {
        reset_peak();
        let before = status_bytes("VmRSS");
        let read_before = read_bytes();
        let start = Instant::now();
        state.present(message(base, document)).unwrap();
        times.push(start.elapsed());
        reads.push(read_bytes() - read_before);
        peaks.push(status_bytes("VmHWM").saturating_sub(before));
    }
    let latest = state.latest().unwrap();
    let page: usize = latest
        .rendered
        .sections
        .iter()
        .map(|section| section.html.len())
        .sum();
    times.sort();
    let median = |values: &[usize]| {
        let mut values = values.to_vec();
        values.sort_unstable();
        values[values.len() / 2]
    };
    println!(
        "{label} ({:.1} KiB of Markdown): render median {:.1} ms (min {:.1}, max {:.1}; {rounds} rounds), \
         resident-size growth at the render's peak {:.1} MiB, rendered HTML {:.2} MiB, page JSON {:.2} MiB, \
         bytes read per render {:.1} MiB",
        document.len() as f64 / 1024.0,
        times[times.len() / 2].as_secs_f64() * 1000.0,
        times[0].as_secs_f64() * 1000.0,
        times[times.len() - 1].as_secs_f64() * 1000.0,
        mib(median(&peaks)),
        mib(page),
        mib(latest.payload.len()),
        mib(median(&reads)),
    );
    if versions > rounds {
        let start = Instant::now();
        for _ in rounds..versions {
            state.present(message(base, document)).unwrap();
        }
        let elapsed = start.elapsed();
        let history = state.history();
        let held: usize = history
            .iter()
            .filter_map(|summary| state.version(summary.version))
            .map(|version| {
                version.payload.len()
                    + version
                        .rendered
                        .sections
                        .iter()
                        .map(|section| section.html.len())
                        .sum::<usize>()
            })
            .sum();
        println!(
            "{label}: {versions} versions presented in {:.1} s; {} kept, holding {:.1} MiB of HTML and JSON; \
             resident size grew {:.1} MiB",
            elapsed.as_secs_f64(),
            history.len(),
            mib(held),
            mib(status_bytes("VmRSS").saturating_sub(resident_before)),
        );
    }
}

fn main() {
    let quick = std::env::args().any(|argument| argument == "--quick");
    review_panel::highlight::warm_up();
    let directory = tempfile::tempdir().unwrap();
    let normal = directory.path().join("normal");
    normal_files(&normal);
    let normal = normal.canonicalize().unwrap();
    let hostile = directory.path().join("hostile");
    hostile_files(&hostile);
    let hostile = hostile.canonicalize().unwrap();
    let hostile_document = hostile_review(&hostile);
    measure(
        "normal 50-finding review",
        &normal,
        &normal_review(),
        10,
        100,
    );
    // The largest review the panel renders whole (1 MiB of Markdown), and 1 MiB
    // of inline markup (the parse-step backstop).
    let mut large = String::new();
    while large.len() + normal_review().len() < 1024 * 1024 {
        large.push_str(&normal_review());
    }
    measure(
        "1 MiB review (the normal one, repeated)",
        &normal,
        &large,
        3,
        0,
    );
    measure(
        "1 MiB of inline markup",
        &normal,
        &"*a* ".repeat(256 * 1024),
        3,
        0,
    );
    let hostile_versions = std::env::var("PANEL_BENCH_HOSTILE_VERSIONS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(100);
    measure(
        "hostile 20 KB review",
        &hostile,
        &hostile_document,
        if quick { 1 } else { 3 },
        hostile_versions,
    );
}
