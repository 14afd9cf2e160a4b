"""The self-test's verdict (``dw conformance --self-test``): every store mutant and every
engine variant must be killed, and every test that kills nothing must be explained."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from rich.console import Console

from dw_testing.selftest.engine_matrix import engine_self_test
from dw_testing.selftest.killmatrix import (
    WIDE_OUTPUT,
    KillMatrixError,
    render,
    run_kill_matrix,
    store_mutants,
    unkillable_tests,
    unlisted_useless_tests,
)


def main(names: Iterable[str] | None = None) -> int:
    """Run, print, and return 0 when every mutant died and every idle test is explained."""
    console = Console()
    if not console.is_terminal:
        console = Console(width=WIDE_OUTPUT)  # a log file: never fold the matrix
    console.print(f"running the store suite against {len(store_mutants(names))} mutants ...")
    try:
        matrix = run_kill_matrix(names)
    except KillMatrixError as exc:
        console.print(f"[red]{exc}[/]")
        return 1
    listed = unkillable_tests()
    for renderable in render(matrix, listed):
        console.print(renderable)
    store_failed = bool(matrix.survivors() or unlisted_useless_tests(matrix, listed))
    console.print("running the engine suite against each engine variant ...")
    engine_failed = engine_self_test(console)
    return 1 if store_failed or engine_failed else 0


if __name__ == "__main__":
    sys.exit(main())
