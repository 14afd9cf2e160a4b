"""The JSON Schema subset a wait may retain (docs/explanation/engine.md), checked when a workflow
loads.

Allowed keywords: type, enum, required, properties, additionalProperties, items,
minItems, maxItems, uniqueItems, and the annotations title and description. Anything
else is refused by name, as is ``default`` (a wait has no default answer) and an empty
``enum`` (nothing could ever satisfy it). Boolean schemas are allowed only as the
value of ``additionalProperties``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from reference_engine.workflows.errors import WorkflowError, shown

KEYWORDS = ("type", "enum", "required", "properties", "additionalProperties", "items",
            "minItems", "maxItems", "uniqueItems")
ANNOTATIONS = ("title", "description")
TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")
MAX_SCHEMA_DEPTH = 32
_SUPPORTED = ", ".join(KEYWORDS)


class SchemaSubsetError(WorkflowError):
    """A schema uses something outside the supported subset, or is malformed."""


def check_schema(schema: Any, *, where: str = "schema") -> None:
    """Return when ``schema`` stays inside the subset; else raise :class:`SchemaSubsetError`.

    ``where`` prefixes the message (e.g. "step 'approval' schema"); paths inside the
    schema are written like ``schema.properties.approved``.
    """
    _check(schema, where, 0)
    # Every schema this accepts is a valid Draft 2020-12 schema; tests/workflows holds the
    # check to jsonschema's own metaschema, so the engine need not import it to start.


def _fail(path: str, what: str) -> SchemaSubsetError:
    return SchemaSubsetError(f"{path}: {what}")


def _check(schema: Any, path: str, depth: int) -> None:
    if depth > MAX_SCHEMA_DEPTH:
        raise _fail(path, f"the schema nests deeper than {MAX_SCHEMA_DEPTH} levels; flatten it")
    if not isinstance(schema, Mapping):
        raise _fail(path, f"a schema must be a mapping of keywords, got {_kind(schema)}")
    for key, value in schema.items():
        if not isinstance(key, str):
            raise _fail(path, f"schema keywords are text, got {_kind(key)}")
        here = f"{path}.{shown(key, 40)}"
        if key == "default":
            raise _fail(here, "'default' is not supported because a wait has no default "
                        "answer; remove it")
        if key in ANNOTATIONS:
            if not isinstance(value, str):
                raise _fail(here, f"'{key}' takes text")
            continue
        if key not in KEYWORDS:
            raise _fail(here, f"keyword '{shown(key)}' is outside the supported subset; "
                        f"use only {_SUPPORTED} (plus title, description)")
        _check_keyword(key, value, here, depth)
    low, high = schema.get("minItems"), schema.get("maxItems")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        raise _fail(path, "minItems is larger than maxItems, so nothing could match; fix one")


def _check_keyword(key: str, value: Any, here: str, depth: int) -> None:
    if key == "type":
        names = value if isinstance(value, list) else [value]
        if not names or any(not isinstance(n, str) or n not in TYPES for n in names) \
                or len(set(names)) != len(names):
            raise _fail(here, f"'type' takes one of {', '.join(TYPES)} or a list of distinct ones")
    elif key == "enum":
        if not isinstance(value, list) or not value:
            raise _fail(here, "'enum' takes a non-empty list of allowed values")
        _check_json_values(value, here)
    elif key == "required":
        if not isinstance(value, list) or any(not isinstance(n, str) for n in value) \
                or len(set(value)) != len(value):
            raise _fail(here, "'required' takes a list of distinct property names")
    elif key == "properties":
        if not isinstance(value, Mapping):
            raise _fail(here, "'properties' takes a mapping of property name to schema")
        for name, sub in value.items():
            if not isinstance(name, str):
                raise _fail(here, f"property names are text, got {_kind(name)}; quote it")
            _check(sub, f"{here}.{shown(name, 40)}", depth + 1)
    elif key == "additionalProperties":
        if not isinstance(value, bool):
            _check(value, here, depth + 1)
    elif key == "items":
        if isinstance(value, list):
            raise _fail(here, "'items' takes one schema for every item (a list of schemas "
                        "is not supported)")
        _check(value, here, depth + 1)
    elif key in ("minItems", "maxItems"):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise _fail(here, f"'{key}' takes a whole number of at least 0")
    elif key == "uniqueItems" and not isinstance(value, bool):
        raise _fail(here, "'uniqueItems' takes true or false")


def _check_json_values(values: list[Any], here: str) -> None:
    stack: list[Any] = list(values)
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, (bool, int, str)):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                raise _fail(here, "enum values must be finite numbers")
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, Mapping) and all(isinstance(k, str) for k in item):
            stack.extend(item.values())
        else:
            raise _fail(here, f"enum values must be plain JSON, got {_kind(item)}")


def _kind(value: Any) -> str:
    names = {type(None): "null", bool: "a boolean", int: "a number", float: "a number",
             str: "text", list: "a list", dict: "a mapping"}
    return names.get(type(value), f"a {type(value).__name__}")
