"""Payload checks for a signal or an answer (docs/explanation/answers.md, docs/reference/cli.md).

:func:`parse_payload` turns raw JSON text into a value, refusing NaN/Infinity (and
numbers too large to be finite), duplicate keys, more than 16 KiB of UTF-8, nesting
deeper than 16 containers (``[[1]]`` is 2 deep; a scalar is 0 deep) and the keys
``__proto__``, ``constructor`` and ``prototype`` at any depth.

:func:`validate_payload` checks a value against a wait's retained schema by the rules
of Draft 2020-12: ``schema_match`` decides, and jsonschema's validator explains a failure.

Every refusal is a :class:`PayloadError` carrying ``path`` (a JSON path such as
``$.approved`` or ``$.items[2]``) and ``rule`` (the failed check, e.g. ``type``,
``required``, ``max_bytes``). Its message is built from those and from the schema
only, never from the payload's values (jsonschema's own messages quote the instance,
so they are never used). A key that itself looks like a secret shows as ``<key>``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from reference_engine.waits.schema_match import matches
from reference_engine.workflows.schema_subset import check_schema

if TYPE_CHECKING:  # jsonschema is imported only to explain a payload that fails
    from jsonschema.exceptions import ValidationError

MAX_PAYLOAD_BYTES = 16 * 1024
MAX_DEPTH = 16
FORBIDDEN_KEYS = frozenset({"__proto__", "constructor", "prototype"})
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")

_RULE_TEXT = {
    "encoding": "the payload is not valid UTF-8 text",
    "max_bytes": f"the payload is over {MAX_PAYLOAD_BYTES} bytes of UTF-8",
    "json_syntax": "the payload is not well-formed JSON",
    "non_finite_number": "NaN, Infinity and numbers too large to be finite are not JSON",
    "duplicate_key": "a key appears twice in one object",
    "max_depth": f"the payload nests deeper than {MAX_DEPTH} levels",
    "forbidden_key": "the keys __proto__, constructor and prototype are refused",
}


class PayloadError(ValueError):
    """A payload was refused at ``path`` by ``rule``; ``detail`` comes from the schema only."""

    def __init__(self, path: str, rule: str, detail: str | None = None) -> None:
        self.path = path
        self.rule = rule
        self.detail = detail or _RULE_TEXT.get(rule, f"it fails the schema's '{rule}' rule")
        super().__init__(f"payload at {path} breaks rule '{rule}': {self.detail}")


# ---------------------------------------------------------------------------- parsing


class _Pairs(list[tuple[str, Any]]):
    """An object as parsed, before duplicate and forbidden keys are checked with a path."""


def _no_constant(name: str) -> Any:
    raise PayloadError("$", "non_finite_number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise PayloadError("$", "non_finite_number")
    return value


def parse_payload(text: str | bytes) -> Any:
    """The JSON value in ``text``, or :class:`PayloadError` naming the path and rule."""
    if isinstance(text, (bytes, bytearray)):
        if len(text) > MAX_PAYLOAD_BYTES:
            raise PayloadError("$", "max_bytes")
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise PayloadError("$", "encoding") from None
    if not isinstance(text, str):
        raise PayloadError("$", "json_syntax", f"the payload must be JSON text, got "
                           f"{type(text).__name__}")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate
        raise PayloadError("$", "encoding") from None
    if size > MAX_PAYLOAD_BYTES:
        raise PayloadError("$", "max_bytes")
    try:
        raw = json.loads(text, object_pairs_hook=_Pairs, parse_constant=_no_constant,
                         parse_float=_finite_float)
    except PayloadError:
        raise
    except json.JSONDecodeError as exc:
        # exc.msg is a fixed phrase such as "Expecting ',' delimiter": it quotes nothing
        raise PayloadError("$", "json_syntax", f"the payload is not well-formed JSON "
                           f"({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise PayloadError("$", "max_depth") from None
    except ValueError:  # an integer with more digits than Python converts
        raise PayloadError("$", "non_finite_number", "a number in the payload is too "
                           "large") from None
    return _build(raw, "$", 0)


def _build(value: Any, path: str, depth: int) -> Any:
    if isinstance(value, _Pairs):
        if depth + 1 > MAX_DEPTH:
            raise PayloadError(path, "max_depth")
        out: dict[str, Any] = {}
        for key, item in value:
            here = child_path(path, key)
            _check_encodable(key, here)
            if key in FORBIDDEN_KEYS:
                raise PayloadError(here, "forbidden_key")
            if key in out:
                raise PayloadError(here, "duplicate_key")
            out[key] = _build(item, here, depth + 1)
        return out
    if isinstance(value, list):
        if depth + 1 > MAX_DEPTH:
            raise PayloadError(path, "max_depth")
        return [_build(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]
    if isinstance(value, str):
        _check_encodable(value, path)
    return value


def _check_encodable(text: str, path: str) -> None:
    # "\ud800" is valid JSON text but decodes to a lone surrogate no record can store
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise PayloadError(path, "encoding", "a string escapes a lone UTF-16 surrogate, "
                           "which is not Unicode text") from None


def child_path(path: str, key: str | int) -> str:
    """``path`` extended by an object key or array index, in JSON-path notation."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _PLAIN_KEY.fullmatch(key) and not _looks_secret(key):
        return f"{path}.{key}"
    if len(key) <= 64 and not _looks_secret(key) and key.isprintable():
        return f"{path}[{json.dumps(key)}]"
    return f"{path}[<key>]"


