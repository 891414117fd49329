//! `review-bot eval` end to end: real git repositories (one built here, one
//! replayed from BurntSushi/walkdir's history, `examples/eval/walkdir.bundle`),
//! the real Claude Code CLI against the scripted model server (which answers
//! each case by the repository name the prompt gives), the real local
//! review flow. Scores computed by hand in the comments equal what eval prints.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use review_testkit::model::{ModelServer, RecordedRequest, Script, ToolCall, Turn};
use serde_json::{Value, json};

use crate::git;

/// The shipped example: six real walkdir commits and a branch bringing a
/// fixed bug back (see `examples/eval/make-walkdir-bundle.sh`).
fn walkdir_bundle() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/eval/walkdir.bundle")
}

fn library(changes: &[(usize, &str)]) -> String {
    (1..=40)
        .map(|line| {
            changes
                .iter()
                .find(|(changed, _)| *changed == line)
                .map_or_else(
                    || format!("pub fn line_{line}() {{}}\n"),
                    |(_, text)| format!("{text}\n"),
                )
        })
        .collect()
}

/// `main` with a 40-line library and a README; `hit` changes lines 5, 20,
/// 21 and 30 and the README's first line; `quiet` changes line 10.
fn repository(root: &Path) -> PathBuf {
    let repo = root.join("widgets");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    git(&repo, &["init", "--quiet"]);
    std::fs::write(repo.join("README.md"), "# widgets\n\nSmall widgets.\n").unwrap();
    std::fs::write(repo.join("src/lib.rs"), library(&[])).unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "--quiet", "-m", "Start"]);
    git(&repo, &["checkout", "--quiet", "-b", "hit"]);
    std::fs::write(
        repo.join("src/lib.rs"),
        library(&[
            (5, "pub fn five() -> u32 { 6 }"),
            (20, "pub fn twenty() -> u32 {"),
            (21, "    19 }"),
            (30, "pub fn thirty() -> u32 { 3 }"),
        ]),
    )
    .unwrap();
    std::fs::write(repo.join("README.md"), "# widgets!\n\nSmall widgets.\n").unwrap();
    git(&repo, &["commit", "--quiet", "-am", "Numbers"]);
    git(&repo, &["checkout", "--quiet", "main"]);
    git(&repo, &["checkout", "--quiet", "-b", "quiet"]);
    std::fs::write(
        repo.join("src/lib.rs"),
        library(&[(10, "pub fn ten() -> u32 { 1 }")]),
    )
    .unwrap();
    git(&repo, &["commit", "--quiet", "-am", "Ten"]);
    git(&repo, &["checkout", "--quiet", "main"]);
    repo
}

fn comment(path: &str, line: u32, title: &str) -> ToolCall {
    ToolCall::new(
        "mcp__review__leave_inline_comment",
        json!({"path": path, "line": line, "message": format!("{title}."), "title": title,
               "severity": "logic", "confidence": 80}),
    )
}

/// The repository name the prompt gives: `local/NAME`, NAME the case's.
fn case_of(request: &RecordedRequest) -> String {
    let prompt = request.user_text();
    prompt
        .split("\"local/")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default()
        .to_owned()
}

/// Architecture pass: nothing. Detailed pass: per case, the findings below;
/// after the tool calls, done.
fn answer(request: &RecordedRequest) -> Turn {
    if !request.last_tool_results().is_empty() {
        return Turn::text("Detailed pass done.");
    }
    let prompt = request.user_text();
    if !prompt.contains("the detailed pass") {
        return Turn::text("No architectural concerns.");
    }
    let case = case_of(request);
    match case.as_str() {
        // Golden: lib.rs:5, lib.rs:20–21, lib.rs:30. Findings: on line 5
        // (hit), line 24 (3 after 21: inside the window, hit), line 40 (10
        // after 30: outside, extra), README.md:1 (another file, extra).
        "on-and-near" => Turn::tools([
            comment("src/lib.rs", 5, "Five returns six"),
            comment("src/lib.rs", 24, "Twenty returns nineteen"),
            comment("src/lib.rs", 40, "Forty is unused"),
            comment("README.md", 1, "A shouting title"),
        ]),
        // The walkdir fix's revert: lib.rs 727–730 put back; one finding on 728.
        name if name.starts_with("fix-ee9213e") || name == "skip-current-dir" => {
            Turn::tools([comment("src/lib.rs", 728, "oldest_opened is not decreased")])
        }
        _ => Turn::text("No issues found."),
    }
}

