"""``listed``: one ``list`` call, judged by what the store promises of its order.

Every store owes the core clause (C-LIST-3): for ``""`` or a prefix ending in ``/``, every
key under it, once, in any order. Only a store that declares ``sorted_list`` owes
code-point order (C-LIST-5). Comparing through :func:`listed` checks the order exactly
where it is promised and nowhere else.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

__all__ = ["listed", "promises_order"]


def promises_order(capabilities: Mapping[str, bool]) -> bool:
    return bool(capabilities.get("sorted_list", False))


def listed(store: Any, prefix: str, capabilities: Mapping[str, bool]) -> list[str]:
    """``store.list(prefix)``, sorted here unless the store declares ``sorted_list``.

    Raises AssertionError for a key listed twice (C-LIST-3), and, when the store declares
    ``sorted_list``, for keys out of code-point order (C-LIST-5).
    """
    keys = list(store.list(prefix))
    twice = sorted(key for key, count in Counter(keys).items() if count > 1)
    assert not twice, (
        f"list({prefix!r}) returned {twice} more than once (C-LIST-3): list must name each "
        "key once; deduplicate what the backend answers (a set, or DISTINCT)"
    )
    if not promises_order(capabilities):
        return sorted(keys)
    assert keys == sorted(keys), (
        f"list({prefix!r}) returned {keys}, not in code-point order, and the store declares "
        "sorted_list (C-LIST-5): sort with sorted() (Python) or byCodePoint (the shim), not a "
        "collation or UTF-16 order, or declare sorted_list = false"
    )
    return keys