def _looks_secret(text: str) -> bool:
    from reference_engine.secrets import scan  # secrets imports nothing from here

    try:
        return scan(text) is not None
    except Exception:  # a path is cosmetic: hide the key when unsure
        return True


def json_path(parts: Sequence[str | int]) -> str:
    """``["a", 0, "b"]`` -> ``$.a[0].b``."""
    path = "$"
    for part in parts:
        path = child_path(path, part)
    return path


# ---------------------------------------------------------------------------- schema


def validate_payload(value: Any, schema: Mapping[str, Any]) -> None:
    """Return when ``value`` satisfies ``schema``; else :class:`PayloadError`.

    The schema is first checked against the subset: a broken schema raises
    ``SchemaSubsetError`` (a ``WorkflowError``), which a caller should treat as an
    unreadable wait, not as a bad payload.
    """
    check_schema(schema)
    if matches(value, schema):
        return
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    validator = Draft202012Validator(schema)
    error = best_match(validator.iter_errors(value))
    if error is not None:
        raise _from_validation_error(error)


def _from_validation_error(error: ValidationError) -> PayloadError:
    parts: list[str | int] = list(error.absolute_path)
    rule = str(error.validator)
    schema_value: Any = error.validator_value
    instance = error.instance
    detail: str | None = None
    if rule == "required" and isinstance(instance, Mapping):
        missing = [n for n in schema_value if n not in instance]
        if missing:
            parts.append(missing[0])
        detail = "this property is required"
    elif rule == "additionalProperties" and isinstance(instance, Mapping):
        allowed = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
        extra = [k for k in instance if k not in allowed]
        if extra:
            parts.append(extra[0])
        detail = "this property is not allowed by the schema"
    elif rule == "type":
        names = schema_value if isinstance(schema_value, list) else [schema_value]
        detail = f"expected {' or '.join(str(n) for n in names)}"
    elif rule == "enum":
        count = len(schema_value) if isinstance(schema_value, list) else 0
        detail = f"the value is not one of the {count} allowed values"
    elif rule == "minItems":
        detail = f"expected at least {schema_value} items"
    elif rule == "maxItems":
        detail = f"expected at most {schema_value} items"
    elif rule == "uniqueItems":
        detail = "the items must be unique"
    return PayloadError(json_path(parts), rule, detail)
