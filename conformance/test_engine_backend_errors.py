"""C-ERR-2 at the engine level: a backend's own exception is a failure of unknown effect.

A store should map its backend's errors to ``StoreError`` classes; one that lets its own
exception escape (a client's connection error, say) must not be taken for a transient
failure. The engine stops the call there, unretried, and the caller sees the exception; a
later signal, on a store that works again, is accepted and applied once.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

import pytest

from conformance.engine_support import (
    OUTCOMES,
    YES,
    approval_workflow,
    assert_applied_once,
    outcome_kind,
)
from dw_testing.plugin.engine_fixtures import MakeEngine

pytestmark = [pytest.mark.dw_engine, pytest.mark.dw_requires("put_if_absent")]


class BackendOwnError(Exception):
    """Stands for a backend client's own exception that a store let escape unmapped."""


class RaisesItsOwnOnce:
    """The store under test, except that the next create of a matching key raises the
    backend's own exception before reaching the store; counts those creates."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.pattern: str | None = None
        self.creates_after_arming = 0

    def arm(self, pattern: str) -> None:
        self.pattern = pattern
        self.creates_after_arming = 0

    def put_if_absent(self, key: str, data: bytes) -> bool:
        if self.pattern is not None and fnmatchcase(key, self.pattern):
            self.creates_after_arming += 1
            if self.creates_after_arming == 1:
                raise BackendOwnError("connection reset by peer")
        return bool(self.inner.put_if_absent(key, data))

    def put(self, key: str, data: bytes) -> None:
        self.inner.put(key, data)

    def get(self, key: str) -> bytes | None:
        found: bytes | None = self.inner.get(key)
        return found

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def list(self, prefix: str) -> list[str]:
        return list(self.inner.list(prefix))


@pytest.mark.dw_clause("C-ERR-2")
def test_a_backends_own_exception_stops_a_signal_unretried_and_a_later_signal_wins_once(
    dw_store: Any, dw_make_engine: MakeEngine,
) -> None:
    store = RaisesItsOwnOnce(dw_store)
    engine = dw_make_engine(store)
    view = engine.run(approval_workflow())
    wait_id = view.waits[0].wait_id
    store.arm(OUTCOMES)

    with pytest.raises(BackendOwnError):
        engine.signal(wait_id, YES)
    assert store.creates_after_arming == 1, (
        f"the engine created the outcome {store.creates_after_arming} times after the "
        "backend's own exception: only TransientStoreError says a retry is safe (C-ERR-2)"
    )
    assert outcome_kind(dw_store, wait_id) is None, "an outcome landed although the create raised"

    delivery = engine.signal(wait_id, YES)
    assert outcome_kind(dw_store, wait_id) == "accepted"
    assert engine.resume(view.run_id).status == "succeeded"
    assert_applied_once(engine, dw_store, view.run_id, delivery.receipt.id)
