"""Whether a value satisfies a schema of the supported subset, without jsonschema.

The subset (``schema_subset.py``) is small enough to decide here, by the rules of JSON
Schema Draft 2020-12, and importing jsonschema costs more than a whole ``dw signal``.
So :func:`matches` answers the common question, "is this payload valid?", and only a
payload that fails is handed to jsonschema, whose report names the rule and the path
(``payloads.validate_payload``). A Hypothesis test holds :func:`matches` to jsonschema's
verdict on generated schemas and values.

Call it only on a schema that :func:`~reference_engine.workflows.schema_subset.check_schema`
accepted: any other keyword is not understood here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _is_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool):
        return False  # true is not 1 in JSON Schema
    if name == "number":
        return isinstance(value, int | float)
    if name == "integer":  # 1.0 is an integer in Draft 2020-12
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    return False


def equal(one: Any, two: Any) -> bool:
    """JSON equality as JSON Schema has it: 1 == 1.0, but true != 1 and false != 0."""
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    if isinstance(one, str) or isinstance(two, str):
        return isinstance(one, str) and isinstance(two, str) and one == two
    if isinstance(one, list) or isinstance(two, list):
        return (isinstance(one, list) and isinstance(two, list) and len(one) == len(two)
                and all(equal(a, b) for a, b in zip(one, two, strict=True)))
    if isinstance(one, dict) or isinstance(two, dict):
        return (isinstance(one, dict) and isinstance(two, dict) and one.keys() == two.keys()
                and all(equal(one[k], two[k]) for k in one))
    if one is None or two is None:
        return one is None and two is None
    return bool(one == two)


def matches(value: Any, schema: Any) -> bool:
    """Whether ``value`` satisfies ``schema`` (a subset schema, or a boolean)."""
    if schema is True:
        return True
    if schema is False or not isinstance(schema, Mapping):
        return False
    kind = schema.get("type")
    if kind is not None:
        names = kind if isinstance(kind, list) else [kind]
        if not any(_is_type(value, name) for name in names):
            return False
    enum = schema.get("enum")
    if enum is not None and not any(equal(value, allowed) for allowed in enum):
        return False
    if isinstance(value, dict):
        return _object_matches(value, schema)
    if isinstance(value, list):
        return _array_matches(value, schema)
    return True


def _object_matches(value: dict[str, Any], schema: Mapping[str, Any]) -> bool:
    if any(name not in value for name in schema.get("required", ())):
        return False
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            if not matches(item, properties[name]):
                return False
        elif not matches(item, extra):
            return False
    return True


def _array_matches(value: list[Any], schema: Mapping[str, Any]) -> bool:
    if len(value) < schema.get("minItems", 0):
        return False
    high = schema.get("maxItems")
    if high is not None and len(value) > high:
        return False
    if "items" in schema and not all(matches(item, schema["items"]) for item in value):
        return False
    if schema.get("uniqueItems") is True:
        for i, item in enumerate(value):
            if any(equal(item, other) for other in value[i + 1:]):
                return False
    return True
