"""Build the Engine for one CLI process: the store from ``--store``, the clock from DW_CLOCK."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from reference_engine.cli.options import opened_store
from reference_engine.cli.output import progress
from reference_engine.clock import clock_from_env

if TYPE_CHECKING:
    from reference_engine.engine import Engine


@contextmanager
def engine_session(store_uri: str) -> Iterator[Engine]:
    """An Engine on a fresh handle of ``store_uri``; the handle is closed afterwards."""
    clock = clock_from_env()  # a bad DW_CLOCK fails before the store is touched
    # Imported here so `dw store ...` keeps working even if the engine cannot import.
    from reference_engine.engine import Engine

    with opened_store(store_uri) as store:
        yield Engine(store, clock, progress=progress)
