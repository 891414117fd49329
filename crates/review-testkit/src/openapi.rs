//! OpenAPI 3.0 → JSON Schema, for validating requests and responses against an API
//! description.
//!
//! OpenAPI 3.0's schema objects are *almost* JSON Schema (draft 4/5): they add `nullable`,
//! `discriminator`, `example`, `deprecated`, `readOnly`/`writeOnly`, `xml`, `externalDocs` and
//! `x-…` extensions, and a `$ref` ignores its siblings. [`to_json_schema`] rewrites one schema
//! into draft-4 JSON Schema: `nullable: true` becomes a `"null"` type (or an `anyOf` with one),
//! annotation-only keywords are dropped, `$ref` siblings are dropped. [`OpenApi`] compiles the
//! request and response schemas of an operation against the document's `components` (refs
//! resolve inside the same document) with the `jsonschema` crate, caches the validators, and
//! reports violations as readable strings.
//!
//! *Strict* validation additionally forbids properties a schema does not declare
//! (`additionalProperties: false` on every object schema that lists its properties, with
//! `allOf` members merged first) — used to prove the GitHub simulator invents no fields, and to
//! flag request fields GitHub would silently ignore.
//!
//! [`OpenApi::github_subset`] is GitHub's description of every operation review-bot calls
//! (`openapi/github-subset.json`, see the README next to it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value, json};

/// Why a document or schema could not be used.
#[derive(Debug, thiserror::Error)]
pub enum OpenApiError {
    /// The document is not valid JSON.
    #[error("the OpenAPI document is not valid JSON: {0}")]
    Parse(#[from] serde_json::Error),
    /// The operation id is not in the document.
    #[error("the OpenAPI document has no operation {0:?}")]
    UnknownOperation(String),
    /// A schema failed to compile (a bug in the document or in the conversion).
    #[error("the schema for {what} does not compile: {message}")]
    Compile {
        /// Which schema.
        what: String,
        /// The compiler's message.
        message: String,
    },
}

/// How strictly to validate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strictness {
    /// JSON Schema semantics: undeclared properties are allowed.
    Lenient,
    /// Undeclared properties are violations too.
    Strict,
}

/// One operation of the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationInfo {
    /// `operationId`.
    pub id: String,
    /// Upper-case HTTP method.
    pub method: String,
    /// The path template (`/repos/{owner}/{repo}/pulls/{pull_number}`).
    pub path: String,
}

/// An OpenAPI document with compiled, cached validators.
pub struct OpenApi {
    document: Value,
    /// `components`, converted to JSON Schema once per strictness.
    components: HashMap<Strictness, Value>,
    validators: Mutex<HashMap<(String, Strictness), Arc<jsonschema::Validator>>>,
}

impl std::fmt::Debug for OpenApi {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("OpenApi")
            .field("operations", &self.operations().len())
            .finish_non_exhaustive()
    }
}

const METHODS: [&str; 7] = ["get", "put", "post", "delete", "patch", "head", "options"];

impl OpenApi {
    /// Parses a document.
    pub fn from_json(text: &str) -> Result<Self, OpenApiError> {
        Ok(Self::from_value(serde_json::from_str(text)?))
    }

    /// Wraps a parsed document.
    pub fn from_value(document: Value) -> Self {
        let raw_components = document
            .get("components")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let mut components = HashMap::new();
        for strictness in [Strictness::Lenient, Strictness::Strict] {
            components.insert(
                strictness,
                convert_components(&raw_components, &document, strictness),
            );
        }
        Self {
            document,
            components,
            validators: Mutex::new(HashMap::new()),
        }
    }

