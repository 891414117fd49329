//! Measures the review panel (`cargo bench -p review-panel`):
//!
//! - page weight: the page with a typical review, its script and stylesheet;
//! - present → acknowledged: one socket exchange, render included;
//! - present → shown: from sending a `present_review` line to headless
//!   Chromium's page showing that version (a `WebDriver` round trip included,
//!   so an upper bound). Skipped, with a note, when Chromium is not installed.
//!
//! Idle memory is the `review-bot panel` process's, measured outside (README).

// A measuring script, read top to bottom: byte counts as f64 for KiB are exact enough.
#![allow(
    clippy::cast_precision_loss,
    clippy::too_many_lines,
    clippy::similar_names,
    clippy::format_push_string
)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use review_panel::{Panel, PanelOptions};
use serde_json::json;

const ROUNDS: u64 = 30;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(bench());
}

fn review(round: u64) -> String {
    let mut text =
        format!("# Review, round {round}\n\nThe change adds login ([`src/auth.rs:3`][]).\n\n");
    for section in 1..=8 {
        text.push_str(&format!(
            "## Finding {section}\n\nIn [auth.rs](src/auth.rs#L2-L4) the check is weak.\n\n| a | b |\n|---|---|\n| {round} | {section} |\n\n```rust\nfn check(user: &User) -> bool {{ user.name.len() > {section} }}\n```\n\n"
        ));
    }
    text
}

fn present(socket: &Path, base: &Path, document: &str) {
    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    let mut line = serde_json::to_vec(&json!({
        "protocol": "review-bot.review-panel/1", "kind": "present_review", "mode": "replace",
        "section": null, "baseUri": base, "content": document, "document": document,
    }))
    .unwrap();
    line.push(b'\n');
    stream.write_all(&line).unwrap();
    let mut answer = String::new();
    BufReader::new(stream).read_line(&mut answer).unwrap();
    assert!(answer.contains("\"ok\":true"), "{answer}");
}

/// The body size of `GET path`, with the panel's cookie (`review-panel-PORT=SECRET`).
fn get(address: &str, cookie: &str, path: &str) -> usize {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let body = response
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .unwrap()
        + 4;
    response.len() - body
}

fn summary(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |fraction: f64| {
        // Truncation is the intended rounding for a percentile index.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let index = ((samples.len() - 1) as f64 * fraction).round() as usize;
        samples[index]
    };
    println!(
        "{label}: median {:.1} ms, p95 {:.1} ms, max {:.1} ms ({} rounds)",
        at(0.5).as_secs_f64() * 1000.0,
        at(0.95).as_secs_f64() * 1000.0,
        samples.last().unwrap().as_secs_f64() * 1000.0,
        samples.len()
    );
}

async fn bench() {
    let directory = tempfile::tempdir().unwrap();
    let base = directory.path().join("repo");
    std::fs::create_dir_all(base.join("src")).unwrap();
    std::fs::write(
        base.join("src/auth.rs"),
        "struct User;\nfn a() {}\nfn b() {}\nfn c() {}\n",
    )
    .unwrap();
    let socket = directory.path().join("panel.sock");
    review_panel::highlight::warm_up();
    let panel = Panel::bind(PanelOptions::new(socket.clone()))
        .await
        .unwrap();
    let url = panel.url();
    let address = panel.address().to_string();
    let cookie = format!(
        "review-panel-{}={}",
        panel.address().port(),
        url.split_once("?token=").unwrap().1
    );
    tokio::spawn(panel.run(std::future::pending()));

    let socket_for_blocking = socket.clone();
    let base_for_blocking = base.clone();
    let acknowledged = tokio::task::spawn_blocking(move || {
        (1..=ROUNDS)
            .map(|round| {
                let start = Instant::now();
                present(&socket_for_blocking, &base_for_blocking, &review(round));
                start.elapsed()
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    summary("present → acknowledged (socket + render)", acknowledged);

    let address_for_blocking = address.clone();
    let (page, script, style) = tokio::task::spawn_blocking(move || {
        (
            get(&address_for_blocking, &cookie, "/"),
            get(&address_for_blocking, &cookie, "/assets/panel.js"),
            get(&address_for_blocking, &cookie, "/assets/panel.css"),
        )
    })
    .await
    .unwrap();
    println!(
        "page weight: {:.1} KiB in all (page with an 8-finding review {:.1} KiB, script {:.1} KiB, stylesheet {:.1} KiB; uncompressed, no other request)",
        (page + script + style) as f64 / 1024.0,
        page as f64 / 1024.0,
        script as f64 / 1024.0,
        style as f64 / 1024.0
    );

    if !(Path::new("/usr/bin/chromium").exists() && Path::new("/usr/bin/chromedriver").exists()) {
        println!("present → shown: skipped (Chromium is not installed; scripts/install-test-deps)");
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut driver = Command::new("/usr/bin/chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(driver.stdout.take().unwrap());
    let mut line = String::new();
    while stdout.read_line(&mut line).unwrap() > 0 && !line.contains("started successfully") {
        line.clear();
    }
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let profile = tempfile::tempdir().unwrap();
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".to_owned(),
        json!({"binary": "/usr/bin/chromium", "args": [
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", format!("--user-data-dir={}", profile.path().display()),
        ]}),
    );
    let client =
        fantoccini::ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .unwrap();
    client.goto(&url).await.unwrap();
    let mut shown = Vec::new();
    for round in 0..ROUNDS {
        let version = ROUNDS + 1 + round;
        let waiting = client.execute_async(
            "const [version, done] = arguments;
             const check = () => document.body.dataset.version === version ? done(true) : requestAnimationFrame(check);
             check();",
            vec![json!(version.to_string())],
        );
        let socket = socket.clone();
        let base = base.clone();
        let start = Instant::now();
        let send = tokio::task::spawn_blocking(move || present(&socket, &base, &review(version)));
        let (result, sent) = tokio::join!(waiting, send);
        let elapsed = start.elapsed();
        result.unwrap();
        sent.unwrap();
        shown.push(elapsed);
    }
    summary(
        "present → shown in Chromium (upper bound: includes a WebDriver round trip)",
        shown,
    );
    let _ = client.close().await;
    let _ = driver.kill();
    let _ = driver.wait();
}
