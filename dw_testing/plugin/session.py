"""One pytest run's dw-testing state: the stores under test, collection, outcomes, report.

:class:`DwSession` is registered as a plugin per run (so in-process pytest runs never share
it); the xdist controller gets :class:`XdistHooks` beside it.
"""

from __future__ import annotations

import itertools
import random
import secrets
import sys
import warnings
from collections.abc import Generator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from dw_testing.kit.prefixed import PrefixedStore
from dw_testing.kit.spec import StoreSpec
from dw_testing.plugin import capabilities as caps_mod
from dw_testing.plugin import run_facts
from dw_testing.plugin.catalogue.builtin import aliases
from dw_testing.plugin.catalogue.entered import EnteredStores
from dw_testing.plugin.catalogue.entries import StoreEntry, named_by_spec, names_itself, unique_ids
from dw_testing.plugin.catalogue.pyproject import read_pyproject_tool
from dw_testing.plugin.catalogue.resolution import known_names, resolve
from dw_testing.plugin.clauses import MARKER as CLAUSE_MARKER
from dw_testing.plugin.clauses import ContractMissing, unknown_citations
from dw_testing.plugin.deviations import (
    KNOWN_DEVIATIONS,
    KnownDeviation,
    from_pyproject,
    suite_test_keys,
    unmatched,
)
from dw_testing.plugin.report import ReportBuilder, matrix, write
from dw_testing.plugin.startup import cross_process_problem
from dw_testing.plugin.suite import SUITE_PACKAGE, SuiteMissing, bind_suite_package, suite_dir
from reference_engine.stores.contract import close_store

PLUGIN_NAME = "dw-testing-session"
STORE_FIXTURE = "dw_spec"


def _test_key(item: pytest.Item) -> str:
    """``<module>::<qualname>``: what a known deviation's ``test`` pattern is matched to."""
    module = getattr(getattr(item, "module", None), "__name__", "")
    qualname = getattr(item, "originalname", item.name)
    cls = getattr(item, "cls", None)
    return f"{module}::{cls.__qualname__ + '.' if cls else ''}{qualname}"


def _suite_dir() -> Path:
    try:
        return suite_dir()
    except SuiteMissing as exc:
        raise pytest.UsageError(str(exc)) from None


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