    /// GitHub's REST description of the operations review-bot uses.
    pub fn github_subset() -> &'static Self {
        static SUBSET: OnceLock<OpenApi> = OnceLock::new();
        SUBSET.get_or_init(|| {
            Self::from_json(include_str!("../openapi/github-subset.json"))
                .expect("the vendored GitHub OpenAPI subset is valid JSON")
        })
    }

    /// The raw document.
    pub fn document(&self) -> &Value {
        &self.document
    }

    /// Every operation, in document order.
    pub fn operations(&self) -> Vec<OperationInfo> {
        let mut operations = Vec::new();
        if let Some(paths) = self.document.get("paths").and_then(Value::as_object) {
            for (path, item) in paths {
                for method in METHODS {
                    if let Some(id) = item
                        .get(method)
                        .and_then(|operation| operation.get("operationId"))
                        .and_then(Value::as_str)
                    {
                        operations.push(OperationInfo {
                            id: id.to_owned(),
                            method: method.to_ascii_uppercase(),
                            path: path.clone(),
                        });
                    }
                }
            }
        }
        operations
    }

    /// The raw operation object.
    pub fn operation(&self, operation_id: &str) -> Option<&Value> {
        let paths = self.document.get("paths")?.as_object()?;
        paths.values().find_map(|item| {
            METHODS.iter().find_map(|method| {
                item.get(*method).filter(|operation| {
                    operation.get("operationId").and_then(Value::as_str) == Some(operation_id)
                })
            })
        })
    }

    /// Follows a `$ref` (`#/components/…`) inside the document; other values pass through.
    pub fn resolve<'value>(&'value self, value: &'value Value) -> &'value Value {
        let mut current = value;
        for _ in 0..16 {
            match current.get("$ref").and_then(Value::as_str) {
                Some(reference) => match reference
                    .strip_prefix('#')
                    .and_then(|pointer| self.document.pointer(pointer))
                {
                    Some(target) => current = target,
                    None => return current,
                },
                None => return current,
            }
        }
        current
    }

    /// The OpenAPI request-body schema of an operation (`application/json`), if it has one.
    pub fn request_schema(&self, operation_id: &str) -> Result<Option<&Value>, OpenApiError> {
        let operation = self
            .operation(operation_id)
            .ok_or_else(|| OpenApiError::UnknownOperation(operation_id.to_owned()))?;
        Ok(operation
            .get("requestBody")
            .map(|body| self.resolve(body))
            .and_then(|body| body.pointer("/content/application~1json/schema")))
    }

    /// Whether the operation's request body is required.
    pub fn request_body_required(&self, operation_id: &str) -> bool {
        self.operation(operation_id)
            .and_then(|operation| operation.get("requestBody"))
            .map(|body| self.resolve(body))
            .and_then(|body| body.get("required"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// The response object of an operation for a status (falling back to `default`).
    pub fn response(
        &self,
        operation_id: &str,
        status: u16,
    ) -> Result<Option<&Value>, OpenApiError> {
        let operation = self
            .operation(operation_id)
            .ok_or_else(|| OpenApiError::UnknownOperation(operation_id.to_owned()))?;
        let responses = operation.get("responses");
        Ok(responses
            .and_then(|responses| {
                responses
                    .get(status.to_string())
                    .or_else(|| responses.get("default"))
            })
            .map(|response| self.resolve(response)))
    }

    /// The statuses an operation declares.
    pub fn declared_statuses(&self, operation_id: &str) -> Vec<String> {
        self.operation(operation_id)
            .and_then(|operation| operation.get("responses"))
            .and_then(Value::as_object)
            .map(|responses| responses.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The OpenAPI schema of a response body for a status and content type.
    pub fn response_schema(
        &self,
        operation_id: &str,
        status: u16,
        content_type: &str,
    ) -> Result<Option<&Value>, OpenApiError> {
        let pointer = format!(
            "/content/{}/schema",
            content_type.replace('~', "~0").replace('/', "~1")
        );
        Ok(self
            .response(operation_id, status)?
            .and_then(|response| response.pointer(&pointer)))
    }

    /// The header names a response declares (lower-cased).
    pub fn response_headers(&self, operation_id: &str, status: u16) -> Vec<String> {
        self.response(operation_id, status)
            .ok()
            .flatten()
            .and_then(|response| response.get("headers"))
            .and_then(Value::as_object)
            .map(|headers| {
                headers
                    .keys()
                    .map(|name| name.to_ascii_lowercase())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Validates a request body against the operation's request schema. An operation without
    /// a request schema accepts anything.
    pub fn validate_request(
        &self,
        operation_id: &str,
        body: &Value,
        strictness: Strictness,
    ) -> Result<Vec<String>, OpenApiError> {
        let Some(schema) = self.request_schema(operation_id)? else {
            return Ok(Vec::new());
        };
        let key = format!("request {operation_id}");
        self.validate_with(&key, schema, body, strictness)
    }

    /// Validates a response body against the operation's schema for `status` (JSON). `Ok(None)`
    /// when the operation declares no JSON schema for that status.
    pub fn validate_response(
        &self,
        operation_id: &str,
        status: u16,
        body: &Value,
        strictness: Strictness,
    ) -> Result<Option<Vec<String>>, OpenApiError> {
        let Some(schema) = self.response_schema(operation_id, status, "application/json")? else {
            return Ok(None);
        };
        let key = format!("response {operation_id} {status}");
        self.validate_with(&key, schema, body, strictness).map(Some)
    }

    /// Validates `instance` against any OpenAPI schema of this document.
    pub fn validate_with(
        &self,
        cache_key: &str,
        schema: &Value,
        instance: &Value,
        strictness: Strictness,
    ) -> Result<Vec<String>, OpenApiError> {
        let validator = self.validator(cache_key, schema, strictness)?;
        Ok(validator
            .iter_errors(instance)
            .map(|error| {
                let location = error.instance_path().to_string();
                let location = if location.is_empty() {
                    "/".to_owned()
                } else {
                    location
                };
                format!("{location}: {error}")
            })
            .collect())
    }

    fn validator(
        &self,
        cache_key: &str,
        schema: &Value,
        strictness: Strictness,
    ) -> Result<Arc<jsonschema::Validator>, OpenApiError> {
        let key = (cache_key.to_owned(), strictness);
        if let Some(validator) = self
            .validators
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
        {
            return Ok(validator.clone());
        }
        let root = json!({
            "components": self.components[&strictness],
            "allOf": [to_json_schema_in(schema, &self.document, strictness)],
        });
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft4)
            .should_validate_formats(true)
            .build(&root)
            .map_err(|error| OpenApiError::Compile {
                what: cache_key.to_owned(),
                message: error.to_string(),
            })?;
        let validator = Arc::new(validator);
        self.validators
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, validator.clone());
        Ok(validator)
    }
}

/// Converts one OpenAPI 3.0 schema object to draft-4 JSON Schema (lenient: `$ref`s stay refs,
/// `allOf` stays `allOf`).
pub fn to_json_schema(schema: &Value) -> Value {
    convert(schema, None, Strictness::Lenient)
}

fn to_json_schema_in(schema: &Value, document: &Value, strictness: Strictness) -> Value {
    convert(schema, Some(document), strictness)
}

fn convert_components(components: &Value, document: &Value, strictness: Strictness) -> Value {
    let mut out = Map::new();
    if let Some(groups) = components.as_object() {
        for (group, entries) in groups {
            let converted = match (group.as_str(), entries.as_object()) {
                ("schemas", Some(entries)) => Value::Object(
                    entries
                        .iter()
                        .map(|(name, schema)| {
                            (name.clone(), convert(schema, Some(document), strictness))
                        })
                        .collect(),
                ),
                // Responses, parameters and the rest hold schemas deeper down; keep them
                // verbatim apart from converting any `schema` they carry.
                (_, Some(entries)) => Value::Object(
                    entries
                        .iter()
                        .map(|(name, entry)| {
                            (name.clone(), convert_nested(entry, document, strictness))
                        })
                        .collect(),
                ),
                _ => entries.clone(),
            };
            out.insert(group.clone(), converted);
        }
    }
    Value::Object(out)
}

/// Converts every `schema` member found inside a non-schema object (responses, parameters).
fn convert_nested(value: &Value, document: &Value, strictness: Strictness) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, inner)| {
                    let converted = if key == "schema" {
                        convert(inner, Some(document), strictness)
                    } else if key == "example" || key == "examples" {
                        Value::Null
                    } else {
                        convert_nested(inner, document, strictness)
                    };
                    (key.clone(), converted)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Keywords of OpenAPI 3.0 that JSON Schema draft 4 does not know, or that are annotations only.
const DROPPED: [&str; 9] = [
    "nullable",
    "discriminator",
    "example",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "xml",
    "externalDocs",
];

fn convert(schema: &Value, document: Option<&Value>, strictness: Strictness) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    if let Some(reference) = map.get("$ref") {
        // OpenAPI 3.0: a `$ref` replaces the whole object; its siblings are ignored.
        return json!({ "$ref": reference });
    }
    let nullable = map.get("nullable").and_then(Value::as_bool) == Some(true);
    let mut out = Map::new();
    for (key, value) in map {
        if DROPPED.contains(&key.as_str()) || key.starts_with("x-") {
            continue;
        }
        let converted = match key.as_str() {
            "properties" | "patternProperties" => match value {
                Value::Object(properties) => Value::Object(
                    properties
                        .iter()
                        .map(|(name, inner)| (name.clone(), convert(inner, document, strictness)))
                        .collect(),
                ),
                other => other.clone(),
            },
            "items" | "not" | "additionalProperties" => match value {
                Value::Object(_) => convert(value, document, strictness),
                other => other.clone(),
            },
            "allOf" | "anyOf" | "oneOf" => match value {
                Value::Array(members) => Value::Array(
                    members
                        .iter()
                        .map(|inner| convert(inner, document, strictness))
                        .collect(),
                ),
                other => other.clone(),
            },
            _ => value.clone(),
        };
        out.insert(key.clone(), converted);
    }
    if strictness == Strictness::Strict {
        if let (Some(members), Some(document)) =
            (map.get("allOf").and_then(Value::as_array), document)
            && let Some(merged) = merge_all_of(members, document)
        {
            out.remove("allOf");
            let merged = convert(&merged, Some(document), strictness);
            if let Value::Object(merged) = merged {
                for (key, value) in merged {
                    out.entry(key).or_insert(value);
                }
            }
        }
        let is_object = out.get("type").and_then(Value::as_str) == Some("object")
            || out.contains_key("properties");
        if is_object && out.contains_key("properties") && !out.contains_key("additionalProperties")
        {
            out.insert("additionalProperties".to_owned(), Value::Bool(false));
        }
    }
    let converted = Value::Object(out);
    if nullable {
        make_nullable(converted)
    } else {
        converted
    }
}

/// Merges `allOf` members that are all object schemas (after resolving refs) into one object
/// schema, so that `additionalProperties: false` sees every declared property.
fn merge_all_of(members: &[Value], document: &Value) -> Option<Value> {
    let mut properties = Map::new();
    let mut required: Vec<Value> = Vec::new();
    for member in members {
        let mut resolved = member;
        for _ in 0..16 {
            match resolved.get("$ref").and_then(Value::as_str) {
                Some(reference) => {
                    resolved = document.pointer(reference.strip_prefix('#')?)?;
                }
                None => break,
            }
        }
        let object = resolved.as_object()?;
        if object.contains_key("allOf")
            || object.contains_key("anyOf")
            || object.contains_key("oneOf")
        {
            return None;
        }
        if let Some(member_properties) = object.get("properties").and_then(Value::as_object) {
            for (name, schema) in member_properties {
                properties.insert(name.clone(), schema.clone());
            }
        }
        if let Some(member_required) = object.get("required").and_then(Value::as_array) {
            required.extend(member_required.iter().cloned());
        }
    }
    let mut merged = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        merged["required"] = Value::Array(required);
    }
    Some(merged)
}

/// Adds `null` to a converted schema's allowed values.
fn make_nullable(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match map.get("type").cloned() {
        Some(Value::String(kind)) => {
            map.insert("type".to_owned(), json!([kind, "null"]));
            Value::Object(map)
        }
        Some(Value::Array(mut kinds)) => {
            if !kinds.contains(&json!("null")) {
                kinds.push(json!("null"));
            }
            map.insert("type".to_owned(), Value::Array(kinds));
            Value::Object(map)
        }
        _ => json!({"anyOf": [{"type": "null"}, Value::Object(map)]}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nullable_becomes_a_null_type() {
        let converted =
            to_json_schema(&json!({"type": "string", "nullable": true, "example": "x"}));
        assert_eq!(converted, json!({"type": ["string", "null"]}));
        let converted = to_json_schema(&json!({"type": "string", "enum": ["a"], "nullable": true}));
        assert_eq!(
            converted,
            json!({"type": ["string", "null"], "enum": ["a", null]})
        );
        let converted = to_json_schema(&json!({"allOf": [{"$ref": "#/x"}], "nullable": true}));
        assert_eq!(
            converted,
            json!({"anyOf": [{"type": "null"}, {"allOf": [{"$ref": "#/x"}]}]})
        );
    }

    #[test]
    fn ref_siblings_and_annotations_are_dropped() {
        let converted = to_json_schema(&json!({
            "type": "object",
            "x-github": {"a": 1},
            "deprecated": true,
            "properties": {"a": {"$ref": "#/components/schemas/a", "description": "ignored"}},
        }));
        assert_eq!(
            converted,
            json!({"type": "object", "properties": {"a": {"$ref": "#/components/schemas/a"}}})
        );
    }

    #[test]
    fn github_subset_request_validation() {
        let api = OpenApi::github_subset();
        assert_eq!(api.operations().len(), 37);
        let ok = api
            .validate_request(
                "issues/create-comment",
                &json!({"body": "hi"}),
                Strictness::Strict,
            )
            .unwrap();
        assert!(ok.is_empty(), "{ok:?}");
        let missing = api
            .validate_request("issues/create-comment", &json!({}), Strictness::Lenient)
            .unwrap();
        assert_eq!(missing.len(), 1, "{missing:?}");
        let extra = api
            .validate_request(
                "issues/create-comment",
                &json!({"body": "x", "bdy": 1}),
                Strictness::Strict,
            )
            .unwrap();
        assert_eq!(extra.len(), 1, "{extra:?}");
        let bad_event = api
            .validate_request(
                "pulls/create-review",
                &json!({"event": "LGTM"}),
                Strictness::Lenient,
            )
            .unwrap();
        assert_eq!(bad_event.len(), 1, "{bad_event:?}");
    }

    #[test]
    fn github_subset_response_validation_resolves_refs() {
        let api = OpenApi::github_subset();
        let label = json!([{
            "id": 1, "node_id": "x", "url": "https://api.github.com/repos/a/b/labels/bug",
            "name": "bug", "description": null, "color": "f29513", "default": false
        }]);
        let violations = api
            .validate_response(
                "issues/list-labels-on-issue",
                200,
                &label,
                Strictness::Strict,
            )
            .unwrap()
            .unwrap();
        assert!(violations.is_empty(), "{violations:?}");
        let bad = json!([{"id": "one"}]);
        let violations = api
            .validate_response(
                "issues/list-labels-on-issue",
                200,
                &bad,
                Strictness::Lenient,
            )
            .unwrap()
            .unwrap();
        assert!(!violations.is_empty());
    }
}
