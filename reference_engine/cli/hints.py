"""The exact next command to type, with an example payload built from the wait's schema."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

_SCALARS: dict[str, Any] = {
    "boolean": True, "string": "text", "integer": 1, "number": 1, "null": None,
}


def example_value(schema: Any, depth: int = 0) -> Any:
    """A small value that satisfies the supported schema subset in the common cases."""
    if not isinstance(schema, Mapping) or depth > 8:
        return {}
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if kind else None
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        required = schema.get("required")
        names = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
        return {name: example_value(props.get(name, {}), depth + 1) for name in names}
    if kind == "array":
        count = schema.get("minItems", 0)
        count = count if isinstance(count, int) and 0 <= count <= 3 else 0
        if schema.get("uniqueItems") and count > 1:
            count = 1
        return [example_value(schema.get("items", {}), depth + 1) for _ in range(count)]
    if isinstance(kind, str) and kind in _SCALARS:
        return _SCALARS[kind]
    return {}


def signal_command(wait_id: str, schema: Any, store_flag: str = "") -> str:
    payload = json.dumps(example_value(schema))
    return f"dw signal {wait_id} --payload {shlex.quote(payload)}{store_flag}"


def resume_command(run_id: str, store_flag: str = "") -> str:
    return f"dw resume {run_id}{store_flag}"


def step_schema(run_record: Mapping[str, Any], step: str) -> Any:
    """The retained schema of a waiting step in a ``dw show`` record, or None."""
    steps = run_record.get("steps")
    entry = steps.get(step) if isinstance(steps, Mapping) else None
    wait = entry.get("wait") if isinstance(entry, Mapping) else None
    return wait.get("schema") if isinstance(wait, Mapping) else None
