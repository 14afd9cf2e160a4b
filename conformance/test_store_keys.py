"""Keys (C-KEY-1 to 3): exact code points, nesting, and the shapes refused before any I/O.

The engine needs neither nesting nor refusals: its keys are its own, inside the grammar, and
never nest (C-ENGINE-1). So both are promises a store declares, ``nested_keys`` and
``refuses_bad_keys``, and a store that declares one is held to it in full here.
"""

from __future__ import annotations

import unicodedata
import uuid
from typing import Any

import pytest

from conformance.limits import MAX_KEY_BYTES, MAX_SEGMENT_BYTES, UNITS, key_of, segment_of
from dw_testing.kit.listing import listed
from reference_engine.errors import InvalidKey

pytestmark = pytest.mark.dw_store_contract

# "{p}" is a fresh probe segment, so whatever a store wrote anyway can be found and listed.
REFUSED_KEYS = {
    "empty": "",
    "absolute": "/{p}/r1",
    "empty segment": "{p}//r1",
    "trailing slash": "{p}/r1/",
    "dot segment": "{p}/./r1",
    "dot-dot segment": "{p}/x/../r1",
    "leading dot-dot": "../{p}/r1",
    "only dot-dot": "..",
    "backslash": "{p}\\r1",
    "NUL": "{p}/r\x001",
    "control character": "{p}/r\x1b1",
    "DEL": "{p}/r\x7f1",
    "segment over 200 bytes": "{p}/" + "\u00e9" * 101,
    "key over 1024 bytes": "{p}/" + "/".join(["k" * 100] * 10),
}


def _one_byte_past_the_limits(probe: str) -> dict[str, str]:
    """A segment of 201 bytes and a key of 1025 bytes, in characters of every UTF-8 width:
    a store that counts characters, not bytes, accepts the wider ones."""
    shapes = {}
    for unit in UNITS:
        width = f"{len(unit.encode('utf-8'))}-byte characters"
        segment = segment_of(MAX_SEGMENT_BYTES + 1, unit)
        shapes[f"segment of {MAX_SEGMENT_BYTES + 1} bytes, {width}"] = f"{probe}/{segment}"
        shapes[f"key of {MAX_KEY_BYTES + 1} bytes, {width}"] = key_of(
            probe, MAX_KEY_BYTES + 1, unit)
    return shapes


REFUSED_PREFIXES = {
    "leading dot-dot": "../x",
    "dot-dot segment": "a/../b",
    "dot segment": "a/./b",
    "absolute": "/x",
    "only slash": "/",
    "empty segment": "a//b",
    "backslash": "a\\b",
    "NUL": "a\x00",
    "segment of 201 bytes": "a/" + segment_of(MAX_SEGMENT_BYTES + 1, "\u00e9"),
    "prefix of 1025 bytes": key_of("a", MAX_KEY_BYTES + 1, "\u00e9"),
}


REFUSAL_PROMISE = (
    "the store declares refuses_bad_keys, the C-KEY-1 refusals (keep them, or drop the "
    "declaration: the engine never hands a store a key outside the grammar)")
NESTING_PROMISE = (
    "the store declares nested_keys, C-KEY-3 (keep it, or drop the declaration: the "
    "engine never writes a record beneath another record's name)")


@pytest.mark.dw_clause("C-KEY-2")
def test_keys_are_case_sensitive(dw_store: Any, dw_caps: dict[str, bool]) -> None:
    for value, key in enumerate(["Key", "key", "KEY"]):
        dw_store.put(f"case/{key}", str(value).encode())
    assert [dw_store.get(f"case/{k}") for k in ["Key", "key", "KEY"]] == [b"0", b"1", b"2"]
    assert listed(dw_store, "case/", dw_caps) == ["case/KEY", "case/Key", "case/key"]


@pytest.mark.dw_clause("C-KEY-2")
def test_keys_are_not_unicode_normalised(dw_store: Any, dw_caps: dict[str, bool]) -> None:
    composed = unicodedata.normalize("NFC", "caf\u00e9")
    decomposed = unicodedata.normalize("NFD", composed)
    assert composed != decomposed
    dw_store.put(f"nfc/{composed}", b"composed")
    dw_store.put(f"nfc/{decomposed}", b"decomposed")
    assert dw_store.get(f"nfc/{composed}") == b"composed"
    assert dw_store.get(f"nfc/{decomposed}") == b"decomposed"
    assert listed(dw_store, "nfc/", dw_caps) == sorted([f"nfc/{composed}", f"nfc/{decomposed}"])


