"""Payload parsing and schema validation: each rule, the JSON path, and never the value."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from support import json_strategies

from reference_engine.waits.payloads import (
    MAX_DEPTH,
    MAX_PAYLOAD_BYTES,
    PayloadError,
    json_path,
    parse_payload,
    validate_payload,
)
from reference_engine.workflows.schema_subset import SchemaSubsetError

APPROVAL = {"type": "object", "required": ["approved"],
            "properties": {"approved": {"type": "boolean"},
                           "level": {"enum": ["low", "high"]},
                           "tags": {"type": "array", "items": {"type": "string"},
                                    "minItems": 1, "maxItems": 2, "uniqueItems": True}},
            "additionalProperties": False}


def refused(text: str | bytes) -> PayloadError:
    with pytest.raises(PayloadError) as info:
        parse_payload(text)
    return info.value


@pytest.mark.parametrize("text", [
    '{"approved": true}', "[]", "0", '"text"', "null", '{"a": [1, 2.5, -3e2, {"b": null}]}',
    '{"é": "ü"}', '{"proto": 1, "constructors": 2}',
])
def test_well_formed_payloads_parse_like_json(text: str) -> None:
    assert parse_payload(text) == json.loads(text)


def test_bytes_are_read_as_utf8() -> None:
    assert parse_payload('{"a": "é"}'.encode()) == {"a": "é"}


@pytest.mark.parametrize(("text", "path", "rule"), [
    ("NaN", "$", "non_finite_number"),
    ('{"a": Infinity}', "$", "non_finite_number"),
    ("[-Infinity]", "$", "non_finite_number"),
    ("[1e999]", "$", "non_finite_number"),
    ("1" * 5000, "$", "non_finite_number"),
    ('{"a": 1, "a": 2}', "$.a", "duplicate_key"),
    ('{"x": [{"k": 1, "k": 1}]}', "$.x[0].k", "duplicate_key"),
    ('{"__proto__": {}}', "$.__proto__", "forbidden_key"),
    ('{"a": {"constructor": 1}}', "$.a.constructor", "forbidden_key"),
    ('[{"prototype": null}]', "$[0].prototype", "forbidden_key"),
    ("", "$", "json_syntax"),
    ("{", "$", "json_syntax"),
    ("{'a': 1}", "$", "json_syntax"),
    ('{"a": 1} trailing', "$", "json_syntax"),
    ("[1,]", "$", "json_syntax"),
    ('"\ud800"', "$", "encoding"),
    (b"\xff\xfe", "$", "encoding"),
    ("[" * 5000 + "]" * 5000, "$", "max_depth"),
    ('{"a": ["\\ud800"]}', "$.a[0]", "encoding"),
    ('{"\\udfff": 1}', "$[<key>]", "encoding"),
])
def test_each_rule_refuses_with_its_path(text: str | bytes, path: str, rule: str) -> None:
    error = refused(text)
    assert (error.path, error.rule) == (path, rule)
    assert str(error).startswith(f"payload at {path} breaks rule '{rule}': ")


def test_json_syntax_errors_give_the_position() -> None:
    assert "line 2, column 1" in str(refused('{"a":\n}'))


def test_the_size_limit_counts_utf8_bytes() -> None:
    ascii_ok = json.dumps("x" * (MAX_PAYLOAD_BYTES - 2))
    assert len(ascii_ok) == MAX_PAYLOAD_BYTES
    assert parse_payload(ascii_ok) == "x" * (MAX_PAYLOAD_BYTES - 2)
    assert refused(json.dumps("x" * (MAX_PAYLOAD_BYTES - 1))).rule == "max_bytes"
    multibyte = '"' + "é" * (MAX_PAYLOAD_BYTES // 2) + '"'  # fewer chars than bytes
    assert len(multibyte) < MAX_PAYLOAD_BYTES
    assert refused(multibyte).rule == "max_bytes"
    assert refused(b" " * (MAX_PAYLOAD_BYTES + 1)).rule == "max_bytes"


def test_nesting_is_counted_in_containers() -> None:
    deepest_ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert parse_payload(deepest_ok) is not None
    error = refused("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert (error.rule, error.path) == ("max_depth", "$" + "[0]" * MAX_DEPTH)
    objects = '{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)
    assert refused(objects).rule == "max_depth"
    assert parse_payload('{"a":' * MAX_DEPTH + "1" + "}" * MAX_DEPTH) is not None


def test_a_non_text_payload_is_refused() -> None:
    assert refused(42).rule == "json_syntax"  # type: ignore[arg-type]


@pytest.mark.parametrize(("parts", "path"), [
    ([], "$"), (["a", 0, "b"], "$.a[0].b"), (["a b"], '$["a b"]'), (["x-y"], '$["x-y"]'),
    (["AKIA" + "IOSFODNN7EXAMPLE"], "$[<key>]"), (["k" * 100], "$[<key>]"),
    (["line\nbreak"], "$[<key>]"),
])
def test_json_paths(parts: list[str | int], path: str) -> None:
    assert json_path(parts) == path


# -- schema validation ----------------------------------------------------------------------

SECRETISH = "zq-the-rejected-value-qz"


@pytest.mark.parametrize(("value", "path", "rule", "detail"), [
    ({}, "$.approved", "required", "this property is required"),
    ({"approved": SECRETISH}, "$.approved", "type", "expected boolean"),
    ({"approved": True, "level": SECRETISH}, "$.level", "enum",
     "the value is not one of the 2 allowed values"),
    ({"approved": True, "extra": SECRETISH}, "$.extra", "additionalProperties",
     "this property is not allowed by the schema"),
    ({"approved": True, "tags": []}, "$.tags", "minItems", "expected at least 1 items"),
    ({"approved": True, "tags": [SECRETISH, "b", "c"]}, "$.tags", "maxItems",
     "expected at most 2 items"),
    ({"approved": True, "tags": [SECRETISH, SECRETISH]}, "$.tags", "uniqueItems",
     "the items must be unique"),
    ({"approved": True, "tags": [1]}, "$.tags[0]", "type", "expected string"),
    (SECRETISH, "$", "type", "expected object"),
])
def test_schema_refusals_name_path_and_rule_never_the_value(value: Any, path: str, rule: str,
                                                            detail: str) -> None:
    with pytest.raises(PayloadError) as info:
        validate_payload(value, APPROVAL)
    error = info.value
    assert (error.path, error.rule, error.detail) == (path, rule, detail)
    everything = f"{error} {error!r} {error.args} {error.path} {error.detail}"
    assert SECRETISH not in everything
    assert "zq-" not in everything


def test_a_valid_payload_passes() -> None:
    validate_payload({"approved": False, "level": "low", "tags": ["a"]}, APPROVAL)
    validate_payload({"anything": [1, {"x": None}]}, {})


def test_type_lists_and_integers_follow_draft_2020_12() -> None:
    validate_payload(1.0, {"type": "integer"})
    with pytest.raises(PayloadError, match="expected integer"):
        validate_payload(True, {"type": "integer"})
    with pytest.raises(PayloadError, match="expected string or null"):
        validate_payload(3, {"type": ["string", "null"]})


def test_a_schema_outside_the_subset_is_not_a_payload_error() -> None:
    with pytest.raises(SchemaSubsetError):
        validate_payload("x", {"pattern": "^x"})


# -- fuzzing --------------------------------------------------------------------------------

JSON_ATOMS = ["{", "}", "[", "]", ",", ":", '"a"', '"__proto__"', "1", "-0.5e3", "1e999",
              "NaN", "Infinity", "true", "null", " ", '"\\u0000"', '"\\ud800"', "\\", '"']

json_values = json_strategies.json_values(text=10, keys=6, width=4, leaves=25, infinity=False)


@settings(max_examples=400, deadline=None)
@given(json_strategies.atoms_or_text(JSON_ATOMS, most_atoms=30, most_chars=50))
def test_parse_payload_never_raises_anything_but_payload_error(text: str) -> None:
    try:
        parse_payload(text)
    except PayloadError as error:
        assert error.path.startswith("$") and error.rule


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_any_json_within_limits_round_trips(value: Any) -> None:
    text = json.dumps(value)
    try:
        parsed = parse_payload(text)
    except PayloadError as error:
        assert error.rule in ("forbidden_key", "max_depth", "max_bytes")
        return
    assert parsed == value


@settings(max_examples=200, deadline=None)
@given(json_values.map(lambda v: {"approved": v}) | json_values)
def test_schema_messages_never_contain_a_string_value(value: Any) -> None:
    marked = json.loads(json.dumps(value), object_hook=lambda d: {
        k: ("zq" + x + "qz" if isinstance(x, str) else x) for k, x in d.items()})
    try:
        validate_payload(marked, APPROVAL)
    except PayloadError as error:
        # keys may show in the path; string values never show anywhere
        assert "zq" not in f"{str(error).replace(error.path, '')} {error.detail}"
