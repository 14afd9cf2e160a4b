"""SPEC §2.1: the write-once create, one call at a time (clauses 1, 2, 3 and 6)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = [pytest.mark.dw_store_contract, pytest.mark.dw_requires("put_if_absent")]


def test_create_returns_true_once_then_false_and_never_the_value(dw_store: Any) -> None:
    first = dw_store.put_if_absent("runs/r1/claim", b"first")
    second = dw_store.put_if_absent("runs/r1/claim", b"second")

    assert first is True, f"the create of a new key returned {first!r}, not True"
    assert second is False, (
        f"a create of an existing key returned {second!r}; it must be False, never the "
        "existing value (callers read it with get)"
    )
    assert dw_store.get("runs/r1/claim") == b"first", "a losing create changed the record"


def test_create_over_a_record_written_by_put_returns_false_and_keeps_its_bytes(
    dw_store: Any,
) -> None:
    dw_store.put("waits/w1/outcome", b"written by put")

    assert dw_store.put_if_absent("waits/w1/outcome", b"written by create") is False
    assert dw_store.get("waits/w1/outcome") == b"written by put"


def test_create_with_the_same_bytes_again_returns_false(dw_store: Any) -> None:
    assert dw_store.put_if_absent("waits/w2/outcome", b"same") is True
    assert dw_store.put_if_absent("waits/w2/outcome", b"same") is False, (
        "a second create with identical bytes won again; only the call that created the "
        "record may get True"
    )
    dw_store.put("waits/w3/outcome", b"same")
    assert dw_store.put_if_absent("waits/w3/outcome", b"same") is False


def test_create_after_delete_creates_the_key_again(dw_store: Any) -> None:
    assert dw_store.put_if_absent("leases/l1", b"old") is True
    dw_store.delete("leases/l1")

    assert dw_store.put_if_absent("leases/l1", b"new") is True, (
        "after delete the key must be creatable again"
    )
    assert dw_store.get("leases/l1") == b"new"
