"""A store factory whose open blocks until a test lets it go (for signals during the open).

``DW_TEST_OPEN_DIR`` holds two FIFOs, ``ready`` and ``go``, and ``DW_TEST_OPEN_STORE``
names the file store the factory opens once released.
"""

from __future__ import annotations

import os

from reference_engine.stores.contract import ControlPlaneStore
from reference_engine.stores.registry import open_store

OPEN_DIR_ENV = "DW_TEST_OPEN_DIR"
OPEN_STORE_ENV = "DW_TEST_OPEN_STORE"


def make() -> ControlPlaneStore:
    where = os.environ[OPEN_DIR_ENV]
    with open(os.path.join(where, "ready"), "w", encoding="utf-8") as ready:
        ready.write(f"opening {os.getpid()}\n")
    with open(os.path.join(where, "go"), encoding="utf-8") as go:
        go.readline()
    return open_store(os.environ[OPEN_STORE_ENV])
