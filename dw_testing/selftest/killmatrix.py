"""The kill matrix (docs/unkillable.md): the store suite against every store mutant, in one run.

:func:`run_kill_matrix` runs ``pytest --dw-suite-only -m dw_store_contract`` in one
subprocess with one ``--dw-store`` per mutant, reads the ``--dw-report`` JSON and the
JUnit XML (for durations), and returns a :class:`KillMatrix`. A mutant is *killed* when
at least one test FAILs on it. :func:`main` prints the matrix for
``dw conformance --self-test`` and returns its exit code.

Engine variants (level ``"engine"``) run through the engine-level suite instead, one
pytest subprocess per variant (:func:`dw_testing.selftest.engine_matrix.run_engine_kill_matrix`);
:func:`main` prints that matrix after this one, and fails when a variant survives.
"""

from __future__ import annotations

import ast
import importlib.resources
import importlib.util
import json
import re
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import median
from typing import Any

from dw_testing.plugin.failure_blocks import failure_block
from dw_testing.plugin.suite import SuiteMissing, suite_dir
from dw_testing.selftest.mutants import GENERATED_MUTANTS, STORE_MUTANTS, MutantInfo
from dw_testing.selftest.runner import SuiteRun

KILLED = "FAIL"
SUITE_PACKAGE = "conformance"
STORE_LEVEL_MARK = "dw_store_contract"
DEFAULT_WORKERS = "2"
WIDE_OUTPUT = 200
UNKILLABLE_DOC = Path("docs") / "unkillable.md"
# The same page, shipped as package data (a link to docs/unkillable.md in the source tree).
UNKILLABLE_RESOURCE = "unkillable.md"
_TEST_ID_IN_DOC = re.compile(r"`([^`\s]+::[^`\s]+|test_[^`\s]+)`")
ENTRIES_HEADING = "entries"


class KillMatrixError(RuntimeError):
    """The self-test run could not produce a report; the message has pytest's output tail."""


@dataclass(frozen=True)
class KillMatrix:
    """Outcomes of every store-level test on every mutant, plus how long the run took.

    ``tests`` are suite test ids (the node id without the store part), in suite order;
    ``outcomes[(mutant, test)]`` is the report outcome; ``durations[(mutant, test)]``
    is seconds (setup, call and teardown) when JUnit XML had the test.
    """

    mutants: list[str]
    tests: list[str]
    outcomes: dict[tuple[str, str], str]
    durations: dict[tuple[str, str], float] = field(default_factory=dict)
    wall_seconds: float = 0.0
    command: list[str] = field(default_factory=list)
    # pytest's exit status: 1 when tests failed; 2 and over mean the run itself went wrong.
    exit_code: int | None = None
    # (mutant, test) -> (the clause the judge blamed, whether only the judge failed the test).
    judged: dict[tuple[str, str], tuple[str, bool]] = field(default_factory=dict)
    # mutant -> the clause the first line of its red run names: the diagnosis's first
    # cause, else the clause of the first failure told (store-level tests first).
    leading: dict[str, str] = field(default_factory=dict)

    def judge_column(self, mutant: str) -> str:
        """``needed`` when only the judge killed ``mutant`` (the suite's own assertions
        missed it), ``helped`` when it failed some of the killing tests alone, else ``""``."""
        kills = self.killed_by(mutant)
        alone = [t for t in kills if self.judged.get((mutant, t), ("", False))[1]]
        if kills and len(alone) == len(kills):
            return "needed"
        return "helped" if alone else ""

    def blamed_clause(self, mutant: str) -> str:
        """The clause the first line of the run names for ``mutant``; without a report's
        diagnosis, the clause the judge blamed on the first killing test it explained."""
        if mutant in self.leading:
            return self.leading[mutant]
        for test in self.killed_by(mutant):
            clause = self.judged.get((mutant, test), ("", False))[0]
            if clause:
                return clause
        return ""

    def killed_by(self, mutant: str) -> list[str]:
        """The tests that failed on ``mutant``, in suite order."""
        return [t for t in self.tests if self.outcomes.get((mutant, t)) == KILLED]

    def first_kill(self, mutant: str) -> str | None:
        kills = self.killed_by(mutant)
        return kills[0] if kills else None

    def kills_of(self, test: str) -> list[str]:
        """The mutants ``test`` failed on."""
        return [m for m in self.mutants if self.outcomes.get((m, test)) == KILLED]

    def survivors(self) -> list[str]:
        """Mutants no test killed."""
        return [m for m in self.mutants if not self.killed_by(m)]

    def tests_killing_nothing(self) -> list[str]:
        return [t for t in self.tests if not self.kills_of(t)]

    def time_to_kill(self, mutant: str) -> float | None:
        """Seconds of the quickest test that kills ``mutant``: what a targeted run costs."""
        times = [self.durations[(mutant, t)] for t in self.killed_by(mutant)
                 if (mutant, t) in self.durations]
        return min(times) if times else None

    def time_to_first_kill(self, mutant: str) -> float | None:
        """Seconds of the suite, in suite order, up to and including the first kill: what
        ``pytest -x`` against ``mutant`` costs (skipped tests included)."""
        first = self.first_kill(mutant)
        if first is None:
            return None
        spent = 0.0
        for test in self.tests[: self.tests.index(first) + 1]:
            spent += self.durations.get((mutant, test), 0.0)
        return spent

    def median_time_to_kill(self) -> float | None:
        """The median over mutants of :meth:`time_to_first_kill`."""
        times = [t for m in self.mutants if (t := self.time_to_first_kill(m)) is not None]
        return median(times) if times else None


