"""The judge in the pytest run: a :class:`~dw_testing.judge.Trial` per store test, its verdict
when the test's call ends, and the run's diagnosis in the terminal summary and the report.

A test whose own assertions pass fails when its history is wrong; a test that failed on its
own gets the judge's blame as a note, so the failure names its cause. ``--dw-judge=off``
turns the judge off (the self-test's "judge" column compares the two).
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from dw_testing.judge import coverage
from dw_testing.judge.blame import Blame, clause_id
from dw_testing.judge.coverage_table import HEADING as COVERAGE_HEADING
from dw_testing.judge.coverage_table import InputCoverage, row_of
from dw_testing.judge.diagnosis import HEADING, TestOutcome, diagnosis
from dw_testing.judge.lasting import LastingRecords
from dw_testing.judge.trial import JudgeFailure, Judgement, Trial
from dw_testing.kit.spec import StoreSpec
from dw_testing.plugin.catalogue.builtin import aliases
from dw_testing.plugin.session import STORE_FIXTURE, DwSession, dw_session
from dw_testing.report import facts as run_facts
from reference_engine.stores.registry import open_store

TRIAL = pytest.StashKey[Trial]()
JUDGEMENT = pytest.StashKey[Judgement]()
PROPERTY = "dw_judgement"
COVERAGE_PROPERTY = "dw_coverage"
# Fixtures through which calls reach the store's records without passing a judged handle.
UNRECORDED_WRITERS = ("dw_child_target",)
CREATE_CLAUSES = frozenset({"C-CREATE-1", "C-CREATE-2", "C-CREATE-3"})


def judging(config: pytest.Config) -> bool:
    return bool(dw_session(config).active) and config.option.dw_judge == "on"


def _excused(session: DwSession, spec: StoreSpec) -> frozenset[str]:
    """A store with a known upstream create bug is not blamed for it by the judge either:
    an entry that applies (its probe, if any, showed the bug on this store's emulator)."""
    entry = session.entry_named(spec.name)
    names = aliases(entry) if entry is not None else {spec.name}
    creates = any(d.store in names and "create" in d.reason.lower() and d.version_matches()
                  and (d.probe is None or d.probe in spec.emulator_bugs)
                  for d in session.deviations)
    return CREATE_CLAUSES if creates else frozenset()


@pytest.fixture(autouse=True)
def _dw_judge(request: pytest.FixtureRequest) -> Iterator[None]:
    """Record every handle the test opens on its store; judged when the call ends."""
    if STORE_FIXTURE not in request.fixturenames or not judging(request.config):
        yield
        return
    session = dw_session(request.config)
    spec: StoreSpec = request.getfixturevalue(STORE_FIXTURE)
    prefix: str = request.getfixturevalue("_dw_prefix")
    caps: dict[str, bool] = request.getfixturevalue("dw_caps")
    book = JudgeBook.of(request.config)
    book.lasting.start(spec.name, spec.factory)
    writers = [name for name in UNRECORDED_WRITERS if name in request.fixturenames]
    trial = Trial(spec.name, prefix + "/", caps, excused=_excused(session, spec),
                  open_reason=(f"not judged: {', '.join(writers)} writes from other processes"
                               if writers else ""))
    slot = session.stores.trials
    slot.current = trial
    request.node.stash[TRIAL] = trial
    try:
        yield
    finally:
        slot.current = None
        trial.log.seal()


# The clauses of the store-level test running now, for its failed comparisons.
_RUNNING_CLAUSES: list[str] = []


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: object,
                              right: object) -> list[str] | None:
    """A store-level test's failed comparison says what came back, what was expected and
    which clause, even where the test's ``assert`` has no message of its own."""
    if not _RUNNING_CLAUSES or op != "==":
        return None
    clauses = ", ".join(_RUNNING_CLAUSES)
    return [f"{_short(left)} == {_short(right)}",
            f"the store answered {_short(left, 200)}; expected {_short(right, 200)} "
            f"(clause {clauses}, docs/contract.md)"]


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    trial = item.stash.get(TRIAL, None)
    store_level = item.get_closest_marker("dw_store_contract") is not None
    _RUNNING_CLAUSES[:] = run_facts.clauses_of(item) if store_level and trial else []
    try:
        outcome = yield
    except BaseException as failure:
        _RUNNING_CLAUSES.clear()
        if trial is not None and isinstance(failure, Exception):
            judgement = _verdict(item, trial)
            if judgement.blame is not None:
                failure.add_note(judgement.message())
        raise
    _RUNNING_CLAUSES.clear()
    if trial is not None:
        judgement = _verdict(item, trial)
        if judgement.wrong:
            raise JudgeFailure(judgement.message() + "\n(the test's own assertions passed; "
                               "the judge checked every call its handles made)")
    return outcome


def _verdict(item: pytest.Item, trial: Trial) -> Judgement:
    session = dw_session(item.config)
    proxy = session.stores.routing.proxy(trial.store)
    judgement = trial.verdict(proxy.events if proxy is not None else ())
    item.stash[JUDGEMENT] = judgement
    return judgement


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    judgement = item.stash.get(JUDGEMENT, None)
    if call.when == "call" and judgement is not None:
        crash = getattr(report.longrepr, "reprcrash", None)
        failed_alone = isinstance(call.excinfo.value if call.excinfo else None, JudgeFailure)
        if report.failed and judgement.blame is not None and crash is not None \
                and not failed_alone:
            # The short summary's line names the cause before the symptom it led to.
            crash.message = (f"[{clause_id(judgement.blame.clause)} judged: "
                             f"{judgement.blame.call}] {crash.message}")
        row = judgement.to_json()
        row["judged_only"] = failed_alone
        report.user_properties.append((PROPERTY, row))
        trial = item.stash.get(TRIAL, None)
        if trial is not None:
            report.user_properties.append(
                (COVERAGE_PROPERTY, row_of(coverage.count(trial.log), trial.capabilities)))
    return report


