"""The engine kill matrix: the engine-level suite against every engine variant.

One pytest subprocess per variant (all started together, on the memory store); a variant
is killed when at least one engine-level test fails on it.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dw_testing.selftest.engine_variants import VARIANTS, variant_named
from dw_testing.selftest.killmatrix import KillMatrix, build_matrix
from dw_testing.selftest.runner import SuiteRun

ENGINE_LEVEL_MARK = "dw_engine"


def engine_suite_run(workdir: Path, stores: Sequence[str], *, variant: str | None = None,
                     profile: str = "quick", extra: Sequence[str] = ()) -> SuiteRun:
    """``pytest -m dw_engine`` on ``stores`` in a clean directory, writing report.json;
    ``variant`` names the engine variant to run (``None``: the reference engine).

    The judge is off: what this measures is the engine-level tests' own assertions (does a
    wrong store, or a wrong engine, hurt a wait?), not the store's answers, which the judge
    holds to the store-level clauses in every other run."""
    return SuiteRun(rootdir=workdir, stores=stores, report=workdir / "report.json",
                    profile=profile, marker=ENGINE_LEVEL_MARK, variant=variant,
                    traceback="line", quiet_header=True, scratch=workdir,
                    extra=["--dw-judge=off", *extra])


def failures_by_store(report: Mapping[str, Any]) -> dict[str, list[str]]:
    """``{store: [failed node ids]}`` from a ``--dw-report`` JSON (every store listed)."""
    failed: dict[str, list[str]] = {str(store): [] for store in report.get("stores", [])}
    for test in report.get("tests", []):
        if test.get("outcome") == "FAIL":
            failed.setdefault(str(test["store"]), []).append(str(test["nodeid"]))
    return failed


def run_engine_kill_matrix(names: Sequence[str] | None = None, *, profile: str = "quick",
                           timeout: float = 900.0) -> KillMatrix:
    """The engine suite against each variant (on memory), as a :class:`KillMatrix`.

    One pytest subprocess per variant, all started together; a variant is killed when at
    least one engine-level test fails on it.
    """
    chosen = list(VARIANTS) if names is None else list(names)
    for name in chosen:
        variant_named(name)
    outcomes: dict[tuple[str, str], str] = {}
    started_at = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dw-engine-matrix-") as temp:
        children = {}
        for name in chosen:
            workdir = Path(temp) / name
            workdir.mkdir()
            run = engine_suite_run(workdir, ["memory"], variant=name, profile=profile)
            children[name] = (workdir, subprocess.Popen(
                run.command(), cwd=workdir, env=run.environment(), stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL))
        for name, (workdir, child) in children.items():
            child.wait(timeout=timeout)
            report_path = workdir / "report.json"
            if not report_path.is_file():
                raise RuntimeError(f"the engine suite wrote no report for variant {name} "
                                   f"(pytest exit {child.returncode})")
            report = json.loads(report_path.read_text(encoding="utf-8"))
            single = build_matrix(report, [name], rootdir=workdir)
            outcomes.update(single.outcomes)
    tests = sorted({test for _, test in outcomes})
    return KillMatrix(chosen, tests, outcomes,
                                 wall_seconds=time.perf_counter() - started_at)


def engine_self_test(console: Any) -> int:
    """Print the engine-variant kill matrix (for ``dw conformance --self-test``); 1 if any
    variant survived."""
    try:
        matrix = run_engine_kill_matrix()
    except (RuntimeError, OSError) as exc:
        console.print(f"[red]the engine kill matrix could not run: {exc}[/]")
        return 1
    return print_engine_matrix(console, matrix)


def print_engine_matrix(console: Any, matrix: KillMatrix) -> int:
    """Print what killed each engine variant; 1 if any survived."""
    console.print(f"engine variants: {len(matrix.mutants)} variants x {len(matrix.tests)} "
                  f"engine-level tests in {matrix.wall_seconds:.1f} s")
    for name in matrix.mutants:
        first = matrix.first_kill(name)
        verdict = (f"killed by {len(matrix.killed_by(name))} tests, first "
                   f"{first.rpartition('::')[2]}" if first else "SURVIVED")
        console.print(f"  {name}: {verdict} ({VARIANTS[name].defect})", markup=False)
    survivors = matrix.survivors()
    if survivors:
        console.print(f"[bold red]engine variants survived: {', '.join(survivors)}[/]")
        return 1
    console.print(f"[green]every one of {len(matrix.mutants)} engine variants was killed[/]")
    return 0