fn command(dir: &Path, model: &ModelServer) -> Command {
    let claude = review_testkit::tools::claude_binary().expect("the pinned CLI is installed");
    let mut command = Command::new(env!("CARGO_BIN_EXE_review-bot"));
    command
        .arg("eval")
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.join("home"))
        .env("XDG_RUNTIME_DIR", dir.join("runtime"))
        .env("REVIEW_BOT_WORK_DIR", dir.join("work"))
        .env(
            "REVIEW_BOT_DATABASE_URL",
            format!("sqlite://{}", dir.join("store.sqlite3").display()),
        )
        .env("REVIEW_BOT_AGENT_MAX_RETRIES", "0")
        .env("REVIEW_BOT_AGENT_TIMEOUT_SECS", "300")
        .env("ANTHROPIC_API_KEY", "sk-ant-scripted-model-server")
        .env("REVIEW_BOT_AGENT_CLAUDE_PATH", claude)
        .env("ANTHROPIC_BASE_URL", model.base_url())
        .stdin(Stdio::null());
    command
}

async fn output(mut command: Command) -> (Output, f64) {
    let started = Instant::now();
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    (output, started.elapsed().as_secs_f64())
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn close(value: &Value, expected: f64) -> bool {
    value
        .as_f64()
        .is_some_and(|value| (value - expected).abs() < 1e-9)
}

fn places(items: &Value, key: Option<&str>) -> Vec<(String, u64)> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|item| key.map_or(item, |key| &item[key]))
        .map(|item| {
            (
                item["file"].as_str().unwrap().to_owned(),
                item["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

// One scenario, asserted step by step.
#[allow(clippy::too_many_lines)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scores_computed_by_hand_equal_what_eval_prints() {
    if review_testkit::tools::claude_for_test().is_none() {
        return;
    }
    let model = ModelServer::start(Script::new([]).then_forever(Turn::decide(answer)))
        .await
        .expect("the model server starts");
    let dir = tempfile::tempdir().unwrap();
    repository(dir.path());
    // Three cases: 6 golden findings, 4 findings, 2 matched.
    // Precision 2/4 = 0.5, recall 2/6 = 1/3, F1 = 2·0.5·(1/3)/(0.5 + 1/3) = 0.4.
    let cases = json!([
        {"name": "on-and-near", "repository": "widgets", "base": "main", "head": "hit",
         "title": "Numbers", "golden": [
            {"file": "src/lib.rs", "line": 5, "description": "five returns 6"},
            {"file": "src/lib.rs", "line": 20, "end_line": 21, "description": "twenty returns 19"},
            {"file": "src/lib.rs", "line": 30, "description": "thirty returns 3"}]},
        {"name": "quiet", "repository": "widgets", "base": "main", "head": "quiet",
         "golden": [{"file": "src/lib.rs", "line": 10, "description": "ten returns 1"}]},
        {"name": "broken", "repository": "widgets", "base": "main", "head": "no-such-branch",
         "golden": [{"file": "src/lib.rs", "line": 1, "description": "a"},
                    {"file": "src/lib.rs", "line": 2, "description": "b"}]}
    ]);
    std::fs::write(
        dir.path().join("cases.json"),
        serde_json::to_string_pretty(&cases).unwrap(),
    )
    .unwrap();

    let mut eval = command(dir.path(), &model);
    eval.args(["cases.json", "--json", "--jobs", "2"]);
    let (run, wall) = output(eval).await;
    let log = stderr(&run);
    // A failed case: exit 1, reported, its golden findings missed.
    assert_eq!(run.status.code(), Some(1), "{log}");
    assert!(
        log.contains("error: case broken failed: head \"no-such-branch\" is not a commit"),
        "{log}"
    );
    let document: Value = serde_json::from_slice(&run.stdout)
        .unwrap_or_else(|error| panic!("{error}: {}\n{log}", String::from_utf8_lossy(&run.stdout)));
    let totals = &document["totals"];
    let keys: Vec<&str> = totals
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys.len(),
        10,
        "{totals}: golden, findings, matched, precision, recall, f1, cost_usd, agent_seconds, turns, judge_cost_usd"
    );
    assert!(
        close(&totals["judge_cost_usd"], 0.0),
        "no judge, no cost: {totals}"
    );
    assert_eq!(totals["golden"], 6, "{document:#}\n{log}");
    assert_eq!(totals["findings"], 4, "{document:#}\n{log}");
    assert_eq!(totals["matched"], 2, "{document:#}\n{log}");
    assert!(close(&totals["precision"], 0.5), "{totals}");
    assert!(close(&totals["recall"], 1.0 / 3.0), "{totals}");
    assert!(close(&totals["f1"], 0.4), "{totals}");
    assert!(totals["turns"].as_u64().unwrap() >= 5, "{totals}");
    assert!(totals["agent_seconds"].as_f64().unwrap() > 0.0, "{totals}");
    assert!(totals["cost_usd"].as_f64().unwrap() >= 0.0, "{totals}");

    let cases = document["cases"].as_array().unwrap();
    let names: Vec<&str> = cases
        .iter()
        .map(|case| case["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["on-and-near", "quiet", "broken"]);
    for case in cases {
        let mut keys: Vec<&str> = case
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(keys, ["extra", "matched", "missed", "name"]);
    }
    let hit = &cases[0];
    assert_eq!(
        places(&hit["matched"], Some("golden")),
        [("src/lib.rs".to_owned(), 5), ("src/lib.rs".to_owned(), 20)]
    );
    assert_eq!(
        places(&hit["matched"], Some("finding")),
        [("src/lib.rs".to_owned(), 5), ("src/lib.rs".to_owned(), 24)]
    );
    assert_eq!(
        places(&hit["missed"], None),
        [("src/lib.rs".to_owned(), 30)]
    );
    assert_eq!(
        places(&hit["extra"], None),
        [("src/lib.rs".to_owned(), 40), ("README.md".to_owned(), 1)]
    );
    assert_eq!(
        places(&cases[1]["missed"], None),
        [("src/lib.rs".to_owned(), 10)]
    );
    assert!(cases[1]["extra"].as_array().unwrap().is_empty());
    assert_eq!(
        places(&cases[2]["missed"], None),
        [("src/lib.rs".to_owned(), 1), ("src/lib.rs".to_owned(), 2)]
    );
    assert!(cases[2]["matched"].as_array().unwrap().is_empty());
    // Progress went to standard error, per case.
    assert!(log.contains("on-and-near: ✓ clone ("), "{log}");
    assert!(log.contains("quiet: ✓ detailed pass ("), "{log}");
    assert!(log.contains("broken: ✗ clone ("), "{log}");
    eprintln!("eval --json, 3 cases: wall {wall:.2} s; {log}");

    // The text report says the same.
    let mut eval = command(dir.path(), &model);
    eval.args(["cases.json", "--jobs", "1"]);
    let (run, _) = output(eval).await;
    let log = stderr(&run);
    assert_eq!(run.status.code(), Some(1), "{log}");
    let text = String::from_utf8_lossy(&run.stdout).into_owned();
    for line in [
        "on-and-near: 2 matched, 1 missed, 2 extra",
        "  matched  src/lib.rs:5  ←  src/lib.rs:5  Five returns six",
        "  matched  src/lib.rs:20-21  ←  src/lib.rs:24  Twenty returns nineteen",
        "  missed   src/lib.rs:30  thirty returns 3",
        "  extra    src/lib.rs:40  Forty is unused",
        "  extra    README.md:1  A shouting title",
        "quiet: 0 matched, 1 missed, 0 extra",
        "broken: FAILED: head \"no-such-branch\" is not a commit",
        "  2 golden findings counted as missed",
        "3 cases (1 failed) · golden 6 · findings 4 · matched 2 · precision 0.500 · recall 0.333 · F1 0.400 (window 3)",
    ] {
        assert!(text.contains(line), "no {line:?} in:\n{text}\n{log}");
    }
    // The work directory keeps only the flow's job directories.
    assert!(
        std::fs::read_dir(dir.path().join("work/eval"))
            .unwrap()
            .next()
            .is_none()
    );
}

// One scenario, asserted step by step.
#[allow(clippy::too_many_lines)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_history_builds_cases_from_real_fixes_and_a_saved_run_repeats() {
    if review_testkit::tools::claude_for_test().is_none() {
        return;
    }
    let model = ModelServer::start(Script::new([]).then_forever(Turn::decide(answer)))
        .await
        .expect("the model server starts");
    let dir = tempfile::tempdir().unwrap();
    // A working clone of the replayed walkdir history (master only).
    let repo = dir.path().join("walkdir");
    git(
        dir.path(),
        &[
            "clone",
            "--quiet",
            "--branch",
            "master",
            walkdir_bundle().to_str().unwrap(),
            repo.to_str().unwrap(),
        ],
    );
    let fix = git(&repo, &["rev-parse", "master~2"]).trim().to_owned();
    let later_fix = git(&repo, &["rev-parse", "master~1"]).trim().to_owned();
    let saved = dir.path().join("saved");

    // The messages: readme (docs only), two "bug:" fixes, a re-arrangement
    // (not matched), two "tests:" commits (tests only; the root has no parent).
    let mut eval = command(dir.path(), &model);
    eval.arg("--from-history")
        .arg(&repo)
        .args(["--grep", "bug:\\|readme\\|tests:", "--json", "--save"])
        .arg(&saved);
    let (run, wall) = output(eval).await;
    let log = stderr(&run);
    assert!(run.status.success(), "{log}");
    assert!(
        log.contains(
            "from history: 2 cases built from {}; 3 skipped (1 a merge or the first commit, 2 tests or docs only)"
                .replace("{}", &repo.display().to_string())
                .as_str()
        ),
        "{log}"
    );
    let document: Value = serde_json::from_slice(&run.stdout).unwrap();
    let names: Vec<&str> = document["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| case["name"].as_str().unwrap())
        .collect();
    let fix_name = format!("fix-{}", &fix[..12]);
    let later_name = format!("fix-{}", &later_fix[..12]);
    assert_eq!(names, [later_name.as_str(), fix_name.as_str()]);

    // The saved case: base the fix, head on top of it with src/lib.rs as
    // before the fix and the regression test kept; golden the four lines put back.
    let case: Value = serde_json::from_str(
        &std::fs::read_to_string(saved.join(format!("{fix_name}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(case["repository"], "repository.bundle");
    assert_eq!(case["base"], fix.as_str());
    assert_eq!(
        case["golden"],
        json!([{"file": "src/lib.rs", "line": 727, "end_line": 730,
                "description": format!("Reintroduces the bug fixed in {} (\"bug: fix use of skip_current_dir\")", &fix[..12])}])
    );
    let head = case["head"].as_str().unwrap();
    let check = dir.path().join("check");
    git(
        dir.path(),
        &[
            "clone",
            "--quiet",
            "--mirror",
            saved.join("repository.bundle").to_str().unwrap(),
            check.to_str().unwrap(),
        ],
    );
    assert_eq!(git(&check, &["rev-parse", &format!("{head}^")]).trim(), fix);
    assert_eq!(
        git(&check, &["rev-parse", &format!("{head}:src/lib.rs")]),
        git(&repo, &["rev-parse", &format!("{fix}^:src/lib.rs")])
    );
    assert_eq!(
        git(
            &check,
            &["rev-parse", &format!("{head}:src/tests/recursive.rs")]
        ),
        git(
            &repo,
            &["rev-parse", &format!("{fix}:src/tests/recursive.rs")]
        )
    );
    // The finding on 728 hits the golden range; the later fix's golden
    // lines are all missed.
    let fix_case = &document["cases"][1];
    assert_eq!(
        fix_case["matched"].as_array().unwrap().len(),
        1,
        "{document:#}"
    );
    assert_eq!(document["totals"]["matched"], 1);
    assert_eq!(document["totals"]["findings"], 1);
    let golden = document["totals"]["golden"].as_u64().unwrap();
    assert!(golden >= 2, "{document:#}");
    eprintln!("eval --from-history, 2 cases: wall {wall:.2} s; {log}");

    // The saved directory repeats the run exactly.
    let mut eval = command(dir.path(), &model);
    eval.arg(&saved).arg("--json");
    let (run, _) = output(eval).await;
    let log = stderr(&run);
    assert!(run.status.success(), "{log}");
    let again: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(again["cases"], document["cases"]);
    for key in ["golden", "findings", "matched", "precision", "recall", "f1"] {
        assert_eq!(again["totals"][key], document["totals"][key], "{key}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_example_runs() {
    if review_testkit::tools::claude_for_test().is_none() {
        return;
    }
    let model = ModelServer::start(Script::new([]).then_forever(Turn::decide(answer)))
        .await
        .expect("the model server starts");
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/eval/cases.json");
    let mut eval = command(dir.path(), &model);
    eval.arg(&example).arg("--json");
    let (run, _) = output(eval).await;
    let log = stderr(&run);
    assert!(run.status.success(), "{log}");
    let document: Value = serde_json::from_slice(&run.stdout).unwrap();
    // skip-current-dir: its one golden finding hit; readme-only: nothing to find.
    assert_eq!(document["totals"]["golden"], 1, "{document:#}");
    assert_eq!(document["totals"]["matched"], 1, "{document:#}");
    assert_eq!(document["totals"]["findings"], 1, "{document:#}");
}

#[test]
fn usage_mistakes_exit_2_and_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        crate::review_bot(dir.path())
            .env("REVIEW_BOT_WORK_DIR", dir.path().join("work"))
            .env("ANTHROPIC_API_KEY", "sk-ant-unused")
            .arg("eval")
            .args(args)
            .output()
            .unwrap()
    };
    // Neither CASES nor --from-history.
    let output = run(&[]);
    assert_eq!(output.status.code(), Some(2));
    // A misspelt key.
    std::fs::write(
        dir.path().join("typo.json"),
        r#"{"repository": "r", "base": "a", "head": "b", "goldens": []}"#,
    )
    .unwrap();
    let output = run(&["typo.json"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("unknown field `goldens`"),
        "{}",
        stderr(&output)
    );
    // --from-history on something that is not a repository.
    let output = run(&["--from-history", "typo.json"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("not a directory"),
        "{}",
        stderr(&output)
    );
    // --save without --from-history.
    let output = run(&["typo.json", "--save", "out"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

/// The verifier (a run with `--json-schema`): refutes the finding on
/// `src/lib.rs:40` and the one on README.md, confirms the others.
fn verify_answer(request: &RecordedRequest) -> Turn {
    let prompt = request.user_text();
    if !request.last_tool_results().is_empty() {
        return Turn::text("Verified.");
    }
    let mut verdicts = Vec::new();
    for (index, section) in prompt.split("## Finding ").skip(1).enumerate() {
        let place = section.lines().nth(2).unwrap_or_default();
        let refuted = place.starts_with("src/lib.rs:40 ") || place.starts_with("README.md:1 ");
        verdicts.push(json!({
            "finding": index + 1,
            "verdict": if refuted { "refuted" } else { "confirmed" },
            "confidence": 90,
            "reason": "scripted",
        }));
    }
    Turn::tool("StructuredOutput", json!({ "verdicts": verdicts }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verification_pass_drops_what_the_verifier_refutes_and_nothing_else() {
    if review_testkit::tools::claude_for_test().is_none() {
        return;
    }
    let model = ModelServer::start(verifying_model())
        .await
        .expect("the model server starts");
    let dir = tempfile::tempdir().unwrap();
    repository(dir.path());
    let cases = json!([
        {"name": "on-and-near", "repository": "widgets", "base": "main", "head": "hit",
         "golden": [
            {"file": "src/lib.rs", "line": 5, "description": "five returns 6"},
            {"file": "src/lib.rs", "line": 20, "end_line": 21, "description": "twenty returns 19"},
            {"file": "src/lib.rs", "line": 30, "description": "thirty returns 3"}]}
    ]);
    std::fs::write(dir.path().join("cases.json"), cases.to_string()).unwrap();
    let mut eval = command(dir.path(), &model);
    eval.args(["cases.json", "--json"])
        .env("REVIEW_BOT_REVIEW_VERIFY", "true");
    let (run, _) = output(eval).await;
    let log = stderr(&run);
    assert!(run.status.success(), "{log}");
    let document: Value = serde_json::from_slice(&run.stdout).unwrap();
    // Without the pass: 4 findings, 2 matched, 2 extra. With it: the two
    // refuted extras are withheld, the two confirmed hits stay.
    let case = &document["cases"][0];
    assert_eq!(
        places(&case["matched"], Some("finding")),
        [("src/lib.rs".to_owned(), 5), ("src/lib.rs".to_owned(), 24)],
        "{document:#}\n{log}"
    );
    assert!(case["extra"].as_array().unwrap().is_empty(), "{document:#}");
    assert_eq!(document["totals"]["findings"], 2);
    assert!(close(&document["totals"]["precision"], 1.0));
    assert!(
        log.contains("✓ verification pass (2 kept, 2 withheld as unlikely"),
        "{log}"
    );
    // The review body says so.
    let jobs: Vec<PathBuf> = std::fs::read_dir(dir.path().join("work/local"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .collect();
    let review = std::fs::read_to_string(jobs[0].join("review.md")).unwrap();
    assert!(
        review.contains("2 findings withheld as unlikely by the verification pass"),
        "{review}"
    );
}

/// The model for the passes ([`answer`]) and one more kind of run: those
/// whose prompt contains `marker` get `special`'s answer.
fn model_with(marker: &'static str, special: fn(&RecordedRequest) -> Turn) -> Script {
    Script::new([]).then_forever(Turn::decide(move |request| {
        if request.user_text().contains(marker) {
            special(request)
        } else {
            answer(request)
        }
    }))
}

/// The model for the passes and the verifier ([`verify_answer`]).
fn verifying_model() -> Script {
    model_with("You verify findings of a code review", verify_answer)
}

/// The figures of a row of `--compare`'s text block: the row named `name`
/// after the line starting with `block`.
fn row<'a>(text: &'a str, block: &str, name: &str) -> Vec<&'a str> {
    let start = text
        .find(block)
        .unwrap_or_else(|| panic!("no {block:?} in:\n{text}"));
    let line = text[start..]
        .lines()
        .find(|line| line.trim_start().starts_with(name))
        .unwrap_or_else(|| panic!("no row {name:?} after {block:?} in:\n{text}"));
    line.trim_start()[name.len()..].split_whitespace().collect()
}

// One scenario, asserted step by step.
#[allow(clippy::too_many_lines)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_runs_both_settings_and_prints_them_side_by_side() {
    if review_testkit::tools::claude_for_test().is_none() {
        return;
    }
    let model = ModelServer::start(verifying_model())
        .await
        .expect("the model server starts");
    let dir = tempfile::tempdir().unwrap();
    repository(dir.path());
    // As configured: on-and-near has 4 findings, 2 matched (of 3 golden);
    // quiet none (of 1). Totals: golden 4, findings 4, matched 2:
    // precision 0.5, recall 0.5, F1 0.5.
    // With review.verify=true the verifier refutes lib.rs:40 and README.md:1
    // (both extra): findings 2, matched 2: precision 1, recall 0.5,
    // F1 = 2·1·0.5/1.5 = 2/3. Per case, on-and-near: precision 0.5 → 1,
    // recall 2/3 both, F1 4/7 → 0.8.
    let cases = json!([
        {"name": "on-and-near", "repository": "widgets", "base": "main", "head": "hit",
         "golden": [
            {"file": "src/lib.rs", "line": 5, "description": "five returns 6"},
            {"file": "src/lib.rs", "line": 20, "end_line": 21, "description": "twenty returns 19"},
            {"file": "src/lib.rs", "line": 30, "description": "thirty returns 3"}]},
        {"name": "quiet", "repository": "widgets", "base": "main", "head": "quiet",
         "golden": [{"file": "src/lib.rs", "line": 10, "description": "ten returns 1"}]}
    ]);
    std::fs::write(dir.path().join("cases.json"), cases.to_string()).unwrap();

    let mut eval = command(dir.path(), &model);
    eval.args(["cases.json", "--json", "--compare", "review.verify=true"]);
    let (run, wall) = output(eval).await;
    let log = stderr(&run);
    assert!(run.status.success(), "{log}");
    let document: Value = serde_json::from_slice(&run.stdout)
        .unwrap_or_else(|error| panic!("{error}: {}\n{log}", String::from_utf8_lossy(&run.stdout)));
    let mut keys: Vec<&str> = document
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["baseline", "compared", "setting"]);
    assert_eq!(document["setting"], "review.verify=true");
    let (baseline, compared) = (
        &document["baseline"]["totals"],
        &document["compared"]["totals"],
    );
    assert_eq!(baseline["findings"], 4, "{document:#}");
    assert_eq!(compared["findings"], 2, "{document:#}");
    assert!(close(&baseline["precision"], 0.5), "{baseline}");
    assert!(close(&baseline["recall"], 0.5), "{baseline}");
    assert!(close(&baseline["f1"], 0.5), "{baseline}");
    assert!(close(&compared["precision"], 1.0), "{compared}");
    assert!(close(&compared["recall"], 0.5), "{compared}");
    assert!(close(&compared["f1"], 2.0 / 3.0), "{compared}");
    assert!(
        compared["turns"].as_u64().unwrap() > baseline["turns"].as_u64().unwrap(),
        "the verifier's turns count: {document:#}"
    );
    assert!(
        document["compared"]["cases"][0]["extra"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // Progress names the compared run's cases apart.
    assert!(
        log.contains("on-and-near [review.verify=true]: ✓ verification pass ("),
        "{log}"
    );
    assert!(!log.contains("on-and-near: ✓ verification pass"), "{log}");
    eprintln!("eval --compare, 2 cases twice: wall {wall:.2} s; {log}");

    // The text report: both columns, per case and for the totals.
    let mut eval = command(dir.path(), &model);
    eval.args(["cases.json", "--compare", "review.verify=true"]);
    let (run, _) = output(eval).await;
    let log = stderr(&run);
    assert!(run.status.success(), "{log}");
    let text = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(text.contains("as configured  review.verify=true"), "{text}");
    assert_eq!(
        row(&text, "on-and-near", "precision"),
        ["0.500", "1.000"],
        "{text}"
    );
    assert_eq!(
        row(&text, "on-and-near", "recall"),
        ["0.667", "0.667"],
        "{text}"
    );
    assert_eq!(
        row(&text, "on-and-near", "F1"),
        ["0.571", "0.800"],
        "{text}"
    );
    assert_eq!(row(&text, "on-and-near", "findings"), ["4", "2"], "{text}");
    assert_eq!(row(&text, "quiet", "findings"), ["0", "0"], "{text}");
    assert_eq!(
        row(&text, "totals:", "precision"),
        ["0.500", "1.000"],
        "{text}"
    );
    assert_eq!(
        row(&text, "totals:", "recall"),
        ["0.500", "0.500"],
        "{text}"
    );
    assert_eq!(row(&text, "totals:", "F1"), ["0.500", "0.667"], "{text}");
    assert_eq!(
        row(&text, "totals:", "matched"),
        ["2", "of", "4", "2", "of", "4"],
        "{text}"
    );
    for name in ["cost (USD)", "agent seconds", "turns"] {
        assert_eq!(row(&text, "totals:", name).len(), 2, "{name}: {text}");
    }

    // Mistakes in the setting: exit 2, saying what to give.
    for (setting, expected) in [
        (
            "review.verfy=true",
            "`review.verfy` is not a configuration key; use one of:",
        ),
        (
            "review.min_confidence=lots",
            "expected a whole number from 0 to 100",
        ),
        ("review.verify", "is not SETTING=VALUE"),
    ] {
        let mut eval = command(dir.path(), &model);
        eval.args(["cases.json", "--compare", setting]);
        let (run, _) = output(eval).await;
        let log = stderr(&run);
        assert_eq!(run.status.code(), Some(2), "{setting}: {log}");
        assert!(log.contains(expected), "{setting}: {log}");
    }
}

/// The judge (a run with `--json-schema` whose prompt lists pairs): a pair
/// matches when a word of more than three letters of the finding's title is
/// in the known problem's description.
fn judge_answer(request: &RecordedRequest) -> Turn {
    if !request.last_tool_results().is_empty() {
        return Turn::text("Judged.");
    }
    let prompt = request.user_text();
    let mut verdicts = Vec::new();
    for (index, section) in prompt.split("## Pair ").skip(1).enumerate() {
        let lines: Vec<&str> = section.lines().collect();
        let description = lines[2].split_once(": ").unwrap().1.to_lowercase();
        let title = lines[4].split_once(": ").unwrap().1.to_lowercase();
        let matches = title
            .split_whitespace()
            .any(|word| word.len() > 3 && description.contains(word));
        verdicts.push(json!({"pair": index + 1, "match": matches, "reason": "scripted"}));
    }
    Turn::tool("StructuredOutput", json!({ "verdicts": verdicts })).with_usage(20_000, 500)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_judge_matches_golden_findings_without_lines_by_its_verdicts() {
    if review_testkit::tools::claude_for_test().is_none() {
        return;
    }
    let model = ModelServer::start(model_with(
        "You judge a code review against known problems",
        judge_answer,
    ))
    .await
    .expect("the model server starts");
    let dir = tempfile::tempdir().unwrap();
    repository(dir.path());
    // Findings: f0 lib.rs:5 "Five returns six", f1 lib.rs:24 "Twenty returns
    // nineteen", f2 lib.rs:40 "Forty is unused", f3 README.md:1 "A shouting
    // title". Golden: g0 lib.rs:5 (a line: the window matches f0); g1 in
    // lib.rs, no line (pairs with f0, f1, f2; the judge says f0 and f1);
    // g2 no file, no line (pairs with all four; the judge says f3). 7 pairs.
    // One-to-one: g0–f0, g1–f1, g2–f3; f2 extra. Precision 3/4, recall 3/3,
    // F1 = 2·0.75/1.75 = 6/7.
    let cases = json!([
        {"name": "on-and-near", "repository": "widgets", "base": "main", "head": "hit",
         "golden": [
            {"file": "src/lib.rs", "line": 5, "description": "five returns 6"},
            {"file": "src/lib.rs", "description": "twenty or five is off by one"},
            {"description": "the title shouts"}]}
    ]);
    std::fs::write(dir.path().join("cases.json"), cases.to_string()).unwrap();

    // Without --judge: a case error that says to use it.
    let mut eval = command(dir.path(), &model);
    eval.arg("cases.json");
    let (run, _) = output(eval).await;
    let log = stderr(&run);
    assert_eq!(run.status.code(), Some(2), "{log}");
    assert!(
        log.contains("case on-and-near: golden finding 2 has no line, so only the judge can match it; run with --judge"),
        "{log}"
    );
    assert!(model.requests().is_empty(), "nothing ran");

    let mut eval = command(dir.path(), &model);
    eval.args(["cases.json", "--judge", "--json"]);
    let (run, _) = output(eval).await;
    let log = stderr(&run);
    assert!(run.status.success(), "{log}");
    let document: Value = serde_json::from_slice(&run.stdout).unwrap();
    let case = &document["cases"][0];
    let matched: Vec<(Value, String, u64)> = case["matched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pair| {
            (
                pair["golden"]["description"].clone(),
                pair["finding"]["file"].as_str().unwrap().to_owned(),
                pair["finding"]["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        matched,
        [
            (json!("five returns 6"), "src/lib.rs".to_owned(), 5),
            (
                json!("twenty or five is off by one"),
                "src/lib.rs".to_owned(),
                24
            ),
            (json!("the title shouts"), "README.md".to_owned(), 1),
        ],
        "{document:#}\n{log}"
    );
    assert_eq!(
        places(&case["extra"], None),
        [("src/lib.rs".to_owned(), 40)]
    );
    assert!(case["missed"].as_array().unwrap().is_empty());
    let totals = &document["totals"];
    assert!(close(&totals["precision"], 0.75), "{totals}");
    assert!(close(&totals["recall"], 1.0), "{totals}");
    assert!(close(&totals["f1"], 6.0 / 7.0), "{totals}");
    // The judge's cost is its own: the scripted usage is on its turns only.
    let judge_cost = totals["judge_cost_usd"].as_f64().unwrap();
    assert!(judge_cost > 0.0, "{totals}");
    assert!(
        totals["cost_usd"].as_f64().unwrap() < judge_cost,
        "the judge's cost is not the review's: {totals}"
    );
    assert!(
        log.contains("on-and-near: ✓ judge (3 of 7 pairs match"),
        "{log}"
    );

    // The text report: the judge's line, and golden places without lines.
    let mut eval = command(dir.path(), &model);
    eval.args(["cases.json", "--judge"]);
    let (run, _) = output(eval).await;
    let text = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(
        text.contains("  matched  (any file) (judged)  ←  README.md:1  A shouting title"),
        "{text}"
    );
    assert!(text.contains("\njudge: 7 pairs decided · $"), "{text}");
}
