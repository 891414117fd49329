//! Just enough GraphQL syntax for the simulator: the executable documents a
//! client sends (one operation; fields with aliases, arguments and selection
//! sets; variables; `__typename`) and the schema's SDL (types, interfaces,
//! inputs, enums and scalars with their fields' named types). Fragments and
//! directives in queries are refused with an error saying so; descriptions
//! and directives in the SDL are skipped.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One token.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Punctuator(char),
    Spread,
    Name(String),
    Int(i64),
    Float(f64),
    Text(String),
}

/// Splits `source` into tokens (commas and comments are insignificant).
#[allow(clippy::too_many_lines)] // one scanner loop over GraphQL's lexical grammar
fn tokens(source: &str) -> Result<Vec<Token>, String> {
    let characters: Vec<char> = source.chars().collect();
    let mut found = Vec::new();
    let mut index = 0;
    while index < characters.len() {
        let character = characters[index];
        match character {
            ' ' | '\t' | '\n' | '\r' | ',' | '\u{feff}' => index += 1,
            '#' => {
                while index < characters.len() && characters[index] != '\n' {
                    index += 1;
                }
            }
            '{' | '}' | '(' | ')' | '[' | ']' | ':' | '!' | '$' | '=' | '@' | '|' | '&' => {
                found.push(Token::Punctuator(character));
                index += 1;
            }
            '.' => {
                if characters.get(index..index + 3) == Some(&['.', '.', '.']) {
                    found.push(Token::Spread);
                    index += 3;
                } else {
                    return Err(format!("Syntax Error: unexpected character '.' at {index}"));
                }
            }
            '"' => {
                if characters.get(index..index + 3) == Some(&['"', '"', '"']) {
                    let start = index + 3;
                    let mut end = start;
                    while end + 2 < characters.len() && characters[end..end + 3] != ['"', '"', '"']
                    {
                        end += 1;
                    }
                    if end + 2 >= characters.len() {
                        return Err("Syntax Error: unterminated block string".to_owned());
                    }
                    found.push(Token::Text(characters[start..end].iter().collect()));
                    index = end + 3;
                } else {
                    let mut text = String::new();
                    index += 1;
                    loop {
                        match characters.get(index) {
                            None | Some('\n') => {
                                return Err("Syntax Error: unterminated string".to_owned());
                            }
                            Some('"') => {
                                index += 1;
                                break;
                            }
                            Some('\\') => {
                                let escaped = characters.get(index + 1).copied().unwrap_or('\\');
                                match escaped {
                                    'n' => text.push('\n'),
                                    't' => text.push('\t'),
                                    'r' => text.push('\r'),
                                    'b' => text.push('\u{8}'),
                                    'f' => text.push('\u{c}'),
                                    'u' => {
                                        let digits: String = characters
                                            .get(index + 2..index + 6)
                                            .map(|digits| digits.iter().collect())
                                            .unwrap_or_default();
                                        let code = u32::from_str_radix(&digits, 16)
                                            .ok()
                                            .and_then(char::from_u32)
                                            .ok_or("Syntax Error: invalid unicode escape")?;
                                        text.push(code);
                                        index += 4;
                                    }
                                    other => text.push(other),
                                }
                                index += 2;
                            }
                            Some(&other) => {
                                text.push(other);
                                index += 1;
                            }
                        }
                    }
                    found.push(Token::Text(text));
                }
            }
            '-' | '0'..='9' => {
                let start = index;
                index += 1;
                while index < characters.len()
                    && (characters[index].is_ascii_digit()
                        || matches!(characters[index], '.' | 'e' | 'E' | '+' | '-'))
                {
                    index += 1;
                }
                let text: String = characters[start..index].iter().collect();
                if let Ok(number) = text.parse::<i64>() {
                    found.push(Token::Int(number));
                } else if let Ok(number) = text.parse::<f64>() {
                    found.push(Token::Float(number));
                } else {
                    return Err(format!("Syntax Error: invalid number {text}"));
                }
            }
            _ if character == '_' || character.is_ascii_alphabetic() => {
                let start = index;
                while index < characters.len()
                    && (characters[index] == '_' || characters[index].is_ascii_alphanumeric())
                {
                    index += 1;
                }
                found.push(Token::Name(characters[start..index].iter().collect()));
            }
            other => {
                return Err(format!(
                    "Syntax Error: unexpected character {other:?} at {index}"
                ));
            }
        }
    }
    Ok(found)
}

