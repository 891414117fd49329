//! The findings validator against the shipped JSON Schema and seed 003's example.

use review_core::anchor::CommentLocation;
use review_core::findings::{self, ConfidenceLevel, JSON_SCHEMA, Severity, Side};
use serde_json::{Value, json};

use crate::fixture;

fn seed_example() -> Value {
    serde_json::from_str(&fixture("findings/seed-example.json")).unwrap()
}

fn schema() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(JSON_SCHEMA).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema")
}

/// `document` with the value at `pointer` replaced (or removed when `None`).
fn with(document: &Value, pointer: &str, value: Option<Value>) -> Value {
    let mut document = document.clone();
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let parent = document.pointer_mut(parent).expect("parent exists");
    match (parent, value) {
        (Value::Object(map), Some(value)) => {
            map.insert(key.to_owned(), value);
        }
        (Value::Object(map), None) => {
            map.remove(key);
        }
        (Value::Array(items), Some(value)) => items[key.parse::<usize>().unwrap()] = value,
        (Value::Array(items), None) => {
            items.remove(key.parse::<usize>().unwrap());
        }
        _ => panic!("{pointer} is not in an object or array"),
    }
    document
}

#[test]
fn seed_example_is_valid_for_both() {
    let document = seed_example();
    assert!(schema().is_valid(&document));
    let validation = findings::validate_value(&document);
    assert!(validation.is_valid(), "{:?}", validation.errors);
    let findings = validation.findings.unwrap();
    assert_eq!(findings.pull_request.repository, "owner/repo");
    let comment = &findings.line_comments[0];
    assert_eq!(comment.confidence_level, ConfidenceLevel::High);
    assert_eq!(comment.severity, Severity::Critical);
    assert_eq!(comment.side(), Side::Right);
    // The only warning: the seed's SHA is abbreviated.
    let warnings: Vec<String> = validation
        .warnings
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        warnings,
        ["/pr_info/head_sha: abbreviated SHA: GitHub needs the full SHA as the review's commit_id"]
    );
    // Serialising the typed findings gives back the seed's document.
    assert_eq!(serde_json::to_value(&findings).unwrap(), document);
}

/// Documents both validators must judge the same way: (name, document, valid),
/// from `fixtures/findings/agreement-cases.json`.
fn agreement_cases() -> Vec<(String, Value, bool)> {
    let seed = seed_example();
    let file: Value = serde_json::from_str(&fixture("findings/agreement-cases.json")).unwrap();
    let mut cases = Vec::new();
    for case in file["cases"].as_array().unwrap() {
        let mut document = case
            .get("document")
            .cloned()
            .unwrap_or_else(|| seed.clone());
        for (pointer, value) in case
            .get("set")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            document = with(&document, pointer, Some(value.clone()));
        }
        for pointer in case
            .get("remove")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            document = with(&document, pointer.as_str().unwrap(), None);
        }
        let name = case["name"].as_str().unwrap().to_owned();
        cases.push((name, document, case["valid"].as_bool().unwrap()));
    }
    cases
}

#[test]
fn rust_validator_and_json_schema_agree() {
    let schema = schema();
    let cases = agreement_cases();
    assert!(cases.len() > 50);
    for (name, document, valid) in cases {
        let validation = findings::validate_value(&document);
        assert_eq!(
            validation.is_valid(),
            valid,
            "{name}: {:?}",
            validation.errors
        );
        assert_eq!(
            schema.is_valid(&document),
            valid,
            "{name}: the schema disagrees"
        );
        assert_eq!(validation.findings.is_some(), valid, "{name}");
    }
}

#[test]
fn start_line_not_before_line_is_a_warning_for_both() {
    let document = with(
        &seed_example(),
        "/line_comments/0/start_line",
        Some(json!(42)),
    );
    assert!(schema().is_valid(&document));
    let validation = findings::validate_value(&document);
    assert!(validation.is_valid());
    assert!(
        validation
            .warnings
            .iter()
            .any(|warning| warning.to_string()
                == "/line_comments/0/start_line: should be less than line (42), found 42: anchoring treats it as a one-line comment")
    );
}

#[test]
fn every_error_is_reported_with_its_location() {
    let document = json!({
        "version": "1.0",
        "pr_info": { "number": 7, "repo": "acme/api", "title": "t", "description": "", "head_sha": "zz" },
        "review_summary": { "overview": "o", "key_findings": "none", "security_assessment": "s", "positive_highlights": "p" },
        "line_comments": [
            { "file": "a.go", "line": 3, "confidence": 70, "confidence_level": "high", "severity": "logic",
              "title": "Off by one", "description": "d", "side": "LEFT", "start_line": 1, "note": "x" },
            { "file": "", "line": "9", "confidence": 150, "confidence_level": "medium", "severity": "bad",
              "title": "", "description": "d" },
            42
        ],
        "review_event": "COMMENT",
        "metadata": { "reviewed_at": "yesterday", "reviewer_agent": "r", "files_analyzed": 1, "total_issues": 1 }
    });
    let validation = findings::validate_value(&document);
    let errors: Vec<String> = validation.errors.iter().map(ToString::to_string).collect();
    insta::assert_snapshot!(errors.join("\n"), @r#"
    /pr_info/head_sha: expected a commit SHA (7 to 64 hex digits), found "zz"
    /review_summary/key_findings: expected an array of strings, found the string "none"
    /review_summary/confidence_breakdown: required field is missing
    /line_comments/0/confidence_level: "high" does not match confidence 70: 60–84 is "medium"
    /line_comments/1/file: must not be empty
    /line_comments/1/line: expected a line number ≥ 1, found the string "9"
    /line_comments/1/confidence: expected an integer from 0 to 100, found 150
    /line_comments/1/severity: expected one of "critical", "security", "performance", "logic", "improvement", "clarity", found the string "bad"
    /line_comments/1/title: must be 1 to 10 words, found 0
    /line_comments/2: expected an object, found 42
    /metadata/reviewed_at: expected an ISO 8601 timestamp like "2025-01-13T10:30:00Z", found "yesterday"
    "#);
    let warnings: Vec<String> = validation
        .warnings
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        warnings,
        [
            "/line_comments/0/note: unknown field, ignored",
            "/metadata/total_issues: says 1 but line_comments has 3",
        ]
    );
    // Comments with a usable file and line are still located for anchoring.
    assert_eq!(validation.locations.len(), 1);
    let located = &validation.locations[0];
    assert_eq!(located.index, 0);
    assert_eq!(
        located.location,
        CommentLocation::new("a.go", 3)
            .with_start_line(1)
            .on_side(Side::Left)
    );
    assert!(validation.findings.is_none());
}

#[test]
fn malformed_json_is_one_clear_error() {
    for (bytes, expected) in [
        (
            &b""[..],
            "(document): the file is empty; expected a JSON object (findings schema v1.0)",
        ),
        (
            b"{\"version\": \"1.0\",\n  \"pr_info\": }",
            "(document): not valid JSON: expected value at line 2 column 14; expected a JSON object (findings schema v1.0)",
        ),
        (
            b"\xff\xfe",
            "(document): not valid JSON: expected value at line 1 column 1; expected a JSON object (findings schema v1.0)",
        ),
    ] {
        let validation = findings::validate(bytes);
        let errors: Vec<String> = validation.errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors, [expected]);
        assert!(validation.locations.is_empty());
    }
    // A UTF-8 byte-order mark is not an error.
    let mut with_bom = b"\xEF\xBB\xBF".to_vec();
    with_bom.extend(fixture("findings/seed-example.json").bytes());
    assert!(findings::validate(&with_bom).is_valid());
}
