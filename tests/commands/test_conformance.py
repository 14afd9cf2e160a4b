"""``dw conformance``: the pytest run it wraps, its table and its exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dw_testing.commands.conformance import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_UNKNOWN,
    EXIT_USAGE,
    conformance,
    exit_code,
)


def _report(*outcomes: str) -> dict[str, object]:
    return {"tests": [{"nodeid": f"t{i}", "outcome": o} for i, o in enumerate(outcomes)]}


@pytest.mark.parametrize("outcomes, returncode, expected", [
    (("PASS", "SKIP", "XFAIL"), 0, EXIT_OK),
    (("PASS", "FAIL", "UNKNOWN"), 1, EXIT_FAIL),
    (("PASS", "UNKNOWN"), 0, EXIT_UNKNOWN),
    ((), 5, EXIT_FAIL),
    (("PASS",), 3, EXIT_FAIL),
    (("PASS",), 1, EXIT_FAIL),
])
def test_exit_codes_follow_the_worst_outcome(
    outcomes: tuple[str, ...], returncode: int, expected: int
) -> None:
    assert exit_code(_report(*outcomes), returncode) == expected


def test_a_run_without_a_report_is_a_failure_or_bad_usage() -> None:
    assert exit_code(None, 4) == EXIT_USAGE
    assert exit_code(None, 3) == EXIT_FAIL


def test_a_store_is_required() -> None:
    result = CliRunner().invoke(conformance, [])
    assert result.exit_code == EXIT_USAGE
    assert "dw conformance --store memory://" in result.output


@pytest.mark.parametrize("store, expected", [
    ("memory://", EXIT_OK),
    ("dw_testing.mutants:overwriting_create", EXIT_FAIL),
])
def test_a_run_prints_the_table_writes_the_report_and_gates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str, expected: int
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(conformance, [
        "--store", store, "--report", "out/r.json", "--profile", "quick", "--seed", "3",
        "--", "-k", "test_store_create",
    ])
    assert result.exit_code == expected, result.output
    report = json.loads((tmp_path / "out" / "r.json").read_text())
    assert report["seed"] == 3 and report["profile"] == "quick"
    assert "put_if_absent" in result.stdout
    # Only create tests ran: the input-coverage line says which corners no call reached.
    assert "input coverage: " in result.stdout and "cells reached; empty: " in result.stdout
    assert (tmp_path / "out" / "r.md").is_file()
    assert "passed" in result.stderr or "failed" in result.stderr  # pytest's progress
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_the_dw_group_offers_conformance() -> None:
    from reference_engine.cli.main import dw

    result = CliRunner().invoke(dw, ["conformance", "--help"])
    assert result.exit_code == 0, result.output
    assert "--store" in result.output and "--self-test" in result.output


def test_self_test_prints_the_kill_matrix_and_passes_on_its_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dw_testing.selftest import verdict

    monkeypatch.setattr(verdict, "main", lambda: print("KILL MATRIX") or 1)
    result = CliRunner().invoke(conformance, ["--self-test"])
    assert result.exit_code == 1
    assert "KILL MATRIX" in result.output


def test_a_failure_names_the_contract_clauses_its_test_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import jsonschema

    from dw_testing.report.schema import REPORT_SCHEMA

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(conformance, [
        "--store", "dw_testing.mutants:empty_value_as_none", "--report", "r.json",
        "--summary", "summary.md", "--profile", "quick", "--", "-k",
        "test_missing_key_reads_none",
    ])
    assert result.exit_code == EXIT_FAIL, result.output
    report = json.loads((tmp_path / "r.json").read_text())
    jsonschema.validate(report, REPORT_SCHEMA)
    [test] = report["tests"]
    assert test["outcome"] == "FAIL" and test["clauses"] == ["C-GET-1"], test
    assert "  clause   C-GET-1: `get` returns the whole record or `None`." in result.stdout
    assert "  fix      return the whole record as bytes" in result.stdout
    assert "Traceback" not in result.output and 'File "' not in result.output
    summary = (tmp_path / "summary.md").read_text()
    assert summary.index("| contract | FAIL |") < summary.index("## What to fix")
    assert "- clause: [C-GET-1](docs/contract.md#c-get-1)" in summary


def test_a_store_that_cannot_open_leaves_the_runs_last_lines_in_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import shlex
    import sys

    monkeypatch.chdir(tmp_path)
    child = "import sys; sys.stderr.write('no such bucket: dw-ci\\n'); sys.exit(3)"
    command = shlex.join([sys.executable, "-c", child])
    (tmp_path / "summary.md").write_text("earlier step\n")
    result = CliRunner().invoke(conformance, [
        "--store", f"exec:{command}", "--summary", "summary.md", "--profile", "quick"])
    assert result.exit_code == EXIT_FAIL, result.output
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("earlier step\n# Conformance report")  # appended
    # The child's own stderr line and the command to run by hand, told once, not per test.
    assert "no such bucket: dw-ci" in summary and "could not be opened" in summary
    assert "Run the command by hand" in summary
    assert summary.count("## `exec` could not be opened") == 1, summary
    assert "What to fix" not in summary  # no block per test for the one setup error
    assert "no such bucket: dw-ci" in result.stdout
