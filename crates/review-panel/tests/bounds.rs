//! The panel stays small whatever it is sent (issue 26, finding 8): the
//! hostile 20 KB review (four wide Markdown tables, a 4 MiB file referenced
//! under a dozen spellings) renders within the byte bound with a notice and
//! reads the file once; a hundred and more versions stay within the
//! retained-bytes bound.
//!
//! Bytes read are the process's own count (`rchar` in `/proc/self/io`), so
//! this file is its own test binary and its tests run one at a time.

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Read as _, Write as IoWrite};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use review_panel::protocol::{PROTOCOL, PresentReview};
use review_panel::state::State;
use review_panel::{Limits, Panel, PanelOptions};
use serde_json::json;

/// One test at a time: they count the process's reads.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const BIG_FILE_BYTES: usize = 4 * 1024 * 1024;

fn bytes_read() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap();
    io.lines()
        .find_map(|line| line.strip_prefix("rchar: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A base with a 4 MiB text file and a link to it.
fn hostile_base(directory: &Path) -> std::path::PathBuf {
    let base = directory.join("repo");
    std::fs::create_dir_all(base.join("src")).unwrap();
    let line = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
    std::fs::write(
        base.join("src/big.txt"),
        line.repeat(BIG_FILE_BYTES / line.len()),
    )
    .unwrap();
    std::os::unix::fs::symlink("src/big.txt", base.join("alias.txt")).unwrap();
    base.canonicalize().unwrap()
}

/// About 20 KB: the big file under twelve spellings, then four tables whose
/// 480 one-cell rows Markdown pads to the header's 1,000 columns.
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
        let _ = write!(text, "[big]({spelling}#L2) ");
    }
    text.push_str("\n\n");
    for table in 1..=4 {
        let _ = write!(text, "## Table {table}\n\n");
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
        protocol: PROTOCOL.to_owned(),
        kind: "present_review".to_owned(),
        mode: "replace".to_owned(),
        section: None,
        base_uri: base.display().to_string(),
        content: String::new(),
        document: document.to_owned(),
    }
}

#[test]
fn the_hostile_review_renders_within_the_bound_and_reads_the_big_file_once() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(hostile_review_within_bounds());
}

async fn hostile_review_within_bounds() {
    let directory = tempfile::tempdir().unwrap();
    let base = hostile_base(directory.path());
    let document = hostile_review(&base);
    assert!(
        (20 * 1024..24 * 1024).contains(&document.len()),
        "{} bytes",
        document.len()
    );
    let socket = directory.path().join("panel.sock");
    let panel = Panel::bind(PanelOptions::new(socket.clone()))
        .await
        .unwrap();
    let address = panel.address().to_string();
    let url = panel.url();
    let token = url.split_once("?token=").unwrap().1.to_owned();
    let state = panel.state();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(panel.run(async {
        let _ = stopped.await;
    }));

    let limits = Limits::default();
    let page = tokio::task::spawn_blocking(move || {
        let before = bytes_read();
        let mut stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
        let mut line = serde_json::to_vec(&json!({
            "protocol": PROTOCOL, "kind": "present_review", "mode": "replace", "section": null,
            "baseUri": base, "content": "", "document": document,
        }))
        .unwrap();
        line.push(b'\n');
        IoWrite::write_all(&mut stream, &line).unwrap();
        let mut answer = String::new();
        BufReader::new(stream).read_line(&mut answer).unwrap();
        assert_eq!(answer.trim(), r#"{"ok":true}"#);
        let read = bytes_read() - before;
        // Twelve spellings of one file: it is read once (before: twelve times, 48 MiB).
        assert!(
            read < 2 * BIG_FILE_BYTES as u64,
            "{read} bytes read to render the review"
        );
        assert!(read >= BIG_FILE_BYTES as u64, "the file is read: {read}");

        let port = address.rsplit(':').next().unwrap();
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_mins(1)))
            .unwrap();
        IoWrite::write_fmt(
            &mut stream,
            format_args!("GET / HTTP/1.1\r\nHost: {address}\r\nCookie: review-panel-{port}={token}\r\nConnection: close\r\n\r\n"),
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    })
    .await
    .unwrap();
    assert!(page.starts_with("HTTP/1.1 200"), "{}", &page[..200]);
    // The page holds the rendering and little else (before: 22 MB).
    assert!(
        page.len() < limits.max_rendered_bytes + 256 * 1024,
        "{} bytes",
        page.len()
    );
    assert!(
        page.contains("The panel cut the table above here"),
        "no notice where the table was cut"
    );
    assert!(page.contains("The panel left out a table here"));
    let latest = state.latest().unwrap();
    let rendered: usize = latest
        .rendered
        .sections
        .iter()
        .map(|section| section.html.len())
        .sum();
    assert!(rendered <= limits.max_rendered_bytes, "{rendered}");
    // Every spelling is a link to the file (none broken), and the file view opens it.
    assert_eq!(
        page.matches("class=\"file-ref\"").count(),
        12,
        "all twelve spellings link"
    );
    // Ten distinct spellings once percent-decoding and `file://` are undone.
    assert_eq!(latest.rendered.references.len(), 10);
    assert!(latest.rendered.references.values().all(|target| {
        target
            .as_ref()
            .is_ok_and(|path| path.ends_with("src/big.txt"))
    }));
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[test]
fn a_hundred_and_more_versions_stay_within_the_retained_bytes_bound() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let directory = tempfile::tempdir().unwrap();
    let base = hostile_base(directory.path());
    let limits = Limits {
        max_retained_bytes: 2 * 1024 * 1024,
        ..Limits::default()
    };
    let state = State::new(
        review_panel::DEFAULT_EDITOR_URL.to_owned(),
        limits,
        directory.path().join("panel.sock"),
    );
    let hostile = hostile_review(&base);
    for round in 1..=120_u64 {
        // Mostly a mid-sized review, every tenth the hostile one.
        let document = if round % 10 == 0 {
            hostile.clone()
        } else {
            let mut text = format!("# Round {round}\n\n");
            for finding in 0..40 {
                let _ = write!(
                    text,
                    "## Finding {finding}\n\n{}\n\n```rust\nfn f() -> u32 {{ {round} }}\n```\n\n",
                    "The value is computed twice. ".repeat(20)
                );
            }
            text
        };
        assert_eq!(state.present(message(&base, &document)).unwrap(), round);
        assert!(
            state.retained_bytes() <= limits.max_retained_bytes,
            "round {round}: {} bytes kept",
            state.retained_bytes()
        );
    }
    let history = state.history();
    assert!(history.len() < 100, "{} versions kept", history.len());
    assert_eq!(history.last().unwrap().version, 120, "the latest is kept");
    assert!(state.version(1).is_none(), "the oldest went first");
    let numbers: Vec<u64> = history.iter().map(|summary| summary.version).collect();
    let expected: Vec<u64> = (numbers[0]..=120).collect();
    assert_eq!(
        numbers, expected,
        "the kept versions are the newest, in order"
    );

    // One version over the bound on its own is still kept, alone.
    let tiny = State::new(
        review_panel::DEFAULT_EDITOR_URL.to_owned(),
        Limits {
            max_retained_bytes: 1024,
            ..Limits::default()
        },
        directory.path().join("panel.sock"),
    );
    for _ in 0..3 {
        tiny.present(message(&base, &hostile)).unwrap();
    }
    assert_eq!(tiny.history().len(), 1);
    assert_eq!(tiny.latest().unwrap().number, 3);
}
