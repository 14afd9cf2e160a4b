"""Fixtures for the typed-answer tests; the store, clock and engines come from tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import answer_steps
import pytest


@pytest.fixture(autouse=True)
def _fresh_step_observations() -> Iterator[None]:
    answer_steps.reset()
    yield
    answer_steps.reset()