/// A query's argument value, before variables are substituted.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Literal {
    Variable(String),
    Json(Value),
    Enum(String),
    List(Vec<Literal>),
    Object(Vec<(String, Literal)>),
}

impl Literal {
    /// The value with `variables` substituted (a missing variable is `null`).
    pub fn resolve(&self, variables: &Map<String, Value>) -> Value {
        match self {
            Self::Variable(name) => variables.get(name).cloned().unwrap_or(Value::Null),
            Self::Json(value) => value.clone(),
            Self::Enum(name) => Value::String(name.clone()),
            Self::List(items) => {
                Value::Array(items.iter().map(|item| item.resolve(variables)).collect())
            }
            Self::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(name, value)| (name.clone(), value.resolve(variables)))
                    .collect(),
            ),
        }
    }
}

/// One field of a selection set.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Field {
    pub alias: Option<String>,
    pub name: String,
    pub arguments: Vec<(String, Literal)>,
    pub selections: Vec<Field>,
}

impl Field {
    /// The key of the field in the answer.
    pub fn key(&self) -> &str {
        self.alias.as_deref().unwrap_or(&self.name)
    }

    /// An argument's value.
    pub fn argument(&self, name: &str, variables: &Map<String, Value>) -> Value {
        self.arguments
            .iter()
            .find(|(argument, _)| argument == name)
            .map_or(Value::Null, |(_, value)| value.resolve(variables))
    }
}

/// `query` or `mutation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OperationKind {
    Query,
    Mutation,
}

/// The one operation of a document.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Operation {
    pub kind: OperationKind,
    pub name: Option<String>,
    /// Variable names with their defaults.
    pub variables: Vec<(String, Option<Value>)>,
    pub selections: Vec<Field>,
}

struct Parser {
    tokens: Vec<Token>,
    position: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.position)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.position).cloned();
        self.position += 1;
        token
    }

    fn at(&self, punctuator: char) -> bool {
        self.peek() == Some(&Token::Punctuator(punctuator))
    }

    fn expect(&mut self, punctuator: char) -> Result<(), String> {
        match self.next() {
            Some(Token::Punctuator(found)) if found == punctuator => Ok(()),
            other => Err(format!(
                "Syntax Error: expected \"{punctuator}\", found {}",
                describe(other.as_ref())
            )),
        }
    }

    fn name(&mut self) -> Result<String, String> {
        match self.next() {
            Some(Token::Name(name)) => Ok(name),
            other => Err(format!(
                "Syntax Error: expected a name, found {}",
                describe(other.as_ref())
            )),
        }
    }

    fn selection_set(&mut self) -> Result<Vec<Field>, String> {
        self.enter()?;
        self.expect('{')?;
        let mut fields = Vec::new();
        while !self.at('}') {
            if self.peek() == Some(&Token::Spread) {
                return Err(
                    "fragments are not supported by the GitHub simulator: select fields directly"
                        .to_owned(),
                );
            }
            if self.at('@') {
                return Err("directives are not supported by the GitHub simulator".to_owned());
            }
            let first = self.name()?;
            let (alias, name) = if self.at(':') {
                self.position += 1;
                (Some(first), self.name()?)
            } else {
                (None, first)
            };
            let mut arguments = Vec::new();
            if self.at('(') {
                self.position += 1;
                while !self.at(')') {
                    let argument = self.name()?;
                    self.expect(':')?;
                    arguments.push((argument, self.value()?));
                }
                self.expect(')')?;
            }
            let selections = if self.at('{') {
                self.selection_set()?
            } else {
                Vec::new()
            };
            fields.push(Field {
                alias,
                name,
                arguments,
                selections,
            });
            if self.peek().is_none() {
                return Err("Syntax Error: expected \"}\", found the end".to_owned());
            }
        }
        self.expect('}')?;
        self.depth -= 1;
        Ok(fields)
    }

    fn value(&mut self) -> Result<Literal, String> {
        self.enter()?;
        let value = self.value_inner();
        self.depth -= 1;
        value
    }

    fn value_inner(&mut self) -> Result<Literal, String> {
        match self.next() {
            Some(Token::Punctuator('$')) => Ok(Literal::Variable(self.name()?)),
            Some(Token::Int(number)) => Ok(Literal::Json(Value::from(number))),
            Some(Token::Float(number)) => Ok(Literal::Json(Value::from(number))),
            Some(Token::Text(text)) => Ok(Literal::Json(Value::String(text))),
            Some(Token::Name(name)) => Ok(match name.as_str() {
                "true" => Literal::Json(Value::Bool(true)),
                "false" => Literal::Json(Value::Bool(false)),
                "null" => Literal::Json(Value::Null),
                _ => Literal::Enum(name),
            }),
            Some(Token::Punctuator('[')) => {
                let mut items = Vec::new();
                while !self.at(']') {
                    if self.peek().is_none() {
                        return Err("Syntax Error: unterminated list".to_owned());
                    }
                    items.push(self.value()?);
                }
                self.expect(']')?;
                Ok(Literal::List(items))
            }
            Some(Token::Punctuator('{')) => {
                let mut fields = Vec::new();
                while !self.at('}') {
                    let name = self.name()?;
                    self.expect(':')?;
                    fields.push((name, self.value()?));
                }
                self.expect('}')?;
                Ok(Literal::Object(fields))
            }
            other => Err(format!(
                "Syntax Error: expected a value, found {}",
                describe(other.as_ref())
            )),
        }
    }

    /// Reads a type reference (`[String!]!`), returning the named type.
    fn skip_type(&mut self) -> Result<String, String> {
        self.enter()?;
        let named = match self.next() {
            Some(Token::Punctuator('[')) => {
                let inner = self.skip_type()?;
                self.expect(']')?;
                inner
            }
            Some(Token::Name(name)) => name,
            other => {
                return Err(format!(
                    "Syntax Error: expected a type, found {}",
                    describe(other.as_ref())
                ));
            }
        };
        if self.at('!') {
            self.position += 1;
        }
        self.depth -= 1;
        Ok(named)
    }

    /// One level deeper; hostile nesting is an error, never a stack overflow.
    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!(
                "the document nests deeper than {MAX_DEPTH} levels, more than the GitHub simulator reads"
            ));
        }
        Ok(())
    }
}

