"""Wait ids as the waits room normalises them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reference_engine.waits.registration import normalize_wait_id


@given(st.text(max_size=50))
def test_normalized_wait_ids_are_lowercase_uuids_or_nothing(text: str) -> None:
    normalized = normalize_wait_id(text)
    assert normalized is None or (normalized == normalized.lower() and len(normalized) == 36)
