"""Hypothesis strategies the fuzz tests share: JSON-like values, and text built from atoms."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st


def json_values(*, text: int, keys: int, width: int, leaves: int,
                infinity: bool = True) -> st.SearchStrategy[Any]:
    """What ``json.loads`` can return (no NaN): scalars, lists and string-keyed objects.

    ``text`` and ``keys`` bound the length of string values and of object keys, ``width``
    the items of a list or object, ``leaves`` the scalars in one value; ``infinity`` lets
    floats be infinite (``json.dumps`` writes those as ``Infinity``).
    """
    scalars = (st.none() | st.booleans() | st.integers()
               | st.floats(allow_nan=False, allow_infinity=infinity) | st.text(max_size=text))
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=width)
        | st.dictionaries(st.text(max_size=keys), inner, max_size=width),
        max_leaves=leaves)


def atoms_or_text(atoms: Sequence[str], *, most_atoms: int,
                  most_chars: int) -> st.SearchStrategy[str]:
    """Near-valid input (up to ``most_atoms`` of ``atoms`` joined) or any text at all."""
    return (st.lists(st.sampled_from(atoms), max_size=most_atoms).map("".join)
            | st.text(max_size=most_chars))
