//! How long one Claude Code run takes against the scripted model server, for
//! CI budgeting: the pinned CLI's start-up, its MCP connection, and each
//! scripted turn, through the production runner.
//!
//! `cargo bench -p review-agent --bench scripted_run -- --warm-up-time 1 --measurement-time 10`

use std::collections::BTreeMap;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use review_agent::claude::{
    ClaudeCode, ClaudeCodeRun, ClaudeCodeSettings, McpConfig, McpServerCommand,
};
use review_testkit::model::{ModelServer, Script, ToolCall, Turn};
use serde_json::json;

fn scripted_runs(criterion: &mut Criterion) {
    let Ok(claude) = review_testkit::tools::claude_binary() else {
        eprintln!("the pinned Claude Code CLI is not installed; run scripts/install-test-deps");
        return;
    };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let node = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|directory| directory.join("node"))
        .find(|candidate| candidate.is_file());

    let run_once = |script: &dyn Fn(&Path) -> Script, with_mcp: bool| {
        runtime.block_on(async {
            let checkout = tempfile::tempdir().expect("checkout");
            let server = ModelServer::start(script(checkout.path()))
                .await
                .expect("model server");
            let run_directory = tempfile::tempdir().expect("run directory");
            let settings = ClaudeCodeSettings::new(&claude, "claude-opus-4-6")
                .with_base_url(server.base_url())
                .with_api_key("sk-ant-bench".into())
                .with_max_retries(0);
            let mut run =
                ClaudeCodeRun::new("Bench.", checkout.path(), run_directory.path().join("run"));
            if with_mcp {
                let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/it/fixtures/tiny-mcp-server.js");
                run = run.with_mcp(McpConfig::review(McpServerCommand {
                    command: node.clone().expect("node on PATH"),
                    args: vec![fixture.display().to_string()],
                    env: BTreeMap::new(),
                }));
            }
            let agent_run = ClaudeCode::new(settings).run(&run).await.expect("run");
            assert!(agent_run.is_success(), "{agent_run:?}");
        });
    };

    let mut group = criterion.benchmark_group("claude_code_scripted_run");
    group.sample_size(10);
    group.bench_function("one_text_turn", |bencher| {
        bencher.iter(|| run_once(&|_| Script::new([Turn::text("done")]), false));
    });
    group.bench_function("three_turns_write_bash_text", |bencher| {
        bencher.iter(|| {
            run_once(
                &|checkout| {
                    Script::new([
                        Turn::tool(
                            "Write",
                            json!({"file_path": checkout.join("a.txt"), "content": "x"}),
                        ),
                        Turn::tools([ToolCall::new(
                            "Bash",
                            json!({"command": "true", "description": "noop"}),
                        )]),
                        Turn::text("done"),
                    ])
                },
                false,
            );
        });
    });
    if node.is_some() {
        group.bench_function("one_text_turn_with_mcp_server", |bencher| {
            bencher.iter(|| run_once(&|_| Script::new([Turn::text("done")]), true));
        });
    }
    group.finish();
}

criterion_group!(benches, scripted_runs);
criterion_main!(benches);