class JudgeBook:
    """The run's judgements (gathered from workers) and its lasting records."""

    def __init__(self, session: DwSession) -> None:
        self.session = session
        self.outcomes: dict[str, TestOutcome] = {}
        self.lasting = LastingRecords(f"{session.prefix_root()}-lasting")
        self.lasting_problems: dict[str, list[str]] = {}
        self.calls = 0
        self.coverage = InputCoverage()

    @classmethod
    def of(cls, config: pytest.Config) -> JudgeBook:
        plugin = config.pluginmanager.get_plugin(BOOK_PLUGIN)
        assert isinstance(plugin, JudgeBook)
        return plugin

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.session.is_worker:
            return
        props = dict(report.user_properties)
        store = props.get("dw_store")
        if store is None:
            return
        row = props.get(PROPERTY)
        known = self.outcomes.get(report.nodeid)
        blame = known.blame if known is not None else None
        judged_only = known.judged_only if known is not None else False
        cells = props.get(COVERAGE_PROPERTY)
        if isinstance(cells, dict):
            self.coverage.add(str(store), cells)
        if isinstance(row, dict):
            self.calls += int(row.get("calls", 0))
            if row.get("blame") and row.get("verdict") in ("wrong", "excused"):
                blame = Blame.from_json(row["blame"])
            judged_only = judged_only or bool(row.get("judged_only"))
        outcome = "FAIL" if report.failed else (known.outcome if known else "PASS")
        reason = ""
        if report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            text = str(crash.message) if crash is not None else str(report.longrepr or "")
            reason = (text.strip().splitlines() or [""])[0][:200]
        self.outcomes[report.nodeid] = TestOutcome(
            report.nodeid, str(store), outcome,
            engine=props.get("dw_capability") == "engine", blame=blame,
            reason=reason or (known.reason if known else ""), judged_only=judged_only,
            capability=str(props.get("dw_capability", "contract")))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        run = self.session
        for name, spec in sorted(run.stores.entered().items()):
            caps = run.stores.capabilities(run.entry(name)) if name in self.lasting.keepers else {}
            uri_open = (functools.partial(open_store, spec.uri)
                        if spec.uri and caps.get("cross_process", False) else None)
            problems = self.lasting.finish(name, spec.factory, uri_open,
                                           shared=caps.get("cross_handle", True))
            if problems:
                self.lasting_problems[name] = problems
        if run.is_worker:
            output = session.config.workeroutput  # type: ignore[attr-defined]
            output["dw_lasting"] = self.lasting_problems
            return
        if self.lasting_problems and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", {}) or {}
        for store, problems in (output.get("dw_lasting") or {}).items():
            self.lasting_problems.setdefault(store, []).extend(problems)

    def clauses_failed(self, store: str, capability: str) -> list[str]:
        """The clauses the judge blamed on the failed tests of one capability row."""
        return sorted({clause_id(o.blame.clause) for o in self.outcomes.values()
                       if o.store == store and o.capability == capability
                       and o.outcome == "FAIL" and o.blame is not None})

    def lines(self) -> list[str]:
        return diagnosis(self.outcomes.values(), self.lasting_problems)

    def report_sections(self) -> dict[str, Any]:
        """The report's ``diagnosis``: its lines, and the judge's count of calls."""
        judged = {nodeid: {"clause": clause_id(o.blame.clause), "judged_only": o.judged_only}
                  for nodeid, o in sorted(self.outcomes.items())
                  if o.outcome == "FAIL" and o.blame is not None}
        return {"diagnosis": {"lines": self.lines(), "calls_judged": self.calls,
                              "judged": judged},
                "coverage": self.coverage.to_json()}

    def told_first(self, nodeid: str) -> tuple[bool, bool, str]:
        """The order failures are told in: store-level tests whose history the judge
        explained first, then the other store-level ones, engine-level tests last (what
        they show is explained by the store's causes); by node id, whatever ``-n``."""
        known = self.outcomes.get(nodeid)
        if known is None:
            return (False, True, nodeid)
        return (known.engine, known.blame is None, nodeid)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, None, None]:
        """The diagnosis first, before pytest's own failures section, and the failures in
        :meth:`told_first` order: the first lines after the progress name the cause."""
        failed = terminalreporter.stats.get("failed")
        if failed:
            failed.sort(key=lambda report: self.told_first(str(report.nodeid)))
        lines = self.lines()
        if lines:
            terminalreporter.section(HEADING, red=True)
            for line in lines[1:]:
                terminalreporter.write_line(line)
        result = yield
        if terminalreporter.config.option.verbose > 0 and self.coverage.counts:
            terminalreporter.section(f"dw-testing {COVERAGE_HEADING} (calls per cell)")
            for line in self.coverage.lines():
                terminalreporter.write_line(line)
        return result


BOOK_PLUGIN = "dw-testing-judge-book"


def register(config: pytest.Config, session: DwSession) -> None:
    """Register the run's :class:`JudgeBook` (from ``pytest_configure``)."""
    config.pluginmanager.register(JudgeBook(session), BOOK_PLUGIN)
