"""C-ENGINE-1: the engine retries a transient store failure, the first list of a run
included, and never retries a failure of unknown effect (C-ERR-2)."""

from __future__ import annotations

from typing import Any

import pytest
from support.engine_flows import YES, MakeEngine, approval_workflow

from reference_engine.errors import StoreError, TransientStoreError
from reference_engine.stores.memory import MemoryStore
from reference_engine.stores.transient import ATTEMPTS


class FailsFirstCalls:
    """A memory store whose first ``count`` calls of ``op`` raise ``error``."""

    def __init__(self, op: str, count: int, error: type[Exception]) -> None:
        self.inner = MemoryStore()
        self.op, self.left, self.error = op, count, error
        self.raised = 0

    def _maybe_fail(self, op: str) -> None:
        if op == self.op and self.left > 0:
            self.left -= 1
            self.raised += 1
            raise self.error(f"{op} could not be decided now", op=op)

    def put(self, key: str, data: bytes) -> None:
        self._maybe_fail("put")
        self.inner.put(key, data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        return self.inner.put_if_absent(key, data)

    def get(self, key: str) -> bytes | None:
        self._maybe_fail("get")
        return self.inner.get(key)

    def delete(self, key: str) -> None:
        self._maybe_fail("delete")
        self.inner.delete(key)

    def list(self, prefix: str) -> list[str]:
        self._maybe_fail("list")
        return self.inner.list(prefix)


@pytest.mark.parametrize("op", ["list", "get", "put", "delete"])
def test_a_transient_failure_of_a_run_s_first_calls_is_retried(
    make_engine: MakeEngine, op: str,
) -> None:
    store = FailsFirstCalls(op, ATTEMPTS - 1, TransientStoreError)
    engine = make_engine(store)
    view = engine.run(approval_workflow(), run_id="r1")
    engine.signal(view.waits[0].wait_id, YES)
    engine.resume("r1")
    engine.delete("r1")
    assert store.raised == ATTEMPTS - 1, f"no {op} was made, so nothing was retried"


def test_a_transient_failure_that_lasts_is_raised_after_the_last_attempt(
    make_engine: MakeEngine,
) -> None:
    store = FailsFirstCalls("list", ATTEMPTS, TransientStoreError)
    with pytest.raises(TransientStoreError):
        make_engine(store).run(approval_workflow(), run_id="r1")
    assert store.raised == ATTEMPTS


def test_a_failure_of_unknown_effect_is_not_retried(make_engine: MakeEngine) -> None:
    store = FailsFirstCalls("list", 1, StoreError)
    with pytest.raises(StoreError):
        make_engine(store).run(approval_workflow(), run_id="r1")
    assert store.raised == 1


def test_the_retrying_store_keeps_the_stores_own_create_and_attributes(
    make_engine: MakeEngine,
) -> None:
    plain: Any = MemoryStore()
    engine = make_engine(plain)
    assert engine.creates and engine.store.inner is plain