# -- running --------------------------------------------------------------------------------


def store_mutants(names: Iterable[str] | None = None) -> list[MutantInfo]:
    """The store-level mutants to run (all of them by default, the generated families
    after the hand-written ones), in registry order."""
    known = {**STORE_MUTANTS, **GENERATED_MUTANTS}
    chosen = list(known) if names is None else list(names)
    unknown = sorted(set(chosen) - set(known))
    if unknown:
        raise KeyError(f"unknown mutant(s) {', '.join(unknown)}; known: "
                       f"{', '.join(known)}")
    return [known[name] for name in chosen if known[name].level == "store"]


def suite_run(mutants: Sequence[MutantInfo], workdir: Path, *, profile: str = "quick",
              workers: str | None = DEFAULT_WORKERS, extra: Sequence[str] = ()) -> SuiteRun:
    """One pytest run: the store-level suite against every mutant, report and JUnit XML."""
    return targets_run([m.target for m in mutants], workdir, profile=profile, workers=workers,
                       extra=extra)


def targets_run(targets: Sequence[str], workdir: Path, *, profile: str = "quick",
                workers: str | None = DEFAULT_WORKERS, extra: Sequence[str] = ()) -> SuiteRun:
    """One pytest run: the store-level suite against every ``--dw-store`` target."""
    return SuiteRun(rootdir=workdir, stores=list(targets), report=workdir / "report.json",
                    profile=profile, marker=STORE_LEVEL_MARK, workers=workers,
                    junit=workdir / "junit.xml", traceback="no", quiet_header=True,
                    scratch=workdir, extra=extra)


def run_kill_matrix(
    names: Iterable[str] | None = None, *, profile: str = "quick",
    workers: str | None = DEFAULT_WORKERS, extra: Sequence[str] = (),
    timeout: float = 900.0,
) -> KillMatrix:
    """Run the suite against the mutants in one pytest subprocess and build the matrix."""
    mutants = store_mutants(names)
    return run_matrix({m.name: m.target for m in mutants}, profile=profile, workers=workers,
                      extra=extra, timeout=timeout)


