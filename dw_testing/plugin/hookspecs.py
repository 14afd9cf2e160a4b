"""Hooks the plugin offers to other plugins."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

import pytest

from reference_engine.engine import Engine


class EngineUnderTest(Protocol):
    """An engine other than the reference engine, run by the engine-level suites."""

    @property
    def name(self) -> str:
        """What reports call it."""

    def installed(self) -> AbstractContextManager[Any]:
        """Patch whatever the variant changes, for one test."""

    def engine(self, store: Any, clock: Any, **kwargs: Any) -> Engine:
        """A new engine on ``store`` and ``clock``."""


@pytest.hookspec(firstresult=True)
def pytest_dw_engine_under_test(config: pytest.Config) -> EngineUnderTest | None:
    """Return the engine the engine-level suites should test instead of the reference engine.

    The self-test's plugin (``-p dw_testing.selftest.variants``) answers with the variant
    that ``DW_ENGINE_VARIANT`` names; no answer means the reference engine.
    """
