"""The conformance report: JSON for machines, a Markdown matrix and an HTML page beside it.

Shape (``schema`` 1)::

    {"schema": 1, "store": "memory" | ["memory", "file"], "stores": [...],
     "profile": "ci", "seed": 123,
     "tests": [{"nodeid", "store", "capability", "outcome", "reason",
                "clauses"?, "message"?, "history"?}],
     "capabilities": {name: {"outcome", "failing": [nodeid, ...]}},
     "by_store": {store: {name: {"outcome", "failing": [...]}}},
     "leftovers": {store: count}, "setup_errors"?: {store: message},
     "versions"?: {package: version}, "replay"?: "python -m pytest ...",
     "kill_matrix"?: {"tests": [...], "mutants": [{"name", "level", "defect", "killed_by"}]},
     "diagnosis"?: {"lines": [...], "calls_judged": n, "judged": {nodeid: {...}}},
     "coverage"?: {store: {"cells": {"dimension / class / position": calls},
                           "not_asked": [...], "empty": [...]}}}

``store`` is the single store's name, or the list of names when several ran; ``stores`` is
always the list. ``capabilities`` folds every store together (worst wins); ``by_store``
keeps them apart. ``failing`` lists the FAIL and UNKNOWN tests. A test's ``clauses`` are
the contract clause ids it checks; a failing test keeps its whole ``message`` and, for a
history violation, ``history`` (the calls cut to a window around the violation).
``diagnosis`` is the judge's "What is wrong with this store". ``coverage`` is the input
coverage table: the judge's recorded calls of every test, counted per cell (value bytes
first, middle and last by byte class; values that are and are not UTF-8, JSON, text lines;
URL, path and shell characters at every position of a key; keys and segments at and past
their byte limits by character width; lists past two pages by count and past 1 MiB of keys
and values; lists beside other handles' writes and deletes; reads after the writer's
handle closed). ``not_asked`` are cells that need a capability the store does not declare;
``empty`` are cells asked and not reached. ``pytest -v`` prints the same table. The HTML
page is drawn from this same dict after it is validated against :data:`REPORT_SCHEMA`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dw_testing.report.schema import (
    HISTORY_WINDOW,
    MAX_MESSAGE_CHARS,
    OUTCOME_ORDER,
    SCHEMA_VERSION,
    worst,
)
from dw_testing.report.schema import REPORT_SCHEMA as REPORT_SCHEMA

FAILED = ("FAIL", "UNKNOWN")


@dataclass
class TestResult:
    nodeid: str
    store: str
    capability: str
    outcome: str
    reason: str = ""
    clauses: list[str] = field(default_factory=list)
    message: str = ""  # the whole failure message; kept for FAIL and UNKNOWN only
    history: dict[str, Any] | None = None  # a history violation's calls, for its timeline

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"nodeid": self.nodeid, "store": self.store,
                                 "capability": self.capability, "outcome": self.outcome,
                                 "reason": self.reason, "clauses": list(self.clauses)}
        if self.outcome in FAILED:
            if self.message:
                entry["message"] = clip_message(self.message)
            if self.history is not None:
                entry["history"] = self.history
        return entry


def clip_message(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """At most ``limit`` characters; a cut says how much was left out."""
    if len(text) <= limit:
        return text
    note = f"\n... ({len(text) - limit} more characters in the test log)"
    return text[: limit - len(note)] + note


class ReportBuilder:
    """Folds pytest's per-phase reports into one outcome per test, worst phase wins."""

    def __init__(self) -> None:
        self._results: dict[str, TestResult] = {}
        self.leftovers: dict[str, int] = {}
        self.setup_errors: dict[str, str] = {}

    def record(self, nodeid: str, store: str, capability: str, outcome: str,
               reason: str, *, clauses: Sequence[str] = (), message: str = "",
               history: Mapping[str, Any] | None = None) -> None:
        """One phase's outcome; the worst phase keeps its reason, message and history."""
        known = self._results.get(nodeid)
        kept = None if history is None else window_history(history)
        if known is None:
            self._results[nodeid] = TestResult(nodeid, store, capability, outcome, reason,
                                               list(clauses), message, kept)
        elif OUTCOME_ORDER.index(outcome) < OUTCOME_ORDER.index(known.outcome):
            known.outcome, known.reason = outcome, reason
            known.message, known.history = message, kept

    def add_leftovers(self, store: str, count: int) -> None:
        """Sum the workers' counts; -1 (the check itself failed) sticks."""
        known = self.leftovers.get(store, 0)
        self.leftovers[store] = -1 if -1 in (known, count) else known + count

    @property
    def results(self) -> list[TestResult]:
        return list(self._results.values())

    def has(self, outcome: str) -> bool:
        return any(r.outcome == outcome for r in self._results.values())

    def build(self, *, stores: list[str], profile: str, seed: int | None,
              versions: Mapping[str, str] | None = None,
              replay: str | None = None) -> dict[str, Any]:
        results = self.results
        by_store = {store: matrix(r for r in results if r.store == store) for store in stores}
        built: dict[str, Any] = {
            "schema": SCHEMA_VERSION,
            "store": stores[0] if len(stores) == 1 else list(stores),
            "stores": list(stores),
            "profile": profile,
            "seed": seed,
            "tests": [r.to_json() for r in results],
            "capabilities": matrix(results),
            "by_store": by_store,
            "leftovers": dict(self.leftovers),
        }
        if self.setup_errors:
            built["setup_errors"] = dict(self.setup_errors)
        if versions is not None:
            built["versions"] = dict(versions)
        if replay is not None:
            built["replay"] = replay
        return built