def run_matrix(
    targets: Mapping[str, str], *, profile: str = "quick",
    workers: str | None = DEFAULT_WORKERS, extra: Sequence[str] = (),
    timeout: float = 900.0,
) -> KillMatrix:
    """Run the store-level suite against ``{name: --dw-store target}`` in one subprocess.

    Any stores, not only the registered mutants: the exec kill matrix runs mutants served
    through ``exec:`` children (:mod:`dw_testing.selftest.mutants.over_exec`).
    """
    with tempfile.TemporaryDirectory(prefix="dw-killmatrix-") as temp:
        workdir = Path(temp)
        run = targets_run(list(targets.values()), workdir, profile=profile, workers=workers,
                          extra=extra)
        command = run.command()
        started = time.perf_counter()
        finished = subprocess.run(command, cwd=workdir, capture_output=True, text=True,
                                  timeout=timeout, check=False, env=run.environment())
        wall = time.perf_counter() - started
        report_path = workdir / "report.json"
        if not report_path.is_file():
            tail = "\n".join((finished.stdout + finished.stderr).strip().splitlines()[-25:])
            raise KillMatrixError(
                f"the self-test run wrote no report (pytest exit {finished.returncode}):\n{tail}"
            )
        report = json.loads(report_path.read_text(encoding="utf-8"))
        junit = workdir / "junit.xml"
        durations = junit_durations(junit) if junit.is_file() else {}
    built = build_matrix(report, list(targets), durations=durations,
                         wall_seconds=wall, rootdir=workdir, command=command)
    return replace(built, exit_code=finished.returncode)


# -- parsing --------------------------------------------------------------------------------


def split_nodeid(nodeid: str, store: str) -> str:
    """The suite test id: ``nodeid`` with the store's part of its parameter id removed."""
    base, bracket, params = nodeid.partition("[")
    if not bracket:
        return nodeid
    inner = params[:-1] if params.endswith("]") else params
    parts = inner.split("-")
    store_parts = store.split("-")
    for start in range(len(parts) - len(store_parts) + 1):
        if parts[start:start + len(store_parts)] == store_parts:
            rest = parts[:start] + parts[start + len(store_parts):]
            return f"{base}[{'-'.join(rest)}]" if rest else base
    return nodeid


def junit_durations(path: Path) -> dict[str, float]:
    """``{"module.path::name[params]": seconds}`` from a JUnit XML file."""
    tree = ElementTree.parse(path)
    found: dict[str, float] = {}
    for case in tree.iter("testcase"):
        module = case.get("classname", "").rpartition(".")[2]
        found[f"{module}::{case.get('name', '')}"] = float(case.get("time", "0") or 0)
    return found


def _junit_key(nodeid: str) -> str:
    path, _, name = nodeid.partition("::")
    return f"{Path(path).stem}::{name}"


def _suite_dir() -> Path | None:
    # Located beside the installed dw_testing, never imported, never found by name.
    try:
        return suite_dir()
    except SuiteMissing:
        return None


def suite_test_id(test: str, rootdir: Path | None) -> str:
    """``conformance/<file>::<name>`` for a suite test, whatever pytest's rootdir was."""
    path, sep, name = test.partition("::")
    suite = _suite_dir()
    if suite is None:
        return test
    for base in (rootdir, suite):
        if base is None:
            continue
        candidate = (base / path).resolve()
        if candidate.is_file() and suite in candidate.parents:
            return f"{SUITE_PACKAGE}/{candidate.relative_to(suite).as_posix()}{sep}{name}"
    return test


def _suite_order(tests: Iterable[str]) -> list[str]:
    """Sort suite test ids by file, then by the line of the test's ``def`` (collection order)."""
    suite = _suite_dir()
    lines: dict[str, dict[str, int]] = {}

    def line_of(test: str) -> int:
        path, _, name = test.partition("::")
        if path not in lines:
            relative = path.removeprefix(f"{SUITE_PACKAGE}/")
            lines[path] = {} if suite is None else _def_lines(suite / relative)
        return lines[path].get(name.partition("[")[0], 10**9)

    return sorted(tests, key=lambda t: (t.partition("::")[0], line_of(t), t))