/// The deepest nesting read.
const MAX_DEPTH: usize = 32;

fn describe(token: Option<&Token>) -> String {
    match token {
        None => "the end of the document".to_owned(),
        Some(Token::Punctuator(character)) => format!("\"{character}\""),
        Some(Token::Spread) => "\"...\"".to_owned(),
        Some(Token::Name(name)) => format!("name \"{name}\""),
        Some(Token::Int(number)) => format!("number {number}"),
        Some(Token::Float(number)) => format!("number {number}"),
        Some(Token::Text(_)) => "a string".to_owned(),
    }
}

/// Parses an executable document holding one operation.
pub(crate) fn parse_operation(source: &str) -> Result<Operation, String> {
    let mut parser = Parser {
        tokens: tokens(source)?,
        position: 0,
        depth: 0,
    };
    let kind = match parser.peek() {
        Some(Token::Punctuator('{')) => OperationKind::Query,
        Some(Token::Name(name)) if name == "query" => {
            parser.position += 1;
            OperationKind::Query
        }
        Some(Token::Name(name)) if name == "mutation" => {
            parser.position += 1;
            OperationKind::Mutation
        }
        Some(Token::Name(name)) if name == "subscription" || name == "fragment" => {
            return Err(format!("{name} is not supported by the GitHub simulator"));
        }
        other => {
            return Err(format!(
                "Syntax Error: expected a query or a mutation, found {}",
                describe(other)
            ));
        }
    };
    let name = match parser.peek() {
        Some(Token::Name(_)) => Some(parser.name()?),
        _ => None,
    };
    let mut variables = Vec::new();
    if parser.at('(') {
        parser.position += 1;
        while !parser.at(')') {
            parser.expect('$')?;
            let variable = parser.name()?;
            parser.expect(':')?;
            parser.skip_type()?;
            let default = if parser.at('=') {
                parser.position += 1;
                Some(parser.value()?.resolve(&Map::new()))
            } else {
                None
            };
            variables.push((variable, default));
        }
        parser.expect(')')?;
    }
    let selections = parser.selection_set()?;
    if let Some(extra) = parser.peek() {
        return Err(format!(
            "only one operation per document is supported by the GitHub simulator (found {} after it)",
            describe(Some(extra))
        ));
    }
    Ok(Operation {
        kind,
        name,
        variables,
        selections,
    })
}

/// A type of the schema: its kind and its fields' named types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SchemaType {
    /// `type`, `interface`, `input`, `enum` or `scalar`.
    pub kind: String,
    /// Field (or enum value) → named type (empty for enum values).
    pub fields: BTreeMap<String, String>,
}

