"""What the differential model says about one answer: the clause it breaks, what was
expected and what came back, or ``None`` when the answer is right.

Every result is type-checked first, naming the type the contract requires: a ``memoryview``
compares equal to bytes and a ``None`` create is falsy, yet either breaks an engine.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from dw_testing.history.labels import digest
from dw_testing.models.byte_hints import missing_keys_hint, value_hint

# The list clauses as this branch of docs/contract.md numbers them: whole keys, nothing
# missing, extra or doubled (C-LIST-3); code-point order (C-LIST-5). One place to renumber.
LIST_CONTENT_CLAUSE = "C-LIST-3"
LIST_ORDER_CLAUSE = "C-LIST-5"
LIST_DUPLICATE_CLAUSE = "C-LIST-3"


def _type_name(value: object) -> str:
    return type(value).__name__


def created_problem(result: object, expected: bool, call: str) -> str | None:
    """A create must answer a real ``bool`` (C-CREATE-1), and the model's one."""
    if not isinstance(result, bool):
        return (f"C-CREATE-1: {call} must return a bool (True or False); the store returned "
                f"{_type_name(result)} {result!r}. Return True when it created the record, "
                "False when one existed")
    if result != expected:
        why = ("no record existed under the key, so the create must write it and answer True"
               if expected else "a record already exists under the key, so the create must "
               "answer False and change nothing")
        clause = "C-CREATE-3" if expected else "C-CREATE-1"
        return f"{clause}: {call} returned {result}, expected {expected}: {why}"
    return None


def value_type_problem(result: object, call: str) -> str | None:
    """``get`` answers ``bytes`` or ``None`` (C-GET-1), never bytearray or memoryview."""
    if result is None or isinstance(result, bytes):
        return None
    return (f"C-GET-1: {call} must return bytes or None; the store returned "
            f"{_type_name(result)}. Convert it with bytes(...) before returning it")


def _first_difference(got: bytes, wanted: bytes) -> str:
    for index, (a, b) in enumerate(zip(got, wanted, strict=False)):
        if a != b:
            return (f"first differing at byte {index} (expected 0x{b:02x}, got 0x{a:02x})"
                    f"{value_hint(got, wanted, index)}")
    end = min(len(got), len(wanted))
    return f"equal up to byte {end}, then one of them ends{value_hint(got, wanted, end)}"


def bytes_difference(got: object, wanted: bytes) -> str | None:
    """``None`` when ``got`` is ``wanted``; else both by length and hash and where they first
    differ, never the bytes themselves (a failure message never quotes a record)."""
    if isinstance(got, bytes) and got == wanted:
        return None
    if not isinstance(got, bytes):
        return f"got {'None' if got is None else type(got).__name__}, expected {digest(wanted)}"
    return f"got {digest(got)}, expected {digest(wanted)}, {_first_difference(got, wanted)}"


def value_problem(result: bytes | None, expected: bytes | None, call: str, *,
                  others: Mapping[str, bytes], deleted: bool, other_handle: bool,
                  reopened: bool) -> str | None:
    """Compare a ``get`` with the model, naming the likeliest clause it breaks.

    ``others`` are the other keys of the model with their values (a store that merges two
    keys answers with the other key's bytes); ``deleted``: the key's last write was a delete;
    ``other_handle``: its last write came through another handle; ``reopened``: the handle
    was opened after that write.
    """
    if result == expected:
        return None
    merged = sorted(key for key, value in others.items() if value == result)
    if result is not None and expected is None:
        if merged:
            return (f"C-KEY-2: {call} returned the bytes of {merged[0]!r}, but the key has "
                    "no record: the store merged two distinct keys (compare keys by exact "
                    "code points, never folded, normalised, trimmed or decoded)")
        clause = "C-DEL-1" if deleted else "C-GET-1"
        return (f"{clause}: {call} returned {len(result)} bytes, expected None: "
                f"{'the key was deleted' if deleted else 'nothing was ever written to it'}")
    if result is None:
        assert expected is not None
        if expected == b"":
            return f"C-GET-1: {call} returned None for a record of zero bytes; it must be b''"
        clause = ("C-HANDLE-3" if reopened else "C-HANDLE-1" if other_handle else "C-PUT-1")
        return (f"{clause}: {call} returned None, expected the {len(expected)} bytes last "
                "written" + (" (before this handle was opened)" if reopened else
                             " (through another handle)" if other_handle else ""))
    if merged:
        return (f"C-KEY-2: {call} returned the bytes of {merged[0]!r}, not its own: the "
                "store merged two distinct keys (compare keys by exact code points)")
    wanted = expected or b""
    return (f"C-VAL-1: {call} returned {digest(result)}, expected {digest(wanted)}, "
            f"{_first_difference(result, wanted)}: values are stored byte for byte")


def list_problem(result: object, expected: Collection[str], call: str, *,
                 ordered: bool) -> str | None:
    """Compare a ``list`` with the model's keys: type, duplicates, missing and extra keys,
    and, when the store declares ``sorted_list``, code-point order."""
    if not isinstance(result, list | tuple) or not all(isinstance(k, str) for k in result):
        shown = _type_name(result) if not isinstance(result, list | tuple) else (
            "a list holding " + _type_name(next(k for k in result if not isinstance(k, str))))
        return (f"{LIST_CONTENT_CLAUSE}: {call} must return a list of str; the store "
                f"returned {shown}")
    seen: dict[str, int] = {}
    for index, key in enumerate(result):
        if key in seen:
            return (f"{LIST_DUPLICATE_CLAUSE}: {call} named {key!r} twice (at index "
                    f"{seen[key]} and {index}); list names each key once")
        seen[key] = index
    wanted = sorted(expected)
    missing = [key for key in wanted if key not in seen]
    extra = [key for key in result if key not in set(wanted)]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {missing[:3]}{' ...' if len(missing) > 3 else ''} "
                         f"(the first would be at index {wanted.index(missing[0])} in order)"
                         f"{missing_keys_hint(missing)}")
        if extra:
            parts.append(f"extra {extra[:3]}{' ...' if len(extra) > 3 else ''} (the first at "
                         f"index {seen[extra[0]]})")
        return (f"{LIST_CONTENT_CLAUSE}: {call} returned {len(result)} keys, expected "
                f"{len(wanted)}: {'; '.join(parts)}. list returns every key under the "
                "prefix, whole, and no other")
    if ordered and list(result) != wanted:
        index = next(i for i, (a, b) in enumerate(zip(result, wanted, strict=True)) if a != b)
        return (f"{LIST_ORDER_CLAUSE}: {call} is out of code-point order at index {index}: "
                f"expected {wanted[index]!r}, got {result[index]!r} (the store declares "
                "sorted_list; sort with sorted(), not a collation or UTF-16 order)")
    return None