@pytest.mark.dw_clause("C-KEY-3")
@pytest.mark.dw_requires("nested_keys")
def test_a_key_and_keys_beneath_it_coexist(dw_store: Any, dw_caps: dict[str, bool]) -> None:
    try:
        dw_store.put("a", b"1")
        dw_store.put("a/b", b"2")
        dw_store.put("a/b/c", b"3")
    except Exception as exc:
        pytest.fail(f"{NESTING_PROMISE}; writing 'a', 'a/b', 'a/b/c' in turn raised "
                    f"{type(exc).__name__}: {exc}", pytrace=False)
    assert [dw_store.get(k) for k in ("a", "a/b", "a/b/c")] == [b"1", b"2", b"3"], (
        NESTING_PROMISE)
    assert listed(dw_store, "a/", dw_caps) == ["a/b", "a/b/c"]
    dw_store.delete("a")
    assert dw_store.get("a") is None
    assert listed(dw_store, "a/", dw_caps) == ["a/b", "a/b/c"], (
        "deleting 'a' must leave 'a/b' alone")


def _refusal_problems(call: Any, op: str, shape: str) -> list[str]:
    try:
        call()
    except InvalidKey as exc:
        problems = []
        if not isinstance(exc, ValueError):
            problems.append(f"{op}({shape}): InvalidKey is not a ValueError")
        if op not in str(exc):
            problems.append(f"{op}({shape}): the message does not name the operation")
        return problems
    except Exception as exc:
        return [f"{op}({shape}): raised {type(exc).__name__}, not InvalidKey"]
    return [f"{op}({shape}): accepted"]


def _refusal_clause(problems: list[str]) -> str:
    """C-KEY-1 when a refused key was accepted; C-ERR-1 when every refusal came, but as
    another error than InvalidKey (the failure's first line names the cause)."""
    return "C-KEY-1" if any(p.endswith(": accepted") for p in problems) else "C-ERR-1"


@pytest.mark.dw_clause("C-KEY-1", "C-ERR-1")
@pytest.mark.dw_requires("refuses_bad_keys")
def test_every_refused_key_shape_raises_invalid_key_on_every_operation(
    dw_raw_store: Any, dw_caps: dict[str, bool],
) -> None:
    probe = f"dwc-refused-{uuid.uuid4().hex[:12]}"
    problems: list[str] = []
    shapes = {shape: template.replace("{p}", probe) for shape, template in REFUSED_KEYS.items()}
    for shape, key in {**shapes, **_one_byte_past_the_limits(probe)}.items():
        calls = {
            "put": lambda k=key: dw_raw_store.put(k, b"x"),
            "get": lambda k=key: dw_raw_store.get(k),
            "delete": lambda k=key: dw_raw_store.delete(k),
        }
        if dw_caps["put_if_absent"]:
            calls["put_if_absent"] = lambda k=key: dw_raw_store.put_if_absent(k, b"x")
        for op, call in calls.items():
            problems += _refusal_problems(call, op, shape)
    written = dw_raw_store.list(f"{probe}/")
    for key in written:  # best effort: a store that wrote a refused key cleans up after itself
        dw_raw_store.delete(key)
    assert not problems, (
        f"{_refusal_clause(problems)}: {REFUSAL_PROMISE}; refused key shapes must raise "
        "InvalidKey naming the operation:\n" + "\n".join(problems))
    assert written == [], f"refused writes still stored {len(written)} record(s) under the probe"


@pytest.mark.dw_clause("C-KEY-1", "C-ERR-1")
@pytest.mark.dw_requires("refuses_bad_keys")
def test_every_refused_prefix_shape_raises_invalid_key_on_list(dw_raw_store: Any) -> None:
    problems: list[str] = []
    for shape, prefix in REFUSED_PREFIXES.items():
        problems += _refusal_problems(lambda p=prefix: dw_raw_store.list(p), "list", shape)
    assert not problems, (
        f"{_refusal_clause(problems)}: {REFUSAL_PROMISE}; refused prefixes must raise "
        "InvalidKey naming 'list':\n" + "\n".join(problems))
