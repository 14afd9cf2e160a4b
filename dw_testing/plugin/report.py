"""The run's report hooks: its header line, the report file, the terminal summary, and
under xdist the workers' part of it, gathered on the controller. The report itself is
written by :mod:`dw_testing.report`; ``REPORT_SCHEMA`` stays importable from here, where
earlier docs named it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dw_testing.plugin.failure_blocks import exec_store_names, failure_blocks
from dw_testing.plugin.fault_tally import describe as describe_faults
from dw_testing.plugin.judging import JudgeBook
from dw_testing.plugin.session import DwSession
from dw_testing.report import facts as run_facts
from dw_testing.report.schema import REPORT_SCHEMA as REPORT_SCHEMA
from dw_testing.report.writer import matrix, write


class SummaryHooks:
    """The header, session-end and summary hooks of one run, over its :class:`DwSession`."""

    def __init__(self, session: DwSession) -> None:
        self.session = session

    def pytest_report_header(self) -> list[str]:
        session = self.session
        if not session.active:
            return []
        names = ", ".join(e.name for e in session.entries)
        return [f"dw-testing: stores {names}; profile {session.profile}; seed {session.seed} "
                f"(reproduce with --dw-seed={session.seed}); key prefix {session.prefix_root()}"]

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        run = self.session
        leftovers = run.leftovers()
        run.report.setup_errors.update(run.stores.setup_errors())
        try:
            run.stores.close()
        except Exception as exc:  # a provider that fails to stop must not cost the report
            run.stop_errors.append(f"a store provider failed to stop: {type(exc).__name__}")
        if run.is_worker:
            output = session.config.workeroutput  # type: ignore[attr-defined]
            output["dw_leftovers"] = leftovers
            output["dw_store_names"] = [entry.name for entry in run.entries]
            output["dw_stop_errors"] = run.stop_errors
            output["dw_setup_errors"] = run.report.setup_errors
            return
        for store, count in leftovers.items():
            run.report.add_leftovers(store, count)
        path = run.config.option.dw_report
        if path:
            built = run.report.build(
                stores=run.store_names(), profile=run.profile, seed=run.seed,
                versions=run_facts.versions(),
                replay=run_facts.replay_command(run.config.invocation_params.args, run.seed))
            built.update(JudgeBook.of(run.config).report_sections())
            if run.faults_met:
                built["faults_met"] = run.faults_met
            if run.exec_store_names():
                built["exec_stores"] = run.exec_store_names()
            write(built, Path(path))

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        option = session.config.option
        if option.dw_failures == "blocks" and option.tbstyle == "auto":
            option.tbstyle = "no"  # the blocks at the end tell each failure instead

    def _failure_blocks(self, terminalreporter: Any) -> None:
        session = self.session
        book = JudgeBook.of(session.config)
        failing = [{"nodeid": r.nodeid, "store": r.store, "outcome": r.outcome,
                    "reason": r.reason, "clauses": r.clauses}
                   for r in sorted(session.report.results,
                                   key=lambda r: book.told_first(r.nodeid))
                   if r.outcome in ("FAIL", "UNKNOWN")]
        if not failing:
            return
        terminalreporter.section("dw-testing: what to fix")
        exec_stores = {*exec_store_names(session.config.option.dw_store),
                       *session.exec_store_names()}
        for block in failure_blocks({"tests": failing}, exec_stores):
            terminalreporter.write_line(block.text())

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        session = self.session
        option = session.config.option
        results = session.report.results
        leftovers = {k: v for k, v in session.report.leftovers.items() if v}
        setup_errors = session.report.setup_errors
        if not session.active or (not results and not leftovers and not session.stop_errors
                                  and not setup_errors):
            return
        line = terminalreporter.write_line
        terminalreporter.section("dw-testing capabilities")
        for message in setup_errors.values():  # first: every test of that store failed on it
            line(f"ERROR: {message.splitlines()[0]}", red=True)
        if session.seed is not None:
            line(session.replay_hint())
        for store in session.store_names():
            cells = matrix(r for r in results if r.store == store)
            book = JudgeBook.of(session.config)
            summary = ", ".join(f"{name} {cell['outcome']}" + "".join(
                f" ({', '.join(clauses)})" for clauses in [book.clauses_failed(store, name)]
                if clauses) for name, cell in cells.items())
            line(f"{store}: {summary}")
        for store, met in sorted(session.faults_met.items()):
            line(f"{store} under --dw-network={session.network}: {describe_faults(met)}")
        for store, count in leftovers.items():
            what = "could not be checked" if count < 0 else f"left {count} dwc- key(s)"
            line(f"WARNING: store {store} {what} under dwc-{session.session_id}; its delete or "
                  "list may be broken, or a test wrote outside its prefix")
        for problem in dict.fromkeys(session.stop_errors):
            line(f"WARNING: {problem}")
        unknown = [r.nodeid for r in results if r.outcome == "UNKNOWN"]
        if unknown:
            hint = ("allowed by --dw-allow-unknown" if option.dw_allow_unknown
                    else "pass --dw-allow-unknown to accept")
            line(f"UNKNOWN ({hint}): {len(unknown)} history check(s) ran out of budget")
        if option.dw_report:
            line(f"report: {option.dw_report}")
        if option.dw_failures == "blocks":
            self._failure_blocks(terminalreporter)


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
        self.session.report.setup_errors.update(output.get("dw_setup_errors") or {})
        self.session.adopt_worker_names(list(output.get("dw_store_names") or []))
