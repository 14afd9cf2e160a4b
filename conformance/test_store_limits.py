"""docs/contract.md limits, at the limit and just past it, in every UTF-8 width.

A segment of 200 bytes and a key of 1024 bytes are accepted and kept apart from a sibling
that differs in its last character only; one byte more is refused (the refusals are in
test_store_keys.py, with the other refused shapes). ``list`` returns every key under a
prefix holding more keys than two pages of any paged backend listing we know, and more bytes
than a page by size: over 1 MiB of keys and values (a DynamoDB Query page stops at 1 MB of
items read).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from conformance.limits import MAX_KEY_BYTES, MAX_SEGMENT_BYTES, UNITS, key_of, segment_of, sibling
from dw_testing.kit.listing import listed
from dw_testing.plugin.profiles import active_profile
from reference_engine.errors import InvalidKey

pytestmark = pytest.mark.dw_store_contract

# S3 ListObjectsV2 and GCS objects.list answer 1000 names a page, Azure Blob 5000: a listing
# that stops after one or two pages must come up short. Every profile catches a store that
# pages at 1000; thorough also catches one that pages at 5000.
KEYS_IN_ONE_LISTING = {"quick": 2 * 1000 + 1, "ci": 2 * 1000 + 1, "thorough": 2 * 5000 + 1}
WRITERS = 8  # writes in parallel, so the many-key listing stays quick on network stores
# The first keys hold 60 KiB values (under every store's value limit), over 1 MiB in all:
# a page by size, as DynamoDB counts one, as well as two pages by count.
LARGE_VALUE_KEYS = 20
LARGE_VALUE = b"v" * (60 << 10)
_WIDTHS = {unit: f"{len(unit.encode('utf-8'))}-byte" for unit in UNITS}


def _each(call: Callable[[str], object], keys: Iterable[str]) -> None:
    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(call, keys))  # list() re-raises the first error


def _written_apart(store: Any, keys: list[str]) -> dict[str, str]:
    """Put a distinct value under each key; return {key: problem} for what did not read back."""
    for key in keys:
        store.put(key, key.encode("utf-8"))
    problems = {}
    for key in keys:
        got = store.get(key)
        if got != key.encode("utf-8"):
            problems[key] = "missing" if got is None else "holds another key's value"
    return problems


def _short(key: str) -> str:
    return f"<{len(key.encode('utf-8'))}-byte key ending {key[-3:]!r}>"


@pytest.mark.dw_clause("C-KEY-1", "C-KEY-2")
@pytest.mark.parametrize("unit", list(UNITS), ids=list(_WIDTHS.values()))
def test_segments_of_exactly_200_bytes_are_accepted_and_kept_apart(
    dw_store: Any, dw_caps: dict[str, bool], unit: str,
) -> None:
    long = segment_of(MAX_SEGMENT_BYTES, unit)
    keys = [f"seg/{long}", f"seg/{sibling(long)}", f"seg/x/{long}"]
    problems = _written_apart(dw_store, keys)
    assert not problems, (
        f"segments of exactly {MAX_SEGMENT_BYTES} bytes ({_WIDTHS[unit]} characters) that "
        "differ only in their last character were not kept apart: "
        + ", ".join(f"{_short(k)} {why}" for k, why in problems.items())
        + "; keep every byte of a segment up to the limit (no truncating or short hashing)"
    )
    assert listed(dw_store, "seg/", dw_caps) == sorted(keys), (
        "list must return each 200-byte segment whole")


@pytest.mark.dw_clause("C-KEY-1", "C-KEY-2")
@pytest.mark.parametrize("unit", list(UNITS), ids=list(_WIDTHS.values()))
def test_keys_of_exactly_1024_bytes_are_accepted_and_kept_apart(
    dw_raw_store: Any, dw_caps: dict[str, bool], unit: str,
) -> None:
    # Unprefixed: the test's usual private prefix would push a full-length key past the limit.
    probe = f"dwc-limit-{uuid.uuid4().hex[:12]}"
    key = key_of(probe, MAX_KEY_BYTES, unit)
    keys = sorted([key, sibling(key)])
    try:
        problems = _written_apart(dw_raw_store, keys)
        found = listed(dw_raw_store, f"{probe}/", dw_caps)
        created = (dw_raw_store.put_if_absent(keys[0], b"again")
                   if dw_caps["put_if_absent"] else False)
    except InvalidKey as refused:
        pytest.fail(
            f"the store refused a key of exactly {MAX_KEY_BYTES} bytes, which the contract "
            f"allows ({refused}); if a backend limit leaves no room for your store's root, "
            "record it as a known deviation (docs/how-to/declare-a-known-deviation.md)",
            pytrace=False)
    finally:
        with contextlib.suppress(InvalidKey):  # nothing was written under a refused key
            for written in keys:
                dw_raw_store.delete(written)
    assert not problems, (
        f"keys of exactly {MAX_KEY_BYTES} bytes ({_WIDTHS[unit]} characters) that differ only "
        "in their last character were not kept apart: "
        + ", ".join(f"{_short(k)} {why}" for k, why in problems.items())
        + "; keep every byte of a key up to the limit"
    )
    assert found == keys, f"list returned {[_short(k) for k in found]}, not both keys whole"
    assert created is False, "a create over a 1024-byte key that exists must return False"


@pytest.mark.dw_clause("C-LIST-3")
def test_list_returns_every_key_under_a_prefix_holding_over_two_backend_pages(
    dw_store: Any, dw_caps: dict[str, bool],
) -> None:
    count = KEYS_IN_ONE_LISTING[active_profile()]
    keys = [f"many/{number:05d}" for number in range(count)]
    _each(lambda key: dw_store.put(key, LARGE_VALUE if key < keys[LARGE_VALUE_KEYS] else b"m"),
          keys)
    try:
        found = listed(dw_store, "many/", dw_caps)
    finally:
        _each(dw_store.delete, keys)
    assert len(found) == count and found == keys, (
        f"list('many/') returned {len(found)} keys of the {count} written under it"
        + (f", the last {found[-1]!r}" if found else "")
        + f" ({LARGE_VALUE_KEYS} of them hold 60 KiB values, over 1 MiB in all): follow "
        "every page of the backend's listing (continuation token, page token, "
        "LastEvaluatedKey) until it has no more"
    )
