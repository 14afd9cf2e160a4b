"""The engine's own subset validator agrees with jsonschema, which stays the reference.

``schema_match.matches`` decides payloads without importing jsonschema; jsonschema's
Draft 2020-12 validator decides the same pairs here. Every schema the subset check
accepts must also be a valid Draft 2020-12 schema, since the engine no longer asks
jsonschema at run time.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from reference_engine.waits.schema_match import equal, matches
from reference_engine.workflows.schema_subset import TYPES, check_schema

NAMES = st.sampled_from(["a", "b", "c"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3),
                    st.sampled_from([0.0, 1.0, 1.5, -2.0]), st.sampled_from(["", "a", "b"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(NAMES, inner, max_size=3)), max_leaves=8)


def _schemas() -> st.SearchStrategy[dict[str, Any]]:
    def extend(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
        return st.fixed_dictionaries({}, optional={
            "type": st.one_of(st.sampled_from(TYPES),
                              st.lists(st.sampled_from(TYPES), min_size=1, max_size=3,
                                       unique=True)),
            "enum": st.lists(VALUES, min_size=1, max_size=3),
            "required": st.lists(NAMES, max_size=3, unique=True),
            "properties": st.dictionaries(NAMES, inner, max_size=3),
            "additionalProperties": st.one_of(st.booleans(), inner),
            "items": inner,
            "minItems": st.integers(0, 2),
            "maxItems": st.integers(2, 4),
            "uniqueItems": st.booleans(),
            "title": st.just("t"),
        })
    leaf = st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(TYPES), "enum": st.lists(VALUES, min_size=1, max_size=3)})
    return st.recursive(leaf, extend, max_leaves=6)


@given(schema=_schemas(), value=VALUES)
def test_the_subset_validator_agrees_with_jsonschema(schema: dict[str, Any], value: Any) -> None:
    check_schema(schema)
    expected = Draft202012Validator(schema).is_valid(value)
    assert matches(value, schema) == expected, (schema, value)


@given(schema=_schemas())
def test_every_schema_the_subset_accepts_is_a_valid_draft_2020_12_schema(
    schema: dict[str, Any]
) -> None:
    check_schema(schema)
    Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize(("value", "schema", "expected"), [
    (1.0, {"type": "integer"}, True),
    (1.5, {"type": "integer"}, False),
    (True, {"type": "integer"}, False),
    (True, {"enum": [1]}, False),
    (1, {"enum": [1.0]}, True),
    ([1, 1.0], {"uniqueItems": True}, False),
    ([True, 1], {"uniqueItems": True}, True),
    ({"a": 1}, {"additionalProperties": False}, False),
    ({"a": 1}, {"properties": {"a": {}}, "additionalProperties": False}, True),
    ([], {"minItems": 1}, False),
    ([1, 2], {"maxItems": 2}, True),
    ([1, 2, 3], {"maxItems": 2}, False),
    ("x", {"required": ["a"], "minItems": 3}, True),  # object and array rules skip a string
])
def test_the_rules_at_their_edges(value: Any, schema: dict[str, Any], expected: bool) -> None:
    assert matches(value, schema) is expected
    assert Draft202012Validator(schema).is_valid(value) is expected


def test_equality_keeps_booleans_apart_from_numbers() -> None:
    assert equal([1, {"a": 2.0}], [1.0, {"a": 2}])
    assert not equal(False, 0) and not equal([True], [1]) and not equal(None, 0)
