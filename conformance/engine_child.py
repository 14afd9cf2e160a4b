"""What the engine-level tests run in other processes; kept free of pytest so it starts fast.

- ``store_from_env``: a store factory for ``dw ... --store conformance.engine_child:
  store_from_env``. A CLI process must open the same corner of the store as the test,
  ``PrefixedStore(open_store(uri), prefix)``; store URIs carry no key prefix, so the two
  halves travel in the environment.
- ``python -m conformance.engine_child``: a signalling racer. It reads one JSON line
  ``{uri, prefix, now, submitter}``, opens its handle and engine, prints ``ready``, then
  signals each wait id it is sent (one per line) and answers one JSON line per wait. The
  parent sends each wait id to every racer at once, so the racers meet at every wait.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from dw_testing.kit.prefixed import PrefixedStore
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


def serve_signals(lines: Any = None, out: Any = None) -> None:
    """The racer's loop (see the module docstring)."""
    from reference_engine.engine import Engine
    from reference_engine.refusals import Refusal

    lines = sys.stdin if lines is None else lines
    out = sys.stdout if out is None else out
    header = json.loads(lines.readline())
    store = PrefixedStore(open_store(header["uri"]), header["prefix"])
    engine = Engine(store, FixedClock(float(header["now"])), claim_patience=False)
    print("ready", file=out, flush=True)
    try:
        for line in lines:
            wait_id = line.strip()
            try:
                delivery = engine.signal(wait_id, header["payload"],
                                         submitted_by=header["submitter"])
            except Refusal as refusal:
                answer = ["refused", refusal.kind]
            else:
                answer = ["won", delivery.receipt.id]
            print(json.dumps(answer), file=out, flush=True)
    finally:
        store.close()  # C-HANDLE-3: the child opened this handle, so it closes it


if __name__ == "__main__":
    serve_signals()
