"""Collection: the suite added to the run, each test that uses a store parametrized once per
store and marked with its capability, clauses and known deviations; a marker or deviation that
names nothing stops the run."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

from dw_testing.plugin import capabilities as caps_mod
from dw_testing.plugin.catalogue.builtin import aliases
from dw_testing.plugin.catalogue.resolution import known_names
from dw_testing.plugin.catalogue.setup_error import StoreSetupError
from dw_testing.plugin.clauses import MARKER as CLAUSE_MARKER
from dw_testing.plugin.clauses import ContractMissing, unknown_citations
from dw_testing.plugin.deviations import KnownDeviation, suite_test_keys, unmatched
from dw_testing.plugin.session import STORE_FIXTURE, DwSession
from dw_testing.plugin.startup import cross_process_problem
from dw_testing.plugin.suite import SUITE_PACKAGE, SuiteMissing, bind_suite_package, suite_dir
from dw_testing.report import facts as run_facts


def add_suite(config: pytest.Config) -> None:
    """Add the shipped suite's directory to the run, unless the user named paths explicitly,
    and bind the name ``conformance`` to it (a project's own package cannot shadow it)."""
    suite = _suite_dir()
    if config.option.dw_suite_only:
        config.args[:] = [str(suite)]
    elif config.args_source == pytest.Config.ArgsSource.ARGS:
        pass
    elif not any(_covers(arg, suite) for arg in config.args):
        config.args.append(str(suite))
    if SUITE_PACKAGE not in sys.modules:
        # The suite's helper modules (not only its test_*.py files) get rewritten asserts.
        pytest.register_assert_rewrite(SUITE_PACKAGE)
    bind_suite_package(extra_search=[str(config.rootpath)])


def _covers(arg: str, suite: Path) -> bool:
    path = Path(arg.split("::", 1)[0]).resolve()
    return suite == path or path in suite.parents


def _suite_dir() -> Path:
    try:
        return suite_dir()
    except SuiteMissing as exc:
        raise pytest.UsageError(str(exc)) from None


def _test_key(item: pytest.Item) -> str:
    """``<module>::<qualname>``: what a known deviation's ``test`` pattern is matched to."""
    module = getattr(getattr(item, "module", None), "__name__", "")
    qualname = getattr(item, "originalname", item.name)
    cls = getattr(item, "cls", None)
    return f"{module}::{cls.__qualname__ + '.' if cls else ''}{qualname}"


def _store_of(item: pytest.Item) -> str:
    callspec = getattr(item, "callspec", None)
    if callspec is not None and STORE_FIXTURE in callspec.params:
        return str(callspec.params[STORE_FIXTURE])
    return "memory"


class CollectionHooks:
    """The collection hooks of one run, over its :class:`DwSession`."""

    def __init__(self, session: DwSession) -> None:
        self.session = session

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if not self.session.active or STORE_FIXTURE not in metafunc.fixturenames:
            return
        names = [entry.name for entry in self.session.entries]
        metafunc.parametrize(STORE_FIXTURE, names, indirect=True, ids=names, scope="session")

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        active = self.session.active
        if active and self.session.user_deviations:
            self._check_user_deviations(items)
        self._check_clause_citations(items)
        for item in items:
            if STORE_FIXTURE not in getattr(item, "fixturenames", ()):
                continue
            caps_mod.check_names(item)
            store = _store_of(item)
            item.user_properties.append(("dw_store", store))
            item.user_properties.append(("dw_capability", caps_mod.report_capability(item)))
            item.user_properties.append(("dw_clauses", run_facts.clauses_of(item)))
            if not active:
                continue
            for deviation in self._deviations_for(item, store):
                item.add_marker(pytest.mark.xfail(
                    strict=not deviation.intermittent, reason=deviation.xfail_reason()))
            if isinstance(item, pytest.Function):
                from dw_testing.plugin import profiles

                profiles.apply(item.function)  # the plain function, even for methods

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Stop the run at once when a store's cross-process tests cannot open it."""
        if not self.session.active:
            return
        crossing = {_store_of(item) for item in session.items
                    if STORE_FIXTURE in getattr(item, "fixturenames", ())
                    and "cross_process" in caps_mod.required(item)}
        stores = self.session.stores
        for entry in self.session.entries:
            if entry.name not in crossing:
                continue
            try:
                declared = stores.capabilities(entry)
            except StoreSetupError:
                # Each test of this store fails with the factory's own words (the dw_spec
                # fixture), so the report records a failed run, not an empty one.
                continue
            if not declared.get("cross_process", False):
                continue
            problem = cross_process_problem(entry.name, stores.spec(entry))
            if problem is not None:
                pytest.exit(f"dw-testing: {problem}", returncode=pytest.ExitCode.USAGE_ERROR)

    def _check_clause_citations(self, items: list[pytest.Item]) -> None:
        """A ``dw_clause`` marker naming no clause of the contract is a typo: refuse the run."""
        cited = [(item.nodeid, [str(arg) for mark in item.iter_markers(CLAUSE_MARKER)
                                for arg in mark.args]) for item in items]
        cited = [(nodeid, ids) for nodeid, ids in cited if ids]
        if not cited:
            return
        try:
            problems = unknown_citations(cited)
        except ContractMissing as exc:
            raise pytest.UsageError(str(exc)) from None
        if problems:
            raise pytest.UsageError("\n".join(problems))

    def _check_user_deviations(self, items: list[pytest.Item]) -> None:
        """An entry naming no store, or no test of the suite, is a typo: refuse the run.

        A pattern outside the suite that matches nothing collected may only be outside
        this run's paths, so it is a warning."""
        stores = {*known_names(self.session.rootpath),
                  *(name for entry in self.session.entries for name in aliases(entry))}
        names = [*suite_test_keys(_suite_dir()), *(_test_key(i) for i in items),
                 *(i.nodeid for i in items)]
        problems = unmatched(self.session.user_deviations, stores=stores, test_names=names)
        errors = [p for p in problems if "store " in p or f"'{SUITE_PACKAGE}." in p]
        if errors:
            raise pytest.UsageError("\n".join(errors))
        for problem in problems:
            warnings.warn(pytest.PytestConfigWarning(problem), stacklevel=1)

    def _deviations_for(self, item: pytest.Item, store: str) -> list[KnownDeviation]:
        return deviations_for(self.session, item, store)


def deviations_for(session: DwSession, item: pytest.Item, store: str,
                   shown: frozenset[str] | None = None) -> list[KnownDeviation]:
    """The known deviations that mark ``item`` on ``store``. Without ``shown`` (the bugs the
    store's provider probed) the probed entries wait; with it, only they are returned."""
    key = _test_key(item)
    entry = session.entry_named(store)
    names = aliases(entry) if entry is not None else {store}
    return [d for d in session.deviations
            if (d.probe is not None) == (shown is not None)
            and any(d.applies_to(name, key, item.nodeid, shown) for name in names)]
