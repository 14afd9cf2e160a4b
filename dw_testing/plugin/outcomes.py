"""Each test's outcome: ``random`` reseeded per suite test, a history check out of budget
reported UNKNOWN, the seed shown beside a failure, and every outcome recorded for the report."""

from __future__ import annotations

import random
from collections.abc import Generator

import pytest

from dw_testing.plugin.emulator_hints import race_hint
from dw_testing.plugin.session import STORE_FIXTURE, DwSession
from dw_testing.report import facts as run_facts


class OutcomeHooks:
    """The per-test hooks of one run, over its :class:`DwSession`."""

    def __init__(self, session: DwSession) -> None:
        self.session = session

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Reseed ``random`` per suite test, so ``--dw-seed`` fixes the suite's own randomness."""
        if self.session.active and STORE_FIXTURE in getattr(item, "fixturenames", ()):
            random.seed(f"{self.session.seed}:{item.nodeid}")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        session = self.session
        history = None if call.excinfo is None else run_facts.history_of(call.excinfo.value)
        if history is not None:
            report.user_properties.append(("dw_history", history))
        if (report.failed and session.active and session.seed is not None
                and STORE_FIXTURE in getattr(item, "fixturenames", ())):
            # The failure may hang on the seed (Hypothesis examples, the suite's randomness).
            report.sections.append(("dw-testing seed", session.replay_hint()))
        if report.failed and not hasattr(report, "wasxfail"):
            self._explain_by_emulator(item, report)
        if call.excinfo is not None and _is_budget_exhausted(call.excinfo.value):
            report.user_properties.append(("dw_outcome", "UNKNOWN"))
            message = _first_line(str(call.excinfo.value))
            if session.config.option.dw_allow_unknown:
                report.outcome = "skipped"
                report.longrepr = (str(item.path), item.location[1] or 0, f"UNKNOWN: {message}")
        return report

    def _explain_by_emulator(self, item: pytest.Item, report: pytest.TestReport) -> None:
        spec = getattr(item, "funcargs", {}).get(STORE_FIXTURE)
        if spec is None:
            return
        hint = race_hint(getattr(spec, "emulator_bugs", ()), run_facts.clauses_of(item),
                         engine_level=item.get_closest_marker("dw_engine") is not None)
        if hint is not None:
            report.sections.append(("dw-testing emulator", hint))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.session.is_worker:
            return  # the controller records what the workers send it
        props = dict(report.user_properties)
        if "dw_store" not in props:
            return
        outcome, reason = _outcome(report, props)
        if outcome is None:
            return
        history = props.get("dw_history")
        self.session.report.record(
            report.nodeid, str(props["dw_store"]), str(props.get("dw_capability", "contract")),
            outcome, reason, clauses=_strings(props.get("dw_clauses")),
            message=run_facts.failure_message(report) if report.failed else "",
            history=history if isinstance(history, dict) else None)


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