def _def_lines(path: Path) -> dict[str, int]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return {}
    return {node.name: node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def build_matrix(
    report: Mapping[str, Any], mutants: Sequence[str], *,
    durations: Mapping[str, float] | None = None, wall_seconds: float = 0.0,
    rootdir: Path | None = None, command: Sequence[str] = (),
) -> KillMatrix:
    """Fold a ``--dw-report`` JSON into the mutants x tests matrix."""
    outcomes: dict[tuple[str, str], str] = {}
    times: dict[tuple[str, str], float] = {}
    judged: dict[tuple[str, str], tuple[str, bool]] = {}
    verdicts = (report.get("diagnosis") or {}).get("judged") or {}
    junit = durations or {}
    names = _store_names(report, mutants)
    for entry in report.get("tests", []):
        if str(entry["store"]) not in names:
            continue
        store = names[str(entry["store"])]
        test = suite_test_id(split_nodeid(str(entry["nodeid"]), str(entry["store"])), rootdir)
        outcomes[(store, test)] = str(entry["outcome"])
        verdict = verdicts.get(str(entry["nodeid"]))
        if verdict:
            judged[(store, test)] = (str(verdict["clause"]), bool(verdict["judged_only"]))
        seconds = junit.get(_junit_key(str(entry["nodeid"])))
        if seconds is not None:
            times[(store, test)] = seconds
    tests = _suite_order({test for _, test in outcomes})
    leading = {names[store]: clause for store in names
               if (clause := first_line_clause(report, store))}
    return KillMatrix(list(mutants), tests, outcomes, times, wall_seconds, list(command),
                      judged=judged, leading=leading)


_CAUSE_LINE = re.compile(r"^  (C-[A-Z]+-\d+)\b")


def first_line_clause(report: Mapping[str, Any], store: str) -> str:
    """The clause a red run on ``store`` names first: the first cause of its diagnosis
    ("What is wrong with this store"), or, when the judge explained none of its failures,
    the clause of the first failure block, store-level tests before engine-level ones."""
    lines = list((report.get("diagnosis") or {}).get("lines") or [])
    if f"store {store}:" in lines:
        start = lines.index(f"store {store}:") + 1
        match = _CAUSE_LINE.match(lines[start]) if start < len(lines) else None
        if match:
            return match.group(1)
    failing = sorted((t for t in report.get("tests", [])
                      if t.get("store") == store and t.get("outcome") == KILLED),
                     key=lambda t: (t.get("capability") == "engine", str(t.get("nodeid"))))
    if not failing:
        return ""
    block = failure_block(failing[0], handshake=False)
    return block.clause.id if block.clause is not None else ""


def _store_names(report: Mapping[str, Any], mutants: Sequence[str]) -> dict[str, str]:
    """Report store name -> mutant name. The report lists stores in ``--dw-store`` order,
    which is the mutants' order, so a catalogue that renames them (dashes, suffixes) is
    still understood."""
    reported = [str(name) for name in report.get("stores", [])]
    if len(reported) == len(mutants):
        return dict(zip(reported, mutants, strict=True))
    return {name: name for name in mutants}


def unkillable_tests(path: Path | None = None) -> dict[str, str]:
    """``{test id: reason}`` from the ``## Entries`` section of ``docs/unkillable.md``.

    An entry is a list item whose first backticked text is a test id (``path::name`` or a
    bare ``test_name``); the rest of the line is the reason.
    """
    text = path.read_text(encoding="utf-8") if path is not None else _ledger_text()
    listed: dict[str, str] = {}
    in_entries = False
    for line in text.splitlines():
        if line.startswith("## "):
            in_entries = line[3:].strip().lower() == ENTRIES_HEADING
            continue
        match = _TEST_ID_IN_DOC.search(line)
        if in_entries and match and line.startswith(("- ", "* ")):
            listed[match.group(1)] = line[match.end():].strip(" :-")
    return listed


def _ledger_text() -> str:
    """The shipped ledger; its absence is a broken install, never an empty list."""
    resource = importlib.resources.files(__package__ or "dw_testing.selftest")
    try:
        return (resource / UNKILLABLE_RESOURCE).read_text(encoding="utf-8")
    except OSError:
        raise KillMatrixError(
            f"the unkillable ledger ({UNKILLABLE_DOC}) is missing from the installed "
            "dw_testing package, so tests that kill nothing cannot be told apart from "
            "listed ones; reinstall dw-testing (pip install --force-reinstall dw-testing)"
        ) from None


def short_name(test: str) -> str:
    """``test_x[param]`` from ``conformance/test_m.py::test_x[param]``."""
    return test.rpartition("::")[2]


def unlisted_useless_tests(matrix: KillMatrix, listed: Mapping[str, str]) -> list[str]:
    """Tests that killed nothing and are not explained in docs/unkillable.md."""
    names = {short_name(t) for t in listed} | set(listed)
    return [t for t in matrix.tests_killing_nothing()
            if t not in names and short_name(t) not in names]


# -- printing -------------------------------------------------------------------------------


def render(matrix: KillMatrix, listed: Mapping[str, str] | None = None) -> list[Any]:
    """Rich renderables: the full matrix, the per-mutant summary and the verdict lines."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    listed = unkillable_tests() if listed is None else listed
    numbered = {m: f"M{i}" for i, m in enumerate(matrix.mutants, 1)}
    full = Table(title="Kill matrix: X killed (the test failed), . passed, s skipped; "
                 "columns M1.. are the mutants listed below", box=box.SIMPLE_HEAD,
                 padding=(0, 0))
    full.add_column("test", no_wrap=True)
    for mutant in matrix.mutants:
        full.add_column(numbered[mutant], justify="center", min_width=4)
    for test in matrix.tests:
        cells = []
        for mutant in matrix.mutants:
            outcome = matrix.outcomes.get((mutant, test))
            cells.append("[bold red]X[/]" if outcome == KILLED else
                         "[dim]s[/]" if outcome == "SKIP" else "" if outcome is None else ".")
        full.add_row(escape(short_name(test)), *cells)

    summary = Table(title="Mutants")
    for column in ("#", "mutant", "section", "kills", "first test that killed it",
                   "suite time to first kill", "quickest killing test", "judge",
                   "blamed clause"):
        summary.add_column(column, no_wrap=column != "first test that killed it")
    for mutant in matrix.mutants:
        info = STORE_MUTANTS.get(mutant) or GENERATED_MUTANTS.get(mutant)
        first = matrix.first_kill(mutant)
        summary.add_row(
            numbered[mutant], mutant, info.section if info else "",
            str(len(matrix.killed_by(mutant))),
            escape(short_name(first)) if first else "[bold red]SURVIVED[/]",
            _seconds(matrix.time_to_first_kill(mutant)), _seconds(matrix.time_to_kill(mutant)),
            matrix.judge_column(mutant), matrix.blamed_clause(mutant),
        )
    verdict: list[Any] = [full, summary]
    median_kill = matrix.median_time_to_kill()
    verdict.append(
        f"self-test wall time {matrix.wall_seconds:.1f} s for {len(matrix.mutants)} mutants x "
        f"{len(matrix.tests)} tests; median suite time to kill a mutant "
        f"{_seconds(median_kill) or 'n/a'}"
    )
    survivors = matrix.survivors()
    verdict.append(f"[bold red]survived: {', '.join(survivors)}[/]" if survivors
                   else f"[green]every one of {len(matrix.mutants)} mutants was killed[/]")
    for test in matrix.tests_killing_nothing():
        reason = listed.get(test) or listed.get(short_name(test))
        verdict.append(f"killed nothing: {escape(short_name(test))}"
                       + (f" (unkillable: {escape(reason)})" if reason else
                          " [bold red]- not listed in docs/unkillable.md[/]"))
    return verdict


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.3f} s"
