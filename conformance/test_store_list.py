"""list(prefix) (C-LIST-1, C-LIST-2): whole segments, sorted by code point, literal characters.

No test here needs a key and a key beneath it (``a`` and ``a/b``) to both exist: a store
that cannot nest keys still has its ``list`` checked, and fails nesting on its own test
(``test_a_key_and_keys_beneath_it_coexist`` in test_store_keys.py).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

pytestmark = pytest.mark.dw_store_contract

# Written in this (unsorted) order, so a list that keeps write order is caught. No key here
# lies beneath another.
KEYS = ["r/listing", "r/list/nested/b", "s", "r/other/x", "r/list/a", "r/lis"]

# Prefixes that mean something to a matcher (glob and Redis SCAN MATCH, SQL LIKE, regular
# expressions), each with the names that matcher would also find: list(prefix) must find
# only "<prefix>/x". A backslash cannot be tried: keys refuse it.
MATCHER_SYNTAX = {
    "SQL LIKE %": ("p%", ["pa", "p%%"]),
    "SQL LIKE _": ("p_", ["pb", "p_q"]),
    "glob *": ("p*", ["pc", "p**"]),
    "glob ?": ("q?", ["qa", "q??"]),
    "glob [class]": ("g[1]", ["g1"]),
    "glob [!class]": ("g[!1]", ["g2", "g!"]),
    "glob {a,b}": ("b{c,d}", ["bc", "bd"]),
    "regex .": ("d.t", ["dxt"]),
    "regex +": ("a+b", ["aab", "aaab"]),
    "regex (group)": ("c(d)", ["cd"]),
    "regex |": ("h|i", ["h", "i"]),
    "regex ^ and $": ("^k$", ["k"]),
}


def _write(store: Any, keys: list[str]) -> None:
    for key in keys:
        store.put(key, key.encode("utf-8"))


@pytest.mark.dw_clause("C-LIST-1")
@pytest.mark.parametrize("prefix", ["r/list", "r/list/"], ids=["no-slash", "trailing-slash"])
def test_list_matches_whole_segments_with_or_without_a_trailing_slash(
    dw_store: Any, prefix: str,
) -> None:
    _write(dw_store, KEYS)
    assert dw_store.list(prefix) == ["r/list/a", "r/list/nested/b"]


@pytest.mark.dw_clause("C-LIST-1")
def test_list_never_returns_a_name_prefixed_sibling_or_the_prefix_key_itself(
    dw_store: Any,
) -> None:
    # The prefix key "own/key" has nothing beneath it, so a store that cannot nest keys
    # still answers: list("own/key") must be empty, not the key itself or "own/keys".
    _write(dw_store, [*KEYS, "own/key", "own/keys"])
    listed = dw_store.list("r/list")
    assert "r/listing" not in listed, "list matched a name prefix, not a whole segment"
    assert dw_store.list("r/lis") == [], "list('r/lis') must not match 'r/list/...' or 'r/listing'"
    assert dw_store.list("own/key") == [], "list returned the prefix key itself or a sibling"


@pytest.mark.dw_clause("C-LIST-1")
def test_list_returns_keys_at_every_depth_below_the_prefix(dw_store: Any) -> None:
    _write(dw_store, ["deep/a", "deep/b/c", "deep/b/d/e/f"])
    assert dw_store.list("deep") == ["deep/a", "deep/b/c", "deep/b/d/e/f"]
    assert dw_store.list("deep/b") == ["deep/b/c", "deep/b/d/e/f"]


@pytest.mark.dw_clause("C-LIST-1")
def test_list_of_the_empty_prefix_returns_every_key(dw_store: Any) -> None:
    _write(dw_store, KEYS)
    assert dw_store.list("") == sorted(KEYS)


@pytest.mark.dw_clause("C-LIST-1", "C-LIST-2")
def test_the_stores_own_list_of_the_empty_prefix_includes_every_key(dw_raw_store: Any) -> None:
    # Every other test lists through PrefixedStore, which never passes "" on; `dw store ls`
    # does. The store may hold other keys, so only the probe's own keys are checked.
    probe = f"dwc-everything-{uuid.uuid4().hex[:12]}"
    keys = [f"{probe}/a", f"{probe}/b/c"]
    try:
        _write(dw_raw_store, keys)
        listed = dw_raw_store.list("")
    finally:
        for key in keys:
            dw_raw_store.delete(key)
    mine = [key for key in listed if key.startswith(f"{probe}/")]
    assert mine == keys, (
        f"the store's own list('') returned {mine} of the keys it had just written under a "
        f"fresh prefix, not {keys}: list('') must return every key"
    )
    assert listed == sorted(set(listed)), "list('') must be sorted, without duplicates"


@pytest.mark.dw_clause("C-LIST-2")
def test_list_is_sorted_by_code_point_without_duplicates(dw_store: Any) -> None:
    # Mixed case, Latin-1, a fullwidth letter (U+FF21) and a non-BMP emoji: code-point order
    # puts U+FF21 before U+1F600, where UTF-16 order would put it after.
    names = ["b", "\U0001f600", "B", "a", "\uff21", "\u00e9", "A", "Z", "z", "~", "0", "_"]
    keys = [f"sorted/{name}" for name in names]
    _write(dw_store, keys)
    _write(dw_store, keys[:3])  # rewriting a key must not list it twice
    assert dw_store.list("sorted") == sorted(keys)


@pytest.mark.dw_clause("C-LIST-1")
def test_list_of_a_prefix_with_nothing_under_it_is_empty(dw_store: Any) -> None:
    _write(dw_store, KEYS)
    assert dw_store.list("nothing/here") == []
    assert dw_store.list("r/list/a") == [], "a leaf key has nothing under it"
    assert dw_store.list("r/other/x/") == []


@pytest.mark.dw_clause("C-LIST-1")
def test_list_treats_percent_underscore_and_star_literally(dw_store: Any) -> None:
    _write(dw_store, ["p%/x", "pa/x", "p_/x", "pb/x", "p*/x", "pc/x", "p_q/x", "p%%/x"])
    assert dw_store.list("p%") == ["p%/x"]
    assert dw_store.list("p_") == ["p_/x"]
    assert dw_store.list("p*") == ["p*/x"]


@pytest.mark.dw_clause("C-LIST-1")
def test_list_treats_matcher_syntax_in_a_prefix_literally(dw_store: Any) -> None:
    for prefix, decoys in MATCHER_SYNTAX.values():
        _write(dw_store, [f"{name}/x" for name in (prefix, *decoys)])
    wrong = {
        syntax: listed for syntax, (prefix, _) in MATCHER_SYNTAX.items()
        if (listed := dw_store.list(prefix)) != [f"{prefix}/x"]
    }
    assert not wrong, (
        "list read these prefixes as patterns, not literal text (escape the prefix before "
        "handing it to a glob, LIKE or regex matcher, or match with startswith):\n" + "\n".join(
            f"- {syntax}: list({MATCHER_SYNTAX[syntax][0]!r}) returned {listed}, not "
            f"[{MATCHER_SYNTAX[syntax][0] + '/x'!r}]" for syntax, listed in wrong.items()
        )
    )
