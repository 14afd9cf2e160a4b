"""list(prefix): C-LIST-3 for every store, C-LIST-4 and C-LIST-5 for the stores declaring them.

The core clause (C-LIST-3) is what an engine needs: for ``""`` or a prefix ending in ``/``,
every key under it, in full, once, in any order. So the tests that every store must pass
call ``list`` only with such a prefix and compare through :func:`listed`, which sorts the
answer unless the store declares ``sorted_list`` (C-LIST-5; then the order is checked as
given). A prefix without a trailing ``/`` is tried only on a store that declares
``segment_prefixes`` (C-LIST-4): whole segments, never a name that merely starts with it.

No test here needs a key and a key beneath it (``a`` and ``a/b``) to both exist: a store
that cannot nest keys still has its ``list`` checked, and fails nesting on its own test
(``test_a_key_and_keys_beneath_it_coexist`` in test_store_keys.py).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from dw_testing.kit.listing import listed

pytestmark = pytest.mark.dw_store_contract

# Written in this (unsorted) order, so a list that keeps write order is caught. No key here
# lies beneath another.
KEYS = ["r/listing", "r/list/nested/b", "s", "r/other/x", "r/list/a", "r/lis"]

# Prefixes that mean something to a matcher (glob and Redis SCAN MATCH, SQL LIKE, regular
# expressions), each with the names that matcher would also find: list("<prefix>/") must
# find only "<prefix>/x". A backslash cannot be tried: keys refuse it.
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


# -- the core clause: "" or a prefix ending in "/", any order ------------------------------


@pytest.mark.dw_clause("C-LIST-3")
def test_list_of_a_slash_ending_prefix_returns_every_key_under_it_in_full(
    dw_store: Any, dw_caps: dict[str, bool],
) -> None:
    _write(dw_store, KEYS)
    assert listed(dw_store, "r/list/", dw_caps) == ["r/list/a", "r/list/nested/b"], (
        "list('r/list/') must return every key starting with 'r/list/', whole, and no other "
        "(not 'r/listing', not 'r/lis')"
    )


@pytest.mark.dw_clause("C-LIST-3")
def test_list_returns_keys_at_every_depth_below_the_prefix(
    dw_store: Any, dw_caps: dict[str, bool],
) -> None:
    _write(dw_store, ["deep/a", "deep/b/c", "deep/b/d/e/f"])
    assert listed(dw_store, "deep/", dw_caps) == ["deep/a", "deep/b/c", "deep/b/d/e/f"]
    assert listed(dw_store, "deep/b/", dw_caps) == ["deep/b/c", "deep/b/d/e/f"]


@pytest.mark.dw_clause("C-LIST-3")
def test_list_of_the_empty_prefix_returns_every_key(
    dw_store: Any, dw_caps: dict[str, bool],
) -> None:
    _write(dw_store, KEYS)
    assert listed(dw_store, "", dw_caps) == sorted(KEYS)


@pytest.mark.dw_clause("C-LIST-3", "C-LIST-5")
def test_the_stores_own_list_of_the_empty_prefix_includes_every_key(
    dw_raw_store: Any, dw_caps: dict[str, bool],
) -> None:
    # Every other test lists through PrefixedStore, which never passes "" on; `dw store ls`
    # does. The store may hold other keys, so only the probe's own keys are checked.
    probe = f"dwc-everything-{uuid.uuid4().hex[:12]}"
    keys = [f"{probe}/a", f"{probe}/b/c"]
    try:
        _write(dw_raw_store, keys)
        everything = listed(dw_raw_store, "", dw_caps)
    finally:
        for key in keys:
            dw_raw_store.delete(key)
    mine = [key for key in everything if key.startswith(f"{probe}/")]
    assert mine == keys, (
        f"the store's own list('') returned {mine} of the keys it had just written under a "
        f"fresh prefix, not {keys}: list('') must return every key"
    )


@pytest.mark.dw_clause("C-LIST-3")
def test_list_names_a_rewritten_key_once(dw_store: Any, dw_caps: dict[str, bool]) -> None:
    keys = [f"again/{name}" for name in "abc"]
    _write(dw_store, keys)
    _write(dw_store, keys[:2])  # rewriting a key must not list it twice
    assert listed(dw_store, "again/", dw_caps) == keys


@pytest.mark.dw_clause("C-LIST-3")
def test_list_of_a_prefix_with_nothing_under_it_is_empty(
    dw_store: Any, dw_caps: dict[str, bool],
) -> None:
    _write(dw_store, KEYS)
    assert listed(dw_store, "nothing/here/", dw_caps) == []
    assert listed(dw_store, "r/list/a/", dw_caps) == [], "a leaf key has nothing under it"
    assert listed(dw_store, "r/other/x/", dw_caps) == []


@pytest.mark.dw_clause("C-LIST-3")
def test_list_treats_percent_underscore_and_star_literally(
    dw_store: Any, dw_caps: dict[str, bool],
) -> None:
    _write(dw_store, ["p%/x", "pa/x", "p_/x", "pb/x", "p*/x", "pc/x", "p_q/x", "p%%/x"])
    assert listed(dw_store, "p%/", dw_caps) == ["p%/x"]
    assert listed(dw_store, "p_/", dw_caps) == ["p_/x"]
    assert listed(dw_store, "p*/", dw_caps) == ["p*/x"]


@pytest.mark.dw_clause("C-LIST-3")
def test_list_treats_matcher_syntax_in_a_prefix_literally(
    dw_store: Any, dw_caps: dict[str, bool],
) -> None:
    for prefix, decoys in MATCHER_SYNTAX.values():
        _write(dw_store, [f"{name}/x" for name in (prefix, *decoys)])
    wrong = {
        syntax: found for syntax, (prefix, _) in MATCHER_SYNTAX.items()
        if (found := listed(dw_store, f"{prefix}/", dw_caps)) != [f"{prefix}/x"]
    }
    assert not wrong, (
        "list read these prefixes as patterns, not literal text (escape the prefix before "
        "handing it to a glob, LIKE or regex matcher, or match with startswith):\n" + "\n".join(
            f"- {syntax}: list({MATCHER_SYNTAX[syntax][0] + '/'!r}) returned {found}, not "
            f"[{MATCHER_SYNTAX[syntax][0] + '/x'!r}]" for syntax, found in wrong.items()
        )
    )


# -- segment_prefixes: a prefix without its trailing "/" -----------------------------------


@pytest.mark.dw_clause("C-LIST-4")
@pytest.mark.dw_requires("segment_prefixes")
@pytest.mark.parametrize("prefix", ["r/list", "r/list/"], ids=["no-slash", "trailing-slash"])
def test_list_matches_whole_segments_with_or_without_a_trailing_slash(
    dw_store: Any, dw_caps: dict[str, bool], prefix: str,
) -> None:
    _write(dw_store, KEYS)
    expected = ["r/list/a", "r/list/nested/b"]
    assert listed(dw_store, prefix, dw_caps) == expected, (
        f"the store declares segment_prefixes, so list({prefix!r}) must answer as "
        "list('r/list/') does: every key under the segment, and no name-prefixed sibling"
    )


@pytest.mark.dw_clause("C-LIST-4")
@pytest.mark.dw_requires("segment_prefixes")
def test_list_never_returns_a_name_prefixed_sibling_or_the_prefix_key_itself(
    dw_store: Any, dw_caps: dict[str, bool],
) -> None:
    # The prefix key "own/key" has nothing beneath it, so a store that cannot nest keys
    # still answers: list("own/key") must be empty, not the key itself or "own/keys".
    _write(dw_store, [*KEYS, "own/key", "own/keys"])
    found = listed(dw_store, "r/list", dw_caps)
    assert "r/listing" not in found, "list matched a name prefix, not a whole segment"
    assert listed(dw_store, "r/lis", dw_caps) == [], (
        "list('r/lis') must not match 'r/list/...' or 'r/listing'")
    assert listed(dw_store, "own/key", dw_caps) == [], (
        "list returned the prefix key itself or a sibling")


@pytest.mark.dw_clause("C-LIST-4")
@pytest.mark.dw_requires("segment_prefixes")
def test_a_bare_prefix_lists_every_depth_below_it(
    dw_store: Any, dw_caps: dict[str, bool],
) -> None:
    _write(dw_store, ["deep/a", "deep/b/c", "deep/b/d/e/f", "deeper/x"])
    assert listed(dw_store, "deep", dw_caps) == ["deep/a", "deep/b/c", "deep/b/d/e/f"]
    assert listed(dw_store, "deep/b", dw_caps) == ["deep/b/c", "deep/b/d/e/f"]


# -- sorted_list: code-point order -----------------------------------------------------------


@pytest.mark.dw_clause("C-LIST-5")
@pytest.mark.dw_requires("sorted_list")
def test_list_is_sorted_by_code_point_without_duplicates(dw_store: Any) -> None:
    # Mixed case, Latin-1, a fullwidth letter (U+FF21) and a non-BMP emoji: code-point order
    # puts U+FF21 before U+1F600, where UTF-16 order would put it after.
    names = ["b", "\U0001f600", "B", "a", "\uff21", "\u00e9", "A", "Z", "z", "~", "0", "_"]
    keys = [f"sorted/{name}" for name in names]
    _write(dw_store, keys)
    _write(dw_store, keys[:3])  # rewriting a key must not list it twice
    assert dw_store.list("sorted/") == sorted(keys), (
        "the store declares sorted_list, so list must return its keys in code-point order "
        "(C-LIST-5), each once"
    )
