"""For the exec-store tests: end the spare children after each test, so that a test
counting this process's children sees only its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reference_engine.stores.exec import client


@pytest.fixture(autouse=True)
def _drain_exec_spares(request: pytest.FixtureRequest) -> Iterator[None]:
    client._SPARES.drain()
    yield
    client._SPARES.drain()
