"""Checks a GitHub simulator GraphQL answer against the schema, with graphql-core.

Usage: graphql_conformance.py SCHEMA.graphql < {"query": ..., "variables": ..., "answer": ...}

1. The query is validated against the schema (graphql-core's `validate`).
2. The answer's `data` is executed back through the schema: every field resolves to the
   value the simulator gave, and graphql-core completes it by the schema's type (a wrong
   scalar, a null where the schema says non-null, an unknown enum value or an object where
   a list belongs is an error). The result must equal `data` exactly.
3. `errors`, when present, is a list of objects with a string `message`.
Exits 0 when the answer conforms; otherwise prints what is wrong and exits 1.
"""

import json
import sys

try:
    from graphql import build_schema, execute, parse, validate
except ImportError:
    print("graphql-core is not installed: pip install graphql-core (3.2 or later)")
    sys.exit(2)


def resolver(source, info, **_arguments):
    key = info.path.key
    if isinstance(source, dict):
        return source.get(key)
    return None


def type_resolver(value, _info, abstract_type):
    if isinstance(value, dict) and "__typename" in value:
        return value["__typename"]
    # Without __typename in the selection, any implementation shows the same fields.
    return sorted(t.name for t in _info.schema.get_possible_types(abstract_type))[0]


def main():
    schema = build_schema(open(sys.argv[1], encoding="utf-8").read())
    request = json.load(sys.stdin)
    document = parse(request["query"])
    problems = validate(schema, document)
    if problems:
        print("the query is not valid:", [str(problem) for problem in problems])
        return 1
    answer = request["answer"]
    errors = answer.get("errors")
    if errors is not None:
        if not isinstance(errors, list) or not all(
            isinstance(entry, dict) and isinstance(entry.get("message"), str) for entry in errors
        ):
            print("errors is not a list of objects with a message:", errors)
            return 1
    if "data" not in answer:
        if errors:
            return 0
        print("neither data nor errors")
        return 1
    data = answer["data"]
    result = execute(
        schema,
        document,
        root_value=data,
        variable_values=request.get("variables") or {},
        field_resolver=resolver,
        type_resolver=type_resolver,
    )
    expected_nulls = {tuple(entry.get("path", [])) for entry in errors or []}
    problems = [
        error for error in (result.errors or []) if tuple(error.path or []) not in expected_nulls
    ]
    if problems:
        print("the answer does not fit the schema:", [str(error) for error in problems])
        return 1
    if result.data != data:
        print("the schema completes the answer differently:")
        print(json.dumps(result.data, sort_keys=True))
        print(json.dumps(data, sort_keys=True))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
