"""``dw conformance``: the conformance run as one command, for a backend's CI.

It runs the same pytest run as ``pytest --dw-store=...`` (in a subprocess, so the report is the
one pytest writes), streams pytest's progress to stderr, then prints the capability table.
Exit codes: 0 all good, 1 any FAIL (or the run could not complete), 2 bad usage,
4 UNKNOWN (a history check out of budget) with no FAIL.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import click
import pytest  # noqa: F401  # the run is pytest's: without it, dw says to install the extra
from rich.console import Console
from rich.table import Table

from dw_testing.judge.coverage_table import summary as coverage_summary
from dw_testing.plugin.failure_blocks import (
    exec_store_names,
    failure_blocks,
    setup_error_lines,
    summary_markdown,
)
from dw_testing.report.html_page import html_path
from dw_testing.report.schema import OUTCOME_ORDER
from dw_testing.report.writer import markdown_path, matrix_lines
from dw_testing.selftest.runner import SuiteRun

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 4
PROFILE_NAMES = ("quick", "ci", "thorough")
# pytest's own exit codes we translate (2 interrupted, 3 internal error, 4 usage, 5 no tests).
_PYTEST_USAGE, _PYTEST_NO_TESTS = 4, 5
_STYLES = {"FAIL": "bold red", "UNKNOWN": "bold yellow", "PASS": "green", "XFAIL": "cyan",
           "SKIP": "dim"}
# The last lines of pytest's output kept for a summary when no report was written.
_TAIL_LINES = 30


def exit_code(report: Mapping[str, Any] | None, pytest_returncode: int) -> int:
    """1 on any FAIL, else 4 on any UNKNOWN, else 0; a run without a report is a failure."""
    if report is None:
        return EXIT_USAGE if pytest_returncode == _PYTEST_USAGE else EXIT_FAIL
    outcomes = {test["outcome"] for test in report.get("tests", [])}
    failed = "FAIL" in outcomes or bool(report.get("setup_errors"))
    if failed or pytest_returncode not in (0, _PYTEST_NO_TESTS):
        return EXIT_FAIL  # pytest failed something, even outside the report (a collection error)
    if "UNKNOWN" in outcomes:
        return EXIT_UNKNOWN
    if pytest_returncode == _PYTEST_NO_TESTS or not outcomes:
        return EXIT_FAIL  # nothing ran: a green build would be a lie
    return EXIT_OK


def capability_table(report: Mapping[str, Any]) -> Table:
    stores: list[str] = list(report["stores"])
    by_store: Mapping[str, Mapping[str, Any]] = report.get("by_store", {})
    table = Table(title=f"dw conformance (profile {report['profile']}, seed {report['seed']})")
    table.add_column("capability")
    for store in stores:
        table.add_column(store)
    for name in sorted(report["capabilities"]):
        cells = []
        for store in stores:
            outcome = by_store.get(store, {}).get(name, {}).get("outcome", "-")
            style = _STYLES.get(outcome, "")
            cells.append(f"[{style}]{outcome}[/]" if style else outcome)
        table.add_row(name, *cells)
    return table


def _run(run: SuiteRun, cwd: Path, tail: collections.deque[str]) -> int:
    """Run pytest, copying its output to stderr as it comes (stdout stays for the table);
    its last lines stay in ``tail``."""
    with subprocess.Popen(run.command(), cwd=cwd, env=run.environment(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, bufsize=1) as process:
        assert process.stdout is not None
        for line in process.stdout:
            sys.stderr.write(line)
            sys.stderr.flush()
            tail.append(line.rstrip("\n"))
        return process.wait()


def _write_summary(path: Path, report: Mapping[str, Any] | None, stores: Iterable[str],
                   tail: Iterable[str], returncode: int) -> None:
    """Append the matrix and one block per failure to ``path`` (a CI job summary)."""
    if report is None or not report.get("tests"):
        # No test ran (a store that cannot open, a usage error): pytest's last lines say why.
        text = "\n".join([
            "# Conformance report", "",
            f"No test ran (pytest exit {returncode}). The run's last lines:", "", "```",
            *tail, "```", ""])
    else:
        text = summary_markdown("\n".join([*matrix_lines(report), "",
                                           *setup_error_lines(report)]),
                                failure_blocks(report, exec_store_names(stores)))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as summary:
        summary.write(text + "\n")


def _traceback_style(pytest_args: Iterable[str]) -> str | None:
    """No Python frames unless the caller asked for a --tb style after ``--``."""
    return None if any(arg.startswith("--tb") for arg in pytest_args) else "no"


def _self_test(report_path: Path | None = None) -> int:
    from dw_testing.selftest.verdict import main

    return main() if report_path is None else main(report=report_path.resolve())


@click.command("conformance")
@click.option("--store", "stores", multiple=True, metavar="URI|NAME|module:obj",
              help="store to test; repeat for several. Names: pytest --dw-stores")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None,
              help="write the JSON report here (and a .md matrix and an .html page beside it)")
@click.option("--profile", type=click.Choice(PROFILE_NAMES), default="ci", show_default=True,
              help="Hypothesis effort")
@click.option("--seed", type=int, default=None, help="reproduce a run (its report names it)")
@click.option("-n", "--workers", default=None, metavar="N|auto",
              help="run in parallel with pytest-xdist")
@click.option("--summary", "summary_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="append the matrix and what to fix, in Markdown, to this "
              "file (a CI job summary: --summary \"$GITHUB_STEP_SUMMARY\")")
@click.option("--self-test", is_flag=True,
              help="run the suite against every mutant store and print the kill matrix "
              "(with --report, also write it as a page)")
@click.argument("pytest_args", nargs=-1, type=click.UNPROCESSED)
def conformance(stores: tuple[str, ...], report_path: Path | None, profile: str,
                seed: int | None, workers: str | None, summary_path: Path | None,
                self_test: bool, pytest_args: tuple[str, ...]) -> None:
    """Run the conformance suite against a store and gate on the result.

    Extra arguments after -- go to pytest, e.g. `dw conformance --store memory -- -m dw_engine`.
    Exits 0 when every test passed, was skipped or is a known deviation; 1 on any FAIL;
    4 when a history check ran out of budget (UNKNOWN) and nothing failed.
    """
    console = Console()
    if self_test:
        sys.exit(_self_test(report_path))
    if not stores:
        raise click.UsageError(
            "name a store: dw conformance --store memory:// (or a name from "
            "`pytest --dw-stores`, or package.module:factory)"
        )
    cwd = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="dw-conformance-") as scratch:
        target = report_path.resolve() if report_path else Path(scratch) / "report.json"
        run = SuiteRun(rootdir=cwd, stores=stores, report=target, profile=profile, seed=seed,
                       workers=workers, scratch=Path(scratch), extra=pytest_args,
                       traceback=_traceback_style(pytest_args))
        tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        returncode = _run(run, cwd, tail)
        report = json.loads(target.read_text(encoding="utf-8")) if target.is_file() else None
    if report is None:
        console.print(f"[red]pytest exited {returncode} without writing a report; see its "
                      "output above[/]")
    else:
        for message in (report.get("setup_errors") or {}).values():
            console.print(f"ERROR: {message}", style="bold red", markup=False,
                          highlight=False, soft_wrap=True)
        console.print(capability_table(report))
        for line in coverage_summary(report.get("coverage") or {}):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        # The judge's diagnosis first: causes before the failures they explain.
        for line in (report.get("diagnosis") or {}).get("lines", []):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        for block in failure_blocks(report, exec_store_names(stores)):
            console.print(block.text(), markup=False, highlight=False, soft_wrap=True)
        if report_path:
            console.print(f"report: {target} (matrix: {markdown_path(target)}, page: "
                          f"{html_path(target)})",
                          markup=False, soft_wrap=True)
        console.print("outcomes, worst first: " + " > ".join(OUTCOME_ORDER), markup=False)
    if summary_path is not None:
        _write_summary(summary_path, report, stores, tail, returncode)
    sys.exit(exit_code(report, returncode))
