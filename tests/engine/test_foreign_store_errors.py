"""docs/contract.md C-ERR-2: a backend's own exception is a failure of unknown effect.

The engine retries a create only after ``TransientStoreError``; any other exception from
the store stops the operation at once, unretried, and reaches the caller as it was raised.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from support.engine_flows import approval_workflow

from reference_engine.engine import Engine
from reference_engine.errors import TransientStoreError
from reference_engine.stores.memory import MemoryStore


class BackendConnectionError(Exception):
    """Stands for a backend library's own exception (say, a client's ConnectionError)."""


class FailingCreates:
    """A memory store whose next ``put_if_absent`` calls raise the queued exceptions."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner = inner
        self.queued: list[Exception] = []
        self.creates = 0

    def put_if_absent(self, key: str, data: bytes) -> bool:
        self.creates += 1
        if self.queued:
            raise self.queued.pop(0)
        return self.inner.put_if_absent(key, data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _suspended(make_engine: Callable[..., Engine], store: FailingCreates) -> tuple[str, str]:
    view = make_engine(store).run(approval_workflow())
    assert view.status == "suspended"
    return view.run_id, view.waits[0].wait_id


@pytest.mark.dw_clause("C-ERR-2")
def test_a_backend_exception_from_a_create_is_raised_unretried(
    make_engine: Callable[..., Engine],
) -> None:
    store = FailingCreates(MemoryStore())
    _, wait_id = _suspended(make_engine, store)
    store.creates = 0
    store.queued.append(BackendConnectionError("connection reset"))

    with pytest.raises(BackendConnectionError):
        make_engine(store).signal(wait_id, '{"approved": true}')
    assert store.creates == 1, (
        f"the engine called put_if_absent {store.creates} times after a backend's own "
        "exception; only TransientStoreError may be retried (C-ERR-2)"
    )


@pytest.mark.dw_clause("C-ERR-1", "C-ERR-2")
def test_a_transient_error_from_a_create_is_retried_after_a_look(
    make_engine: Callable[..., Engine],
) -> None:
    store = FailingCreates(MemoryStore())
    _, wait_id = _suspended(make_engine, store)
    store.creates = 0
    store.queued.append(TransientStoreError("throttled", op="put_if_absent", key="k"))

    delivery = make_engine(store).signal(wait_id, '{"approved": true}')
    assert delivery.wait_id == wait_id and delivery.awaiting_resume, delivery
    assert store.creates == 2, f"expected one retry of the create, saw {store.creates} calls"
