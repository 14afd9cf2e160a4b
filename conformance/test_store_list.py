"""SPEC §2.2 list(prefix): whole segments, sorted by code point, literal characters."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.dw_store_contract

# Written in this (unsorted) order, so a list that keeps write order is caught.
KEYS = ["r/listing", "r/list/nested/b", "s", "r/list", "r/other/x", "r/list/a", "r/lis"]


def _write(store: Any, keys: list[str]) -> None:
    for key in keys:
        store.put(key, key.encode("utf-8"))


@pytest.mark.parametrize("prefix", ["r/list", "r/list/"], ids=["no-slash", "trailing-slash"])
def test_list_matches_whole_segments_with_or_without_a_trailing_slash(
    dw_store: Any, prefix: str,
) -> None:
    _write(dw_store, KEYS)
    assert dw_store.list(prefix) == ["r/list/a", "r/list/nested/b"]


def test_list_never_returns_a_name_prefixed_sibling_or_the_prefix_key_itself(
    dw_store: Any,
) -> None:
    _write(dw_store, KEYS)
    listed = dw_store.list("r/list")
    assert "r/listing" not in listed, "list matched a name prefix, not a whole segment"
    assert "r/list" not in listed, "list returned the prefix key itself"
    assert dw_store.list("r/lis") == [], "list('r/lis') must not match 'r/list' or 'r/listing'"


def test_list_returns_keys_at_every_depth_below_the_prefix(dw_store: Any) -> None:
    _write(dw_store, ["deep/a", "deep/b/c", "deep/b/c/d/e"])
    assert dw_store.list("deep") == ["deep/a", "deep/b/c", "deep/b/c/d/e"]
    assert dw_store.list("deep/b") == ["deep/b/c", "deep/b/c/d/e"]


def test_list_of_the_empty_prefix_returns_every_key(dw_store: Any) -> None:
    _write(dw_store, KEYS)
    assert dw_store.list("") == sorted(KEYS)


def test_list_is_sorted_by_code_point_without_duplicates(dw_store: Any) -> None:
    # Mixed case, Latin-1, a fullwidth letter (U+FF21) and a non-BMP emoji: code-point order
    # puts U+FF21 before U+1F600, where UTF-16 order would put it after.
    names = ["b", "\U0001f600", "B", "a", "\uff21", "\u00e9", "A", "Z", "z", "~", "0", "_"]
    keys = [f"sorted/{name}" for name in names]
    _write(dw_store, keys)
    _write(dw_store, keys[:3])  # rewriting a key must not list it twice
    assert dw_store.list("sorted") == sorted(keys)


def test_list_of_a_prefix_with_nothing_under_it_is_empty(dw_store: Any) -> None:
    _write(dw_store, KEYS)
    assert dw_store.list("nothing/here") == []
    assert dw_store.list("r/list/a") == [], "a leaf key has nothing under it"
    assert dw_store.list("r/other/x/") == []


def test_list_treats_percent_underscore_and_star_literally(dw_store: Any) -> None:
    _write(dw_store, ["p%/x", "pa/x", "p_/x", "pb/x", "p*/x", "pc/x", "p_q/x", "p%%/x"])
    assert dw_store.list("p%") == ["p%/x"]
    assert dw_store.list("p_") == ["p_/x"]
    assert dw_store.list("p*") == ["p*/x"]
