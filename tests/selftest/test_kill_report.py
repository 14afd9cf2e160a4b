"""``dw conformance --self-test --report FILE``: the kill grid as JSON, Markdown and a page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import html5lib
import jsonschema
import pytest
from click.testing import CliRunner

from dw_testing.commands.conformance import conformance
from dw_testing.report.schema import REPORT_SCHEMA
from dw_testing.selftest.kill_report import kill_matrix_json, write_self_test_report
from dw_testing.selftest.killmatrix import KillMatrix

CREATE = "conformance/test_store_create.py::test_one_winner"
LISTING = "conformance/test_store_list.py::test_sorted[10]"
IDLE = "conformance/test_store_keys.py::test_long_keys"
ENGINE = "conformance/test_engine_orderings.py::test_cancel_inside_signal"
XHTML = "{http://www.w3.org/1999/xhtml}"


def store_matrix() -> KillMatrix:
    outcomes = {("false_to_winner", CREATE): "FAIL", ("false_to_winner", LISTING): "PASS",
                ("unsorted_list", CREATE): "FAIL", ("unsorted_list", LISTING): "FAIL",
                ("false_to_winner", IDLE): "PASS", ("unsorted_list", IDLE): "SKIP"}
    return KillMatrix(["false_to_winner", "unsorted_list"], [CREATE, LISTING, IDLE], outcomes)


def engine_matrix(killed: bool) -> KillMatrix:
    return KillMatrix(["replay_journals_twice"], [ENGINE],
                      {("replay_journals_twice", ENGINE): "FAIL" if killed else "PASS"})


def test_the_grid_lists_store_mutants_then_engine_variants() -> None:
    grid = kill_matrix_json(store_matrix(), engine_matrix(True),
                            {"test_long_keys": "no store defect shortens a key"})
    assert grid["tests"] == [CREATE, LISTING, IDLE, ENGINE]
    assert [(m["name"], m["level"], m["killed_by"]) for m in grid["mutants"]] == [
        ("false_to_winner", "store", [CREATE]),
        ("unsorted_list", "store", [CREATE, LISTING]),
        ("replay_journals_twice", "engine", [ENGINE])]
    assert all(m["defect"] for m in grid["mutants"])
    assert grid["unkillable"] == {IDLE: "no store defect shortens a key"}


def test_the_self_test_page_draws_the_grid(tmp_path: Path) -> None:
    path = tmp_path / "out" / "self-test.json"
    page_path = write_self_test_report(path, store_matrix(), engine_matrix(False), {})
    assert page_path == tmp_path / "out" / "self-test.html"
    report = json.loads(path.read_text())
    jsonschema.validate(report, REPORT_SCHEMA)
    assert "**SURVIVED**" in (tmp_path / "out" / "self-test.md").read_text()
    tree = html5lib.HTMLParser(strict=True).parse(page_path.read_text())
    verdict = tree.find(f".//{XHTML}p[@id='verdict']")
    assert "".join(verdict.itertext()) == "Survived: replay_journals_twice"
    grid = tree.find(f".//{XHTML}table[@id='kill-grid']")
    rows = grid.findall(f"{XHTML}tbody/{XHTML}tr")
    assert ["".join(r.find(f"{XHTML}th").itertext()) for r in rows] == [
        "test_one_winner", "test_sorted[10]", "test_long_keys", "test_cancel_inside_signal"]
    kills = [["".join(td.itertext()) for td in r.findall(f"{XHTML}td")] for r in rows]
    assert kills == [["X", "X", ""], ["", "X", ""], ["", "", ""], ["", "", ""]]
    # A self-test has no tests of its own: no capability table, no failure list.
    assert tree.find(".//*[@id='capabilities']") is None
    assert tree.find(".//*[@id='failures']") is None


def test_the_cli_hands_the_report_path_to_the_self_test(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def main(report: Path | None = None) -> int:
        seen["report"] = report
        return 0

    from dw_testing.selftest import verdict

    monkeypatch.setattr(verdict, "main", main)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(conformance, ["--self-test", "--report", "grid.json"])
    assert result.exit_code == 0, result.output
    assert seen["report"] == tmp_path / "grid.json"