class DwSession:
    """Per-run state, registered as a plugin so in-process pytest runs never share it."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        # The same value twice (addopts plus the command line) runs the store once.
        values: list[str] = list(dict.fromkeys(config.option.dw_store or []))
        self.active = bool(values)
        worker_input: dict[str, Any] = getattr(config, "workerinput", {})
        self.is_worker = hasattr(config, "workerinput")
        self.session_id: str = worker_input.get("dw_session") or secrets.token_hex(4)
        self.worker: str = worker_input.get("workerid", "main")
        self.rootpath = config.rootpath
        self.distributes = (not self.is_worker
                            and getattr(config.option, "dist", "no") not in (None, "no"))
        self.stores = EnteredStores()
        self.entries = self._named_entries([
            resolve(value, session=self.session_id, rootpath=self.rootpath) for value in values
        ])
        self._by_name: dict[str, StoreEntry] = {e.name: e for e in self.entries}
        self.profile: str = config.option.dw_profile or "ci"
        seed = config.option.dw_seed
        if seed is None and self.active:
            seed = worker_input.get("dw_seed", secrets.randbelow(2**32))
        self.seed: int | None = seed
        tool = read_pyproject_tool(self.rootpath)
        self.user_deviations = from_pyproject(tool.get("known-deviations"))
        self.deviations: list[KnownDeviation] = [*KNOWN_DEVIATIONS, *self.user_deviations]
        self._numbers = itertools.count(1)
        self.report = ReportBuilder()
        self.stop_errors: list[str] = []
        if self.active:
            from dw_testing.plugin import profiles

            profiles.activate(self.profile, self.seed)
        if self.is_worker:
            return
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(XdistHooks(self), f"{PLUGIN_NAME}-xdist")

    # -- stores --------------------------------------------------------------------------

    def _named_entries(self, resolved: list[StoreEntry]) -> list[StoreEntry]:
        """Unique test-id names; an import-path provider is entered now, so the name its
        ``StoreSpec(name=...)`` chose is the one in test ids, reports and deviations."""
        entered: list[StoreSpec | None] = []
        named: list[StoreEntry] = []
        for entry in resolved:
            spec = None
            # An xdist controller runs no test: it takes the names its workers report.
            if names_itself(entry) and not self.distributes:
                try:
                    spec = self.stores.enter(entry)
                except Exception:
                    # Left for the first test to enter again: its error lands on the tests,
                    # as for any other store that fails to open.
                    spec = None
                else:
                    entry = named_by_spec(entry, spec)
            entered.append(spec)
            named.append(entry)
        unique = unique_ids(named)
        for entry, spec in zip(unique, entered, strict=True):
            if spec is not None:
                self.stores.adopt(entry, spec)
        return unique

    def adopt_worker_names(self, names: list[str]) -> None:
        """Take the names the workers gave the stores (their providers named them)."""
        if len(names) != len(self.entries):
            return
        self.entries = [replace(entry, name=name) for entry, name in zip(self.entries, names,
                                                                          strict=True)]
        self._by_name = {e.name: e for e in self.entries}

    def entry(self, name: str | None) -> StoreEntry:
        if name is None:
            if "memory" not in self._by_name:
                self._by_name["memory"] = resolve(
                    "memory", session=self.session_id, rootpath=self.rootpath)
            return self._by_name["memory"]
        return self._by_name[name]

    def next_prefix(self) -> str:
        return f"{self.prefix_root()}/{next(self._numbers)}"

    def prefix_root(self) -> str:
        return f"dwc-{self.session_id}-{self.worker}"

    def clear_prefix(self, spec: StoreSpec, prefix: str) -> None:
        """Best effort: a store whose delete or list is broken leaves keys, counted at the end.

        A clear that raises is not a teardown error: the suite's tests judge delete and list,
        and the session-end leftover check reports what stayed behind.
        """
        handle = None
        try:
            handle = spec.factory()
            PrefixedStore(handle, prefix).clear()
        except Exception:
            return
        finally:
            if handle is not None:
                close_quietly(handle)

    def leftovers(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for name, spec in self.stores.entered().items():
            handle = None
            try:
                handle = spec.factory()
                counts[name] = len(handle.list(self.prefix_root()))
            except Exception:
                counts[name] = -1  # the check itself failed; reported as unknown
            finally:
                if handle is not None:
                    close_quietly(handle)
        return counts

    # -- collection ----------------------------------------------------------------------

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if not self.active or STORE_FIXTURE not in metafunc.fixturenames:
            return
        names = [entry.name for entry in self.entries]
        metafunc.parametrize(STORE_FIXTURE, names, indirect=True, ids=names, scope="session")

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        if self.active and self.user_deviations:
            self._check_user_deviations(items)
        self._check_clause_citations(items)
        for item in items:
            if STORE_FIXTURE not in getattr(item, "fixturenames", ()):
                continue
            caps_mod.check_names(item)
            store = self._store_of(item)
            item.user_properties.append(("dw_store", store))
            item.user_properties.append(("dw_capability", caps_mod.report_capability(item)))
            item.user_properties.append(("dw_clauses", run_facts.clauses_of(item)))
            if not self.active:
                continue
            for deviation in self._deviations_for(item, store):
                item.add_marker(pytest.mark.xfail(
                    strict=not deviation.intermittent, reason=deviation.xfail_reason()))
            if isinstance(item, pytest.Function):
                from dw_testing.plugin import profiles

                profiles.apply(item.function)  # the plain function, even for methods

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Stop the run at once when a store's cross-process tests cannot open it."""
        if not self.active:
            return
        crossing = {self._store_of(item) for item in session.items
                    if STORE_FIXTURE in getattr(item, "fixturenames", ())
                    and "cross_process" in caps_mod.required(item)}
        for entry in self.entries:
            if entry.name not in crossing:
                continue
            if not self.stores.capabilities(entry).get("cross_process", False):
                continue
            problem = cross_process_problem(entry.name, self.stores.spec(entry))
            if problem is not None:
                pytest.exit(f"dw-testing: {problem}", returncode=pytest.ExitCode.USAGE_ERROR)

    def _store_of(self, item: pytest.Item) -> str:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and STORE_FIXTURE in callspec.params:
            return str(callspec.params[STORE_FIXTURE])
        return "memory"

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
        stores = {*known_names(self.rootpath),
                  *(name for entry in self.entries for name in aliases(entry))}
        names = [*suite_test_keys(_suite_dir()), *(_test_key(i) for i in items),
                 *(i.nodeid for i in items)]
        problems = unmatched(self.user_deviations, stores=stores, test_names=names)
        errors = [p for p in problems if "store " in p or f"'{SUITE_PACKAGE}." in p]
        if errors:
            raise pytest.UsageError("\n".join(errors))
        for problem in problems:
            warnings.warn(pytest.PytestConfigWarning(problem), stacklevel=1)

    def _deviations_for(self, item: pytest.Item, store: str) -> list[KnownDeviation]:
        key = _test_key(item)
        names = aliases(self._by_name[store]) if store in self._by_name else {store}
        return [d for d in self.deviations
                if any(d.applies_to(name, key, item.nodeid) for name in names)]

    # -- running and reporting -----------------------------------------------------------

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Reseed ``random`` per suite test, so ``--dw-seed`` fixes the suite's own randomness."""
        if self.active and STORE_FIXTURE in getattr(item, "fixturenames", ()):
            random.seed(f"{self.seed}:{item.nodeid}")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        history = None if call.excinfo is None else run_facts.history_of(call.excinfo.value)
        if history is not None:
            report.user_properties.append(("dw_history", history))
        if (report.failed and self.active and self.seed is not None
                and STORE_FIXTURE in getattr(item, "fixturenames", ())):
            # The failure may hang on the seed (Hypothesis examples, the suite's randomness).
            report.sections.append(("dw-testing seed", self.replay_hint()))
        if call.excinfo is not None and _is_budget_exhausted(call.excinfo.value):
            report.user_properties.append(("dw_outcome", "UNKNOWN"))
            message = _first_line(str(call.excinfo.value))
            if self.config.option.dw_allow_unknown:
                report.outcome = "skipped"
                report.longrepr = (str(item.path), item.location[1] or 0, f"UNKNOWN: {message}")
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.is_worker:
            return  # the controller records what the workers send it
        props = dict(report.user_properties)
        if "dw_store" not in props:
            return
        outcome, reason = _outcome(report, props)
        if outcome is None:
            return
        history = props.get("dw_history")
        self.report.record(report.nodeid, str(props["dw_store"]),
                           str(props.get("dw_capability", "contract")), outcome, reason,
                           clauses=_strings(props.get("dw_clauses")),
                           message=run_facts.failure_message(report) if report.failed else "",
                           history=history if isinstance(history, dict) else None)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        leftovers = self.leftovers()
        try:
            self.stores.close()
        except Exception as exc:  # a provider that fails to stop must not cost the report
            self.stop_errors.append(f"a store provider failed to stop: {type(exc).__name__}")
        if self.is_worker:
            output = session.config.workeroutput  # type: ignore[attr-defined]
            output["dw_leftovers"] = leftovers
            output["dw_store_names"] = [entry.name for entry in self.entries]
            output["dw_stop_errors"] = self.stop_errors
            return
        for store, count in leftovers.items():
            self.report.add_leftovers(store, count)
        path = self.config.option.dw_report
        if path:
            built = self.report.build(
                stores=self.store_names(), profile=self.profile, seed=self.seed,
                versions=run_facts.versions(),
                replay=run_facts.replay_command(self.config.invocation_params.args, self.seed))
            write(built, Path(path))

    def store_names(self) -> list[str]:
        if self.entries:
            return [entry.name for entry in self.entries]
        return sorted({r.store for r in self.report.results})

    def replay_hint(self) -> str:
        """The run's seed and the options that replay it."""
        return (f"seed {self.seed}, profile {self.profile}: replay with "
                f"--dw-seed={self.seed} --dw-profile={self.profile}")

    def pytest_report_header(self) -> list[str]:
        if not self.active:
            return []
        names = ", ".join(e.name for e in self.entries)
        return [f"dw-testing: stores {names}; profile {self.profile}; seed {self.seed} "
                f"(reproduce with --dw-seed={self.seed}); key prefix {self.prefix_root()}"]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        results = self.report.results
        leftovers = {k: v for k, v in self.report.leftovers.items() if v}
        if not self.active or (not results and not leftovers and not self.stop_errors):
            return
        line = terminalreporter.write_line
        terminalreporter.section("dw-testing capabilities")
        if self.seed is not None:
            line(self.replay_hint())
        for store in self.store_names():
            cells = matrix(r for r in results if r.store == store)
            summary = ", ".join(f"{name} {cell['outcome']}" for name, cell in cells.items())
            line(f"{store}: {summary}")
        for store, count in leftovers.items():
            what = "could not be checked" if count < 0 else f"left {count} dwc- key(s)"
            line(f"WARNING: store {store} {what} under dwc-{self.session_id}; its delete or "
                  "list may be broken, or a test wrote outside its prefix")
        for problem in dict.fromkeys(self.stop_errors):
            line(f"WARNING: {problem}")
        unknown = [r.nodeid for r in results if r.outcome == "UNKNOWN"]
        if unknown:
            hint = ("allowed by --dw-allow-unknown" if self.config.option.dw_allow_unknown
                    else "pass --dw-allow-unknown to accept")
            line(f"UNKNOWN ({hint}): {len(unknown)} history check(s) ran out of budget")
        if self.config.option.dw_report:
            line(f"report: {self.config.option.dw_report}")


