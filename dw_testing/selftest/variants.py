"""pytest plugin of the self-test: the engine-level suites run the variant that
``DW_ENGINE_VARIANT`` names instead of the reference engine.

Load it with ``-p dw_testing.selftest.variants``; the self-test's runner does.
"""

from __future__ import annotations

import pytest

from dw_testing.selftest.engine_variants import EngineVariant, selected_variant


@pytest.hookimpl
def pytest_dw_engine_under_test(config: pytest.Config) -> EngineVariant | None:
    return selected_variant()
