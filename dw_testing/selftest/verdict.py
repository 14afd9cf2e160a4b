"""The self-test's verdict (``dw conformance --self-test``): every store mutant and every
engine variant must be killed, and every test that kills nothing must be explained."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from rich.console import Console

from dw_testing.selftest.engine_matrix import print_engine_matrix, run_engine_kill_matrix
from dw_testing.selftest.killmatrix import (
    WIDE_OUTPUT,
    KillMatrix,
    KillMatrixError,
    render,
    run_kill_matrix,
    store_mutants,
    unkillable_tests,
    unlisted_useless_tests,
)


def main(names: Iterable[str] | None = None, *, report: Path | None = None) -> int:
    """Run, print, and return 0 when every mutant died and every idle test is explained.

    With ``report``, also write the self-test's JSON, Markdown and HTML page: the kill
    grid of every mutant and engine variant against the tests that killed it."""
    console = Console()
    if not console.is_terminal:
        console = Console(width=WIDE_OUTPUT)  # a log file: never fold the matrix
    try:
        listed = unkillable_tests()  # first: a broken install should not cost a whole run
        console.print(f"running the store suite against {len(store_mutants(names))} "
                      "mutants ...")
        matrix = run_kill_matrix(names)
    except KillMatrixError as exc:
        console.print(f"[red]{exc}[/]")
        return 1
    for renderable in render(matrix, listed):
        console.print(renderable)
    store_failed = bool(matrix.survivors() or unlisted_useless_tests(matrix, listed))
    console.print("running the engine suite against each engine variant ...")
    engine: KillMatrix | None = None
    try:
        engine = run_engine_kill_matrix()
    except (RuntimeError, OSError) as exc:
        console.print(f"[red]the engine kill matrix could not run: {exc}[/]")
    engine_failed = engine is None or bool(print_engine_matrix(console, engine))
    if report is not None:
        from dw_testing.selftest.kill_report import write_self_test_report

        page = write_self_test_report(report, matrix, engine, listed)
        console.print(f"report: {report} (page: {page})", markup=False, soft_wrap=True)
    return 1 if store_failed or engine_failed else 0


if __name__ == "__main__":
    sys.exit(main())
