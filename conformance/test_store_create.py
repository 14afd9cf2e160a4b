"""The write-once create, one call at a time (C-CREATE-1, C-CREATE-3, C-CREATE-5)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = [pytest.mark.dw_store_contract, pytest.mark.dw_requires("put_if_absent")]


@pytest.mark.dw_clause("C-CREATE-1", "C-CREATE-3")
def test_create_returns_true_once_then_false_and_never_the_value(dw_store: Any) -> None:
    first = dw_store.put_if_absent("runs/r1/claim", b"first")
    second = dw_store.put_if_absent("runs/r1/claim", b"second")

    assert first is True, f"the create of a new key returned {first!r}, not True"
    assert second is False, (
        f"a create of an existing key returned {second!r}; it must be False, never the "
        "existing value (callers read it with get)"
    )
    assert dw_store.get("runs/r1/claim") == b"first", "a losing create changed the record"


@pytest.mark.dw_clause("C-CREATE-1")
def test_create_over_a_record_written_by_put_returns_false_and_keeps_its_bytes(
    dw_store: Any,
) -> None:
    dw_store.put("waits/w1/outcome", b"written by put")

    assert dw_store.put_if_absent("waits/w1/outcome", b"written by create") is False
    assert dw_store.get("waits/w1/outcome") == b"written by put"


@pytest.mark.dw_clause("C-CREATE-1")
def test_create_with_the_same_bytes_again_returns_false(dw_store: Any) -> None:
    assert dw_store.put_if_absent("waits/w2/outcome", b"same") is True
    assert dw_store.put_if_absent("waits/w2/outcome", b"same") is False, (
        "a second create with identical bytes won again; only the call that created the "
        "record may get True"
    )
    dw_store.put("waits/w3/outcome", b"same")
    assert dw_store.put_if_absent("waits/w3/outcome", b"same") is False


@pytest.mark.dw_clause("C-CREATE-5")
def test_create_after_delete_creates_the_key_again(dw_store: Any) -> None:
    assert dw_store.put_if_absent("leases/l1", b"old") is True
    dw_store.delete("leases/l1")

    assert dw_store.put_if_absent("leases/l1", b"new") is True, (
        "after delete the key must be creatable again"
    )
    assert dw_store.get("leases/l1") == b"new"


@pytest.mark.dw_clause("C-KEY-3")
@pytest.mark.dw_requires("nested_keys")
def test_create_of_a_key_with_keys_beneath_it_wins_before_and_after_they_go(
    dw_store: Any,
) -> None:
    """C-KEY-3: `a` and `a/b` are separate records, so `a/b` never makes `a` exist.

    Object stores that keep a directory entry for `a/` (SeaweedFS 4.48) answer a create of
    `a` False while `a/b` exists, or after it was deleted, with no record under `a`.
    """
    dw_store.put("nest/a/b", b"child")
    assert dw_store.put_if_absent("nest/a", b"beside") is True, (
        "a create of 'nest/a' lost while only 'nest/a/b' existed; a key beneath is no record "
        "of its own (C-KEY-3, which the store declares with nested_keys; keep it or drop "
        "the declaration)"
    )
    dw_store.delete("nest/a")
    assert dw_store.put_if_absent("nest/a", b"again") is True, (
        "after delete, 'nest/a' could not be created again beside 'nest/a/b'"
    )
    dw_store.delete("nest/a")
    dw_store.delete("nest/a/b")
    assert dw_store.put_if_absent("nest/a", b"after") is True, (
        "a create of 'nest/a' lost after 'nest/a/b' and 'nest/a' were deleted"
    )
    assert dw_store.get("nest/a") == b"after"
