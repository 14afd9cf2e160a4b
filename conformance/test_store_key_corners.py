"""C-KEY-2 at every position: keys holding each character that means something to a URL, a
percent-encoding, a path or a shell, first in the key, first in a segment, inside one, last
in a segment and last in the key.

A store that builds a URL, an object name, a file path or a shell command from a key, and
escapes, trims or decodes it on the way, breaks on one such character at one position (a
trailing ``%`` taken for a cut-short escape, a leading ``~`` or ``-``, a ``#`` that ends a
URL). The generic strategies draw these characters, but one at a given position only on
some seeds; this test builds one key per character with it at every position, every run.
Its first character is the character itself, so the keys go to the raw store under a fresh
probe segment, and are deleted at the end. Each is written, read back and listed: the
listing must name it exactly as written.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import pytest

from dw_testing.judge.coverage import KEY_MEANINGFUL_CHARS, special_name
from reference_engine.errors import InvalidKey

pytestmark = [pytest.mark.dw_store_contract, pytest.mark.dw_clause("C-KEY-2", "C-LIST-3")]


def corner_key(ch: str, probe: str) -> str:
    """A key with ``ch`` (doubled, so ``..`` starts and ends a segment too) first in the
    key, inside and last in its first segment, first, inside and last in its second."""
    twice = ch * 2
    return f"{twice}{probe}{ch}x{twice}/{twice}y{ch}z{twice}"


def test_keys_with_url_path_and_shell_characters_at_every_position_are_kept_exactly(
    dw_raw_store: Any,
) -> None:
    probe = f"dwc-corner-{uuid.uuid4().hex[:12]}"
    keys = {ch: corner_key(ch, probe) for ch in KEY_MEANINGFUL_CHARS}
    problems: list[str] = []
    try:
        for key in keys.values():
            dw_raw_store.put(key, key.encode("utf-8"))
        for ch, key in keys.items():
            got = dw_raw_store.get(key)
            if got != key.encode("utf-8"):
                what = "no record" if got is None else "another key's value"
                problems.append(f"{special_name(ch)!r}: get answered {what}")
            first = key.split("/", 1)[0]
            listed = dw_raw_store.list(f"{first}/")
            if listed != [key]:
                problems.append(f"{special_name(ch)!r}: list('{first}/') named "
                                f"{[k.replace(probe, '<probe>') for k in listed]!r}, "
                                f"expected [{key.replace(probe, '<probe>')!r}]")
    finally:
        with contextlib.suppress(InvalidKey):
            for key in keys.values():
                dw_raw_store.delete(key)
    assert not problems, (
        f"C-KEY-2: of {len(keys)} keys, each holding one character that means something to a "
        "URL, a path or a shell at every position (<probe> stands for this test's probe "
        "segment), these came back changed: " + "; ".join(problems)
        + ". Keep every character of a key as given: escape it into the backend's name "
        "(percent-encode every byte that is not unreserved) and decode it exactly on list")
