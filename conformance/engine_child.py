"""A store factory for ``dw ... --store conformance.engine_child:store_from_env``.

A CLI process started by an engine-level test must open the same corner of the store as
the test, ``PrefixedStore(open_store(uri), prefix)``; store URIs carry no key prefix, so
the two halves travel in the environment. Kept free of pytest so the child starts fast.
"""

from __future__ import annotations

import os
from typing import Any

from dw_testing.prefixed import PrefixedStore
from reference_engine.stores.registry import open_store

URI_ENV = "DW_CONFORMANCE_STORE_URI"
PREFIX_ENV = "DW_CONFORMANCE_STORE_PREFIX"


def store_from_env() -> PrefixedStore:
    """The test's prefixed handle, from ``DW_CONFORMANCE_STORE_URI`` and ``..._PREFIX``."""
    uri = os.environ.get(URI_ENV)
    prefix = os.environ.get(PREFIX_ENV)
    if not uri or not prefix:
        raise RuntimeError(f"set {URI_ENV} and {PREFIX_ENV}: this factory opens the key "
                           "prefix of one conformance test and is meant for its child processes")
    return PrefixedStore(open_store(uri), prefix)


class FixedClock:
    """The parent's fake time, frozen for one child's calls."""

    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._now


def signal_each(store: Any, wait_ids: list[str], payload: str, now: float,
                submitter: str) -> list[list[str]]:
    """Signal every wait in order (a racer of ``run_in_children``); per wait
    ``["won", receipt id]`` or ``["refused", refusal kind]``."""
    from reference_engine.engine import Engine
    from reference_engine.refusals import Refusal

    engine = Engine(store, FixedClock(now), claim_patience=False)
    answers: list[list[str]] = []
    for wait_id in wait_ids:
        try:
            delivery = engine.signal(wait_id, payload, submitted_by=submitter)
        except Refusal as refusal:
            answers.append(["refused", refusal.kind])
        else:
            answers.append(["won", delivery.receipt.id])
    return answers
