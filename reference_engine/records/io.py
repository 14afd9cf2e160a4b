"""Store calls shared by every record family: the create decided by read-back, and reads."""

from __future__ import annotations

from typing import Any, cast

from reference_engine.errors import TransientStoreError
from reference_engine.stores.contract import CreatingStore

CREATE_ATTEMPTS = 3


def create_then_read(store: Any, key: str, data: bytes) -> bytes | None:
    """``put_if_absent`` then ``get``: the bytes that now live under ``key``.

    The caller decides whether it won by comparing identities in these bytes, never by
    the create's boolean: a store may answer ``False`` to the real winner after a lost
    response (C-LOST-1). A transient error is retried; the retry's ``False`` is as
    meaningless as the first answer, so the read-back settles it.
    """
    creating = cast(CreatingStore, store)
    for attempt in range(1, CREATE_ATTEMPTS + 1):
        try:
            creating.put_if_absent(key, data)
            break
        except TransientStoreError:
            # The create may have landed before the answer was lost: look before retrying.
            landed: bytes | None = store.get(key)
            if landed is not None or attempt == CREATE_ATTEMPTS:
                if landed is None:
                    raise
                return landed
    stored: bytes | None = store.get(key)
    return stored
