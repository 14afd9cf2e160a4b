"""Key rules (C-KEY-1), checked before any I/O."""

from __future__ import annotations

import re

from reference_engine.errors import InvalidKey

MAX_SEGMENT_BYTES = 200
MAX_KEY_BYTES = 1024
# C0 controls, DEL and the C1 controls: one regex scan, not a Python loop over every
# character (every store call checks its key).
_CONTROL_CHARACTER = re.compile("[\x00-\x1f\x7f-\x9f]")


def _has_control_character(text: str) -> bool:
    return _CONTROL_CHARACTER.search(text) is not None


def validate_key(key: str, *, op: str = "access") -> str:
    """Return ``key`` unchanged, or raise :class:`InvalidKey` naming the broken rule."""
    if not isinstance(key, str):
        raise InvalidKey(f"cannot {op}: a key must be a str, got {type(key).__name__}", op=op)
    reason = key_problem(key)
    if reason is not None:
        # The key is named by its length only: a rejected key may hold anything.
        raise InvalidKey(f"cannot {op} key of {len(key)} chars: {reason}", op=op)
    return key


def key_problem(key: str) -> str | None:
    """The first rule ``key`` breaks, or ``None`` when it is valid."""
    if key == "":
        return "the key is empty"
    if key.startswith("/"):
        return "the key is an absolute path; keys are relative, like 'runs/r1/rev/1'"
    if "\\" in key:
        return "the key holds a backslash; separate segments with '/'"
    if "\x00" in key or _has_control_character(key):
        return "the key holds a NUL or other control character"
    try:
        encoded = key.encode("utf-8")
    except UnicodeEncodeError:
        return "the key is not valid UTF-8 (it holds a lone surrogate)"
    if len(encoded) > MAX_KEY_BYTES:
        return f"the key is over {MAX_KEY_BYTES} bytes in UTF-8"
    for segment in key.split("/"):
        if segment == "":
            return "the key has an empty segment ('//' or a trailing '/')"
        if segment in (".", ".."):
            return "the key has a '.' or '..' segment"
        if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
            return f"a segment is over {MAX_SEGMENT_BYTES} bytes in UTF-8"
    return None


def validate_prefix(prefix: str) -> str:
    """Normalise a list prefix: ``""`` for everything, else a valid key without trailing '/'."""
    if not isinstance(prefix, str):
        raise InvalidKey(f"cannot list: a prefix must be a str, got {type(prefix).__name__}",
                         op="list")
    stripped = prefix[:-1] if prefix.endswith("/") else prefix
    if stripped == "":
        if prefix == "":
            return ""
        raise InvalidKey("cannot list prefix '/': use '' to list every key", op="list")
    validate_key(stripped, op="list")
    return stripped


def is_under(key: str, prefix: str) -> bool:
    """Whether ``key`` lies strictly under the normalised ``prefix`` by whole segments."""
    return prefix == "" or key.startswith(prefix + "/")


MAX_OBJECT_NAME_BYTES = 1024  # S3 object keys and GCS object names alike


def validate_object_key(key: str, root: str, *, op: str, service: str) -> str:
    """``key`` if valid and ``root + key`` fits an object store's 1024-byte name limit.

    The store's root (``<prefix>/_control/``) counts against that limit, so a key the
    contract allows can still be too long there; it is refused before any I/O, with a
    rule to follow, instead of a round trip ending in a bare 400.
    """
    validate_key(key, op=op)
    size = len((root + key).encode("utf-8"))
    if size > MAX_OBJECT_NAME_BYTES:
        # Named by its length only, like every refused key: a rejected key may hold anything.
        raise InvalidKey(
            f"cannot {op} key of {len(key)} chars: under this store's root {root!r} its "
            f"object name is {size} bytes and {service} caps object names at "
            f"{MAX_OBJECT_NAME_BYTES}; use a shorter prefix in the store URI or a shorter key",
            op=op,
        )
    return key
