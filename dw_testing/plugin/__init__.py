"""The dw-testing pytest plugin (entry point ``pytest11: dw_testing``): the hooks only.

With ``--dw-store`` it parametrizes every test that uses the store fixtures once per store,
adds the ``conformance`` suite to the run, applies the Hypothesis profile and seed, skips
tests whose capabilities the store lacks, marks known deviations ``xfail(strict=True)`` and
writes the report. Without ``--dw-store`` it changes nothing: the fixtures still work, on a
session-shared memory store, so a user's own tests can use them.

Where things live: options and markers in :mod:`.options`; the run's state in :mod:`.session`
and its hooks by phase in :mod:`.collection`, :mod:`.outcomes` and :mod:`.summary`; the stores
``--dw-store`` names in :mod:`.catalogue`; store fixtures in :mod:`.fixtures`, engine fixtures in
:mod:`.engine_fixtures`.
"""

from __future__ import annotations

import logging
import os

import pytest

from dw_testing.kit.procs import DwChildTarget
from dw_testing.plugin import hookspecs, judging
from dw_testing.plugin.capabilities import conformance_test
from dw_testing.plugin.catalogue.entries import CatalogueError
from dw_testing.plugin.catalogue.resolution import describe_known
from dw_testing.plugin.collection import CollectionHooks, add_suite
from dw_testing.plugin.deviations import DeviationError
from dw_testing.plugin.heal import HealHooks
from dw_testing.plugin.options import MARKERS, add_options
from dw_testing.plugin.outcomes import OutcomeHooks
from dw_testing.plugin.report import SummaryHooks, XdistHooks
from dw_testing.plugin.session import PLUGIN_NAME, DwSession

__all__ = ["DwChildTarget", "conformance_test"]

# Registered with this module, as pytest registers any plugin's ``pytest_plugins``.
pytest_plugins = ["dw_testing.plugin.fixtures", "dw_testing.plugin.engine_fixtures"]
# The judge's hooks and fixture; this module imports it already, so it is registered as a
# module object (as a pytest_plugins name, pytest would warn it cannot rewrite its asserts).
JUDGING_PLUGIN = "dw_testing.plugin.judging"


# The self-test's engine variants are chosen by this variable and served by this plugin.
VARIANT_ENV = "DW_ENGINE_VARIANT"
VARIANT_PLUGIN = "dw_testing.selftest.variants"


# Emulators run in the test process (moto's ThreadedMotoServer) log one line per request at
# INFO, which werkzeug turns on for itself; a failure would sit under hundreds of them.
REQUEST_LOGGERS = ("werkzeug",)


def quiet_request_logs() -> None:
    """Request loggers to WARNING, unless the user has given them a level of their own."""
    for name in REQUEST_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if not config.option.dw_stores:
        return None
    try:
        rows = describe_known(config.rootpath)
    except CatalogueError as exc:
        raise pytest.UsageError(str(exc)) from None
    width = max(len(name) for name, _, _ in rows)
    print("known dw-testing stores (use --dw-store=NAME, a URI or package.module:obj):")
    for name, source, description in rows:
        print(f"  {name:<{width}}  {source}{' - ' + description if description else ''}")
    return 0


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(VARIANT_ENV, "").strip() and not config.pluginmanager.has_plugin(
            VARIANT_PLUGIN):
        raise pytest.UsageError(
            f"{VARIANT_ENV} is set, but nothing serves engine variants, so the reference "
            f"engine would run instead; add -p {VARIANT_PLUGIN} (or unset {VARIANT_ENV})")
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    quiet_request_logs()
    try:
        session = DwSession(config)
    except (CatalogueError, DeviationError, ValueError) as exc:
        raise pytest.UsageError(str(exc)) from None
    plugins = config.pluginmanager
    plugins.register(session, PLUGIN_NAME)
    # One plugin a phase of the run, each over the run's session.
    plugins.register(CollectionHooks(session), f"{PLUGIN_NAME}-collection")
    plugins.register(OutcomeHooks(session), f"{PLUGIN_NAME}-outcomes")
    plugins.register(HealHooks(session), f"{PLUGIN_NAME}-heal")
    plugins.register(SummaryHooks(session), f"{PLUGIN_NAME}-summary")
    if not plugins.has_plugin(JUDGING_PLUGIN):
        plugins.register(judging, JUDGING_PLUGIN)
    judging.register(config, session)
    if not session.is_worker and plugins.hasplugin("xdist"):
        plugins.register(XdistHooks(session), f"{PLUGIN_NAME}-xdist")
    if session.active:
        add_suite(config)