class XdistHooks:
    """Controller-side hooks; only registered when pytest-xdist is installed."""

    def __init__(self, session: DwSession) -> None:
        self.session = session

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["dw_session"] = self.session.session_id
        node.workerinput["dw_seed"] = self.session.seed

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", {}) or {}
        for store, count in (output.get("dw_leftovers") or {}).items():
            self.session.report.add_leftovers(store, count)
        self.session.stop_errors.extend(output.get("dw_stop_errors") or [])
        self.session.adopt_worker_names(list(output.get("dw_store_names") or []))


def _outcome(report: pytest.TestReport, props: dict[str, object]) -> tuple[str | None, str]:
    if props.get("dw_outcome") == "UNKNOWN":
        return "UNKNOWN", _reason(report)
    if report.failed:
        return "FAIL", _reason(report)
    if report.skipped:
        if hasattr(report, "wasxfail"):
            return "XFAIL", str(report.wasxfail)
        return "SKIP", _reason(report)
    if report.when == "call":
        return "PASS", ""
    return None, ""


def _reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):
        return str(longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return _first_line(str(crash.message))
    return _first_line(str(longrepr or ""))


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list | tuple) else []


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _is_budget_exhausted(exc: BaseException) -> bool:
    return any(cls.__name__ == "BudgetExhausted" for cls in type(exc).__mro__)


def close_quietly(handle: object) -> None:
    # Teardown closes are best effort: tests close handles themselves to reopen, and the
    # contract does not promise that a second close() is harmless.
    try:
        close_store(handle)
    except Exception:
        return




def dw_session(config: pytest.Config) -> DwSession:
    """The run's :class:`DwSession`."""
    plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
    assert isinstance(plugin, DwSession)
    return plugin