def window_history(history: Mapping[str, Any], limit: int = HISTORY_WINDOW) -> dict[str, Any]:
    """A ``HistoryViolation.to_json()`` dict cut to at most ``limit`` calls: the marked
    calls and those nearest them in time, as the timeline draws them; ``left_out`` counts
    the rest, so a 10,000-call history keeps the report small."""
    ops = list(history.get("ops") or [])
    if len(ops) <= limit:
        return dict(history)
    from dw_testing.history.events import Operation
    from dw_testing.history.timeline import cut_window

    marked = [int(i) for i in history.get("marked") or []]
    cut = cut_window([Operation.from_json(op) for op in ops], marked, limit)
    position = {index: shown for shown, index in enumerate(cut.shown)}
    return {**history, "ops": [ops[i] for i in cut.shown],
            "marked": [position[i] for i in marked if i in position],
            "left_out": int(history.get("left_out") or 0) + len(ops) - len(cut.shown)}


def matrix(results: Iterable[TestResult]) -> dict[str, dict[str, Any]]:
    grouped: dict[str, list[TestResult]] = {}
    for result in results:
        grouped.setdefault(result.capability, []).append(result)
    return {
        name: {
            "outcome": worst(r.outcome for r in members),
            "failing": [r.nodeid for r in members if r.outcome in ("FAIL", "UNKNOWN")],
        }
        for name, members in sorted(grouped.items())
    }


def matrix_lines(report: Mapping[str, Any]) -> list[str]:
    """The title, the capability x store matrix and each store's counts, in Markdown."""
    stores: list[str] = list(report["stores"])
    by_store: Mapping[str, Mapping[str, Any]] = report.get("by_store", {})
    capabilities = sorted(report["capabilities"])
    lines = [
        "# Conformance report",
        "",
        f"Profile `{report['profile']}`, seed `{report['seed']}`. "
        "Outcome order, worst first: " + " > ".join(OUTCOME_ORDER) + ".",
        "",
        "| capability | " + " | ".join(stores) + " |",
        "|---|" + "---|" * len(stores),
    ]
    for name in capabilities:
        cells = [by_store.get(store, {}).get(name, {}).get("outcome", "-") for store in stores]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    for store in stores:
        counts = [f"{sum(1 for t in report['tests'] if t['store'] == store and t['outcome'] == o)}"
                  f" {o}" for o in OUTCOME_ORDER]
        lines.append(f"- {store}: " + ", ".join(c for c in counts if not c.startswith("0 ")))
    return lines


def markdown(report: Mapping[str, Any]) -> str:
    """The capability x store matrix, then the failing tests."""
    lines = matrix_lines(report)
    failing = [t for t in report["tests"] if t["outcome"] in ("FAIL", "UNKNOWN")]
    if failing:
        lines += ["", "## Failing tests", ""]
        lines += [f"- {t['outcome']} `{t['nodeid']}`: {t['reason']}" for t in failing]
    leftovers = {k: v for k, v in report.get("leftovers", {}).items() if v}
    if leftovers:
        lines += ["", "## Leftover keys", ""]
        lines += [f"- {store}: {count} `dwc-` key(s) left behind" for store, count in
                  leftovers.items()]
    kill = report.get("kill_matrix")
    if kill:
        lines += ["", "## Kill matrix", ""]
        lines += [f"- `{m['name']}` ({m['level']}): " + (
            f"killed by {len(m['killed_by'])} test(s), first `{m['killed_by'][0]}`"
            if m["killed_by"] else "**SURVIVED**") for m in kill["mutants"]]
    return "\n".join(lines) + "\n"


def markdown_path(path: Path) -> Path:
    """``out/report.json`` -> ``out/report.md`` (``x.md`` -> ``x.md.md``, never itself)."""
    return path.with_name(path.name + ".md") if path.suffix == ".md" else path.with_suffix(".md")


def write(report: Mapping[str, Any], path: Path) -> Path:
    """Write ``path`` (JSON), the Markdown matrix and the HTML page beside it; returns the
    Markdown path. The page is drawn first, so a report that breaks its schema writes
    nothing at all."""
    from dw_testing.report.html_page import html_path, render_html

    page = render_html(report)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    md_path = markdown_path(path)
    md_path.write_text(markdown(report), encoding="utf-8")
    html_path(path).write_text(page, encoding="utf-8")
    return md_path
