//! Throughput of the MCP server's hot paths: appending a request line,
//! collecting a comments file, the seed-002 comment listing for a large pull
//! request, and a section update of a long review.
//!
//! `cargo bench -p review-mcp -- --warm-up-time 1 --measurement-time 3`

use std::fmt::Write as _;
use std::hint::black_box;
use std::io::Write as _;

use criterion::{Criterion, criterion_group, criterion_main};
use review_core::agent_requests::{AgentRequest, GeneralComment, InlineComment};
use review_core::anchor::Side;
use review_core::snapshot::{
    IssueComment, PullRequestInfo, PullRequestSnapshot, ReviewThread, SNAPSHOT_VERSION,
    ThreadComment,
};
use review_mcp::collector::read_requests;
use review_mcp::comments_file::append_line;
use review_mcp::comments_view::comments_view;
use review_mcp::document::{PresentMode, apply};

fn inline(index: u32) -> AgentRequest {
    AgentRequest::Inline(InlineComment {
        message: format!("finding {index}: {}", "detail ".repeat(120)),
        path: format!("src/module_{}.rs", index % 40),
        line: 1 + index % 500,
        start_line: None,
        side: Some(Side::Right),
        title: Some("Unchecked index".into()),
        severity: None,
        confidence: Some(80),
        suggestion: None,
    })
}

fn append(criterion: &mut Criterion) {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("comments.jsonl");
    let line = inline(7).to_json_line();
    criterion.bench_function("comments_file/append one ~1 KB line", |bencher| {
        bencher.iter(|| append_line(&path, black_box(&line)).unwrap());
    });
}

fn collect(criterion: &mut Criterion) {
    // 9,900 requests with a corrupt line every 100: just under the
    // collector's bound of 10,000 lines.
    let mut file = Vec::new();
    for index in 0..9_900u32 {
        if index % 100 == 0 {
            file.extend_from_slice(b"{\"type\":\"inline\",\"message\":\"torn\n");
        }
        let request = if index % 3 == 0 {
            AgentRequest::General(GeneralComment {
                message: format!("general {index}"),
            })
        } else {
            inline(index)
        };
        file.write_all(request.to_json_line().as_bytes()).unwrap();
    }
    criterion.bench_function("collector/10,000 lines (1% corrupt)", |bencher| {
        bencher.iter(|| {
            let collection = read_requests(black_box(file.as_slice())).unwrap();
            assert_eq!(collection.requests.len(), 9_900);
        });
    });
    // Issue 19, item 10: torn-line recovery used to retry a parse from every
    // `{` of a line (11.6 s for this one); now it is linear.
    let mut braces = vec![b'{'; 1 << 20];
    braces.push(b'\n');
    criterion.bench_function("collector/one 1 MiB line of `{`", |bencher| {
        bencher.iter(|| {
            let collection = read_requests(black_box(braces.as_slice())).unwrap();
            assert_eq!(collection.reports.len(), 1);
        });
    });
}

fn snapshot(threads: u64) -> PullRequestSnapshot {
    PullRequestSnapshot {
        version: SNAPSHOT_VERSION,
        repository: "octo/widgets".into(),
        bot_login: Some("review-bot[bot]".into()),
        pull_request: PullRequestInfo {
            number: 1,
            title: "t".into(),
            body: String::new(),
            author: "a".into(),
            base_ref: "main".into(),
            head_ref: "f".into(),
            base_sha: "0".repeat(40),
            head_sha: "1".repeat(40),
        },
        diff: String::new(),
        files: Vec::new(),
        files_truncated: false,
        review_threads: (0..threads)
            .map(|index| ReviewThread {
                path: format!("src/module_{}.rs", index % 40),
                line: Some(10),
                start_line: None,
                side: Some(Side::Right),
                diff_hunk: format!("@@ -1,40 +1,40 @@\n{}", " context line\n".repeat(40)),
                outdated: false,
                replied: index % 2 == 0,
                comments: (0..3)
                    .map(|reply| ThreadComment {
                        id: index * 10 + reply,
                        user: "reviewer".into(),
                        body: format!("comment {index}.{reply}: {}\n\n<sub>thread::0b6c3c55-8f1e-4f0e-9a8e-3c1f2a9d7e11</sub>", "text ".repeat(60)),
                        created_at: "2025-01-13T10:30:00Z".into(),
                    })
                    .collect(),
            })
            .collect(),
        issue_comments: (0..100)
            .map(|index| IssueComment {
                id: 1_000_000 + index,
                user: "someone".into(),
                body: "text ".repeat(40),
                created_at: String::new(),
                replied: false,
            })
            .collect(),
    }
}

fn listing(criterion: &mut Criterion) {
    let snapshot = snapshot(1_000);
    criterion.bench_function(
        "comments_view/1,000 threads + 100 comments, filtered, as JSON",
        |bencher| {
            bencher.iter(|| {
                let view = comments_view(black_box(&snapshot), false);
                serde_json::to_string(&view).unwrap()
            });
        },
    );
}

fn sections(criterion: &mut Criterion) {
    let mut review = String::from("# Review\n\n");
    for index in 0..200 {
        let _ = write!(
            review,
            "## Section {index}\n\n```rust\n# not a heading\n```\n\nBody {index}.\n\n"
        );
    }
    criterion.bench_function(
        "document/update-section in a 200-section review",
        |bencher| {
            bencher.iter(|| {
                apply(
                    black_box(&review),
                    PresentMode::UpdateSection,
                    "New body.",
                    "Section 150",
                )
            });
        },
    );
}

criterion_group!(benches, append, collect, listing, sections);
criterion_main!(benches);
