//! Checking a hand-written JSON file (a `github-sim` scenario, a `model-sim`
//! script) with a message that names the JSON path of each mistake and what
//! was expected there, for the two standalone binaries.

use serde_json::{Map, Value};

/// A problem in the file, at a JSON path (`$.turns[1].tools[0].input`).
#[derive(Debug, PartialEq, Eq)]
pub struct Malformed {
    /// Where.
    pub path: String,
    /// What is wrong, and what was expected.
    pub problem: String,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}: {}", self.path, self.problem)
    }
}

/// A [`Malformed`] at `path`.
pub fn malformed(path: &str, problem: impl Into<String>) -> Malformed {
    Malformed {
        path: path.to_owned(),
        problem: problem.into(),
    }
}

/// The JSON type of `value`, for messages.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `value` as an object, or a message saying it should be `what`.
pub fn object<'a>(
    value: &'a Value,
    path: &str,
    what: &str,
) -> Result<&'a Map<String, Value>, Malformed> {
    value
        .as_object()
        .ok_or_else(|| malformed(path, format!("expected {what}, found {}", kind(value))))
}

/// Refuses a key of `map` not in `allowed`, naming the keys it takes.
pub fn only_keys(map: &Map<String, Value>, path: &str, allowed: &[&str]) -> Result<(), Malformed> {
    match map.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(malformed(
            &format!("{path}.{key}"),
            format!(
                "unknown key; expected {}",
                allowed
                    .iter()
                    .map(|key| format!("`{key}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
        None => Ok(()),
    }
}
