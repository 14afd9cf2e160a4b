"""The JSON Schema subset a wait may retain: what passes and what is refused by name."""

from __future__ import annotations

from typing import Any

import pytest

from reference_engine.workflows.errors import WorkflowError
from reference_engine.workflows.schema_subset import SchemaSubsetError, check_schema

GOOD: list[Any] = [
    {},
    {"type": "object", "required": ["approved"], "properties": {"approved": {"type": "boolean"}},
     "additionalProperties": False, "title": "Approval", "description": "say yes"},
    {"type": ["string", "null"]},
    {"enum": ["a", 1, None, {"x": [1]}]},
    {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3,
     "uniqueItems": True},
    {"type": "object", "additionalProperties": {"type": "number"}},
    {"properties": {"deep": {"properties": {"deeper": {"items": {"enum": [1]}}}}}},
]


@pytest.mark.parametrize("schema", GOOD)
def test_schemas_inside_the_subset_pass(schema: Any) -> None:
    check_schema(schema)


@pytest.mark.parametrize(("schema", "expected"), [
    ({"pattern": "^a"}, "schema.pattern: keyword 'pattern' is outside the supported subset"),
    ({"$ref": "#/x"}, "keyword '$ref' is outside"),
    ({"$schema": "https://json-schema.org/draft/2020-12/schema"}, "keyword '$schema' is outside"),
    ({"oneOf": [{}]}, "keyword 'oneOf' is outside"),
    ({"const": 1}, "keyword 'const' is outside"),
    ({"minimum": 1}, "keyword 'minimum' is outside"),
    ({"format": "email"}, "keyword 'format' is outside"),
    ({"properties": {"a": {"maxLength": 2}}},
     "schema.properties.a.maxLength: keyword 'maxLength' is outside"),
    ({"items": {"items": {"not": {}}}}, "schema.items.items.not: keyword 'not'"),
    ({"additionalProperties": {"if": {}}}, "schema.additionalProperties.if: keyword 'if'"),
    ({"default": True}, "'default' is not supported because a wait has no default answer"),
    ({"properties": {"a": {"default": 1}}}, "schema.properties.a.default: 'default'"),
    ({"enum": []}, "'enum' takes a non-empty list"),
    ({"enum": "a"}, "'enum' takes a non-empty list"),
    ({"enum": [float("nan")]}, "enum values must be finite numbers"),
    ({"type": "str"}, "'type' takes one of object, array"),
    ({"type": []}, "'type' takes one of"),
    ({"type": ["string", "string"]}, "'type' takes one of"),
    ({"required": "a"}, "'required' takes a list of distinct property names"),
    ({"required": ["a", "a"]}, "'required' takes a list of distinct property names"),
    ({"properties": []}, "'properties' takes a mapping"),
    ({"properties": {"a": 1}}, "schema.properties.a: a schema must be a mapping"),
    ({"items": [{}]}, "a list of schemas is not supported"),
    ({"items": True}, "schema.items: a schema must be a mapping"),
    ({"minItems": -1}, "'minItems' takes a whole number"),
    ({"maxItems": True}, "'maxItems' takes a whole number"),
    ({"minItems": 3, "maxItems": 2}, "minItems is larger than maxItems"),
    ({"uniqueItems": 1}, "'uniqueItems' takes true or false"),
    ({"title": 3}, "'title' takes text"),
    ("object", "a schema must be a mapping of keywords, got text"),
    (True, "a schema must be a mapping of keywords, got a boolean"),
])
def test_schemas_outside_the_subset_are_refused_by_name(schema: Any, expected: str) -> None:
    with pytest.raises(SchemaSubsetError) as info:
        check_schema(schema)
    assert expected in str(info.value)
    assert isinstance(info.value, WorkflowError)


def test_where_prefixes_the_message() -> None:
    with pytest.raises(SchemaSubsetError, match=r"^step 'x' schema\.oneOf: keyword"):
        check_schema({"oneOf": []}, where="step 'x' schema")


def test_very_deep_schemas_are_refused_not_crashed() -> None:
    schema: dict[str, Any] = {}
    for _ in range(200):
        schema = {"items": schema}
    with pytest.raises(SchemaSubsetError, match="nests deeper than 32"):
        check_schema(schema)
