"""The self-test's report: the kill grid of every mutant store and engine variant.

``dw conformance --self-test --report FILE`` writes it through the same writer as a
conformance run (JSON, Markdown and the HTML page), so its page is drawn from the same
validated dict. The dict has no tests of its own: its ``kill_matrix`` is the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dw_testing.report import facts as run_facts
from dw_testing.report.html_page import html_path
from dw_testing.report.schema import SCHEMA_VERSION
from dw_testing.report.writer import write
from dw_testing.selftest.killmatrix import KillMatrix, short_name
from dw_testing.selftest.mutants import GENERATED_MUTANTS, STORE_MUTANTS

SELF_TEST_COMMAND = "dw conformance --self-test"


def _defect(name: str, level: str) -> str:
    if level == "engine":
        from dw_testing.selftest.engine_variants import VARIANTS

        variant = VARIANTS.get(name)
        return variant.defect if variant is not None else ""
    info = STORE_MUTANTS.get(name) or GENERATED_MUTANTS.get(name)
    return info.defect_doc if info is not None else ""


def kill_matrix_json(store: KillMatrix, engine: KillMatrix | None,
                     unkillable: Mapping[str, str]) -> dict[str, Any]:
    """``{"tests", "mutants": [{"name", "level", "defect", "killed_by"}], "unkillable"}``:
    store mutants first, then engine variants; tests in suite order."""
    levels = [("store", store)] + ([("engine", engine)] if engine is not None else [])
    tests = list(dict.fromkeys(t for _level, m in levels for t in m.tests))
    mutants = [{"name": name, "level": level, "defect": _defect(name, level),
                "killed_by": matrix.killed_by(name)}
               for level, matrix in levels for name in matrix.mutants]
    idle = {t for _level, m in levels for t in m.tests_killing_nothing()}
    explained = {test: reason for test in sorted(idle)
                 if (reason := unkillable.get(test) or unkillable.get(short_name(test)))}
    return {"tests": tests, "mutants": mutants, "unkillable": explained}


def self_test_report(store: KillMatrix, engine: KillMatrix | None,
                     unkillable: Mapping[str, str]) -> dict[str, Any]:
    return {
        "schema": SCHEMA_VERSION, "store": [], "stores": [], "profile": "quick", "seed": None,
        "tests": [], "capabilities": {}, "by_store": {}, "leftovers": {},
        "versions": run_facts.versions(), "replay": SELF_TEST_COMMAND,
        "kill_matrix": kill_matrix_json(store, engine, unkillable),
    }


def write_self_test_report(path: Path, store: KillMatrix, engine: KillMatrix | None,
                           unkillable: Mapping[str, str]) -> Path:
    """Write the JSON, Markdown and HTML; returns the HTML page's path."""
    write(self_test_report(store, engine, unkillable), path)
    return html_path(path)
