"""The input-coverage table: a ``ci`` run on the memory store fills every cell, the report
carries the table and the terminal prints it under ``-v``."""

from __future__ import annotations

import json

import jsonschema
import pytest

from dw_testing.judge.coverage import CELLS, cell_id
from dw_testing.report.html_page import html_path
from dw_testing.report.schema import REPORT_SCHEMA

# The store-level tests built to reach the corners; the slow test runs the whole suite.
CORNER_TESTS = ("test_store_limits or test_store_key_corners or test_store_value_classes "
                "or test_store_traffic or test_store_keys")


def _coverage(pytester: pytest.Pytester, *args: str) -> tuple[dict[str, object], list[str]]:
    report = pytester.path / "report.json"
    result = pytester.runpytest("-p", "no:randomly", "--dw-store=memory", "--dw-suite-only",
                                "--dw-profile=ci", f"--dw-report={report}", *args)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) > 0 and not outcomes.get("failed") \
        and not outcomes.get("errors"), result.outlines[-20:]
    built = json.loads(report.read_text(encoding="utf-8"))
    jsonschema.validate(built, dict(REPORT_SCHEMA))
    section: dict[str, object] = built["coverage"]["memory"]
    return section, result.outlines


def test_a_ci_run_of_the_corner_tests_fills_every_cell_on_the_memory_store(
    pytester: pytest.Pytester,
) -> None:
    section, lines = _coverage(pytester, "-v", "-k", CORNER_TESTS)
    cells = section["cells"]
    assert isinstance(cells, dict)
    assert set(cells) == {cell_id(c) for c in CELLS}, "memory declares every capability"
    empty = sorted(text for text, calls in cells.items() if not calls)
    assert not empty and section["empty"] == [], f"cells no call reached: {empty}"
    # The table under -v: one row per dimension and class, with the calls per position.
    assert any(line.startswith("memory: ") and f"{len(CELLS)} of {len(CELLS)} cells reached"
               in line for line in lines)
    assert any("value byte" in line and "0xFF" in line and "first" in line for line in lines)
    page = html_path(pytester.path / "report.json").read_text(encoding="utf-8")
    assert 'id="coverage"' in page and "key character" in page


def test_without_the_corner_tests_the_table_names_the_empty_cells(
    pytester: pytest.Pytester,
) -> None:
    section, lines = _coverage(pytester, "-k", "test_store_create")
    empty = section["empty"]
    assert isinstance(empty, list)
    assert cell_id(("value byte", "0xFF", "first")) in empty
    assert cell_id(("key character", "%", "key last")) in empty
    assert not any("cells reached" in line for line in lines), "the table is for -v only"


@pytest.mark.slow
def test_a_ci_run_of_the_whole_store_level_suite_fills_every_cell(
    pytester: pytest.Pytester,
) -> None:
    section, _ = _coverage(pytester, "-m", "dw_store_contract")
    assert section["empty"] == []