/// Parses SDL: every type's kind and fields.
pub(crate) fn parse_schema(source: &str) -> Result<BTreeMap<String, SchemaType>, String> {
    let mut parser = Parser {
        tokens: tokens(source)?,
        position: 0,
        depth: 0,
    };
    let mut types = BTreeMap::new();
    while let Some(token) = parser.next() {
        let kind = match token {
            Token::Text(_) => continue, // a description
            Token::Name(kind) => kind,
            other => {
                return Err(format!(
                    "unexpected {} in the schema",
                    describe(Some(&other))
                ));
            }
        };
        let name = parser.name()?;
        let mut fields = BTreeMap::new();
        // `implements A & B`, directives: skip to the body or the next definition.
        while let Some(token) = parser.peek() {
            let ends = match token {
                Token::Punctuator('{') | Token::Text(_) => true,
                Token::Name(word) => [
                    "type",
                    "interface",
                    "input",
                    "enum",
                    "scalar",
                    "union",
                    "schema",
                ]
                .contains(&word.as_str()),
                _ => false,
            };
            if ends {
                break;
            }
            parser.position += 1;
        }
        if parser.at('{') {
            parser.position += 1;
            while !parser.at('}') {
                match parser.next() {
                    None => return Err(format!("{name} is not closed")),
                    Some(Token::Text(_)) => {}
                    Some(Token::Name(field)) => {
                        if parser.at('(') {
                            let mut depth = 0;
                            while let Some(token) = parser.next() {
                                match token {
                                    Token::Punctuator('(') => depth += 1,
                                    Token::Punctuator(')') => {
                                        depth -= 1;
                                        if depth == 0 {
                                            break;
                                        }
                                    }
                                    _ => {}
                                }
                            }
                        }
                        let named = if parser.at(':') {
                            parser.position += 1;
                            parser.skip_type()?
                        } else {
                            String::new()
                        };
                        if parser.at('=') {
                            parser.position += 1;
                            parser.value()?;
                        }
                        while parser.at('@') {
                            parser.position += 1;
                            parser.name()?;
                            if parser.at('(') {
                                while parser.peek().is_some() && !parser.at(')') {
                                    parser.position += 1;
                                }
                                parser.position += 1;
                            }
                        }
                        fields.insert(field, named);
                    }
                    other => {
                        return Err(format!("unexpected {} in {name}", describe(other.as_ref())));
                    }
                }
            }
            parser.expect('}')?;
        }
        types.insert(name, SchemaType { kind, fields });
    }
    Ok(types)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_an_operation_with_variables_aliases_and_objects() {
        let operation = parse_operation(
            "mutation Resolve($threadId: ID!, $n: Int = 3) { done: resolveReviewThread(input: {threadId: $threadId}) { thread { id isResolved } } }",
        )
        .unwrap();
        assert_eq!(operation.kind, OperationKind::Mutation);
        assert_eq!(
            operation.variables[1],
            ("n".to_owned(), Some(Value::from(3)))
        );
        let field = &operation.selections[0];
        assert_eq!(field.key(), "done");
        let mut variables = Map::new();
        variables.insert("threadId".into(), Value::from("PRRT_1"));
        assert_eq!(
            field.argument("input", &variables),
            serde_json::json!({"threadId": "PRRT_1"})
        );
    }

    #[test]
    fn hostile_documents_get_errors_not_panics() {
        let deep = "{ a ".repeat(100_000);
        let wide = format!("{{ a(x: {}) }}", "[".repeat(100_000));
        for source in [
            "",
            "{",
            "{ a(",
            "query { a { b }",
            "\"unterminated",
            "{ ...F }",
            "{ a } { b }",
            "{ a(x: \"\\u12\") }",
            "...",
            "{ a(x: [1, 2) }",
            &deep,
            &wide,
        ] {
            assert!(parse_operation(source).is_err(), "{source}");
        }
    }

    #[test]
    fn parses_the_vendored_schema() {
        let types = parse_schema(include_str!("../../../graphql/github-subset.graphql")).unwrap();
        assert_eq!(types.len(), 24);
        assert_eq!(
            types["PullRequestReviewThread"].fields["isOutdated"],
            "Boolean"
        );
        assert_eq!(types["Query"].fields["rateLimit"], "RateLimit");
        assert_eq!(types["DiffSide"].kind, "enum");
        assert!(
            types["PullRequestReviewComment"]
                .fields
                .contains_key("databaseId")
        );
    }
}
