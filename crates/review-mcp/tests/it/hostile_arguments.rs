//! Issue 19, item 9: no argument from the agent may panic the server. Arbitrary
//! JSON — field names the tools know and some they do not, values of every
//! type, text with multi-byte characters where ids and numbers belong — is
//! sent to every tool over one MCP session; each call must be answered, and
//! never by the server's panic backstop.

use std::cell::RefCell;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value};

use crate::support::{Run, Session, snapshot};

const TOOLS: &[&str] = &[
    "leave_inline_comment",
    "leave_general_comment",
    "github_get_pr_comments",
    "github_post_pr_reply",
    "present_review",
];

const FIELDS: &[&str] = &[
    "path",
    "line",
    "message",
    "start_line",
    "side",
    "title",
    "severity",
    "confidence",
    "suggestion",
    "comment_id",
    "include_replied",
    "content",
    "mode",
    "baseUri",
    "base_uri",
    "section",
    "body",
];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,12}",
        "(thread|THREAD)[:é🎉]{0,4}[0-9a-fé-]{0,40}",
        "#?[0-9é]{0,22}",
        "(src/lib\\.rs|docs/guide\\.md|\\.\\./x|/etc/passwd|a\u{0}b)",
        "(replace|update-section|append|RIGHT|LEFT|critical|true|é)",
        "#{1,3} [a-zé]{0,8}\n[\\PC\n]{0,30}",
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1.0e20f64..1.0e20).prop_map(Value::from),
        (0u64..120).prop_map(Value::from),
        text().prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::btree_map(text(), inner, 0..3)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn arguments() -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::vec(
        (
            prop_oneof![
                4 => proptest::sample::select(FIELDS).prop_map(str::to_owned),
                1 => text(),
            ],
            value(),
        ),
        0..7,
    )
    .prop_map(|fields| fields.into_iter().collect())
}

#[test]
fn no_arguments_panic_the_server() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let run = Run::new();
    let session = RefCell::new(runtime.block_on(Session::start(run.options(Some(snapshot())))));
    let mut runner = TestRunner::new(Config {
        cases: 384,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(
            &(proptest::sample::select(TOOLS), arguments()),
            |(tool, arguments)| {
                let answer = runtime.block_on(
                    session
                        .borrow_mut()
                        .call(tool, Value::Object(arguments.clone())),
                );
                prop_assert!(
                    !answer.text.contains("internal error in review-bot"),
                    "{tool} {arguments:?} panicked: {}",
                    answer.text
                );
                Ok(())
            },
        )
        .unwrap();
}
