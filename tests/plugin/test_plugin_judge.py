"""The judge in a pytest run: a test whose own assertions pass fails when its store answered
wrong, the failure names the cause, and the run ends with one diagnosis, the same text
whatever the number of workers."""

from __future__ import annotations

import json

import pytest

from dw_testing.report.html_page import html_path

UNASSERTED = """
def test_reads_without_looking(dw_store):
    dw_store.put("Run", b"first")
    dw_store.put("run", b"second")
    dw_store.get("Run")   # the test does not look at the answer; the judge does


def test_a_correct_answer(dw_store):
    dw_store.put("k", b"v")
    assert dw_store.get("k") == b"v"
"""

FOLDED = "--dw-store=dw_testing.mutants:case_folded_keys"


def _diagnosis(pytester: pytest.Pytester, *args: str) -> list[str]:
    report = pytester.path / "report.json"
    pytester.runpytest("-p", "no:randomly", "test_unasserted.py", FOLDED,
                       f"--dw-report={report}", *args)
    lines: list[str] = json.loads(report.read_text())["diagnosis"]["lines"]
    return lines


def test_an_unasserted_wrong_answer_fails_the_test_and_names_its_cause(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_unasserted=UNASSERTED)
    result = pytester.runpytest("-p", "no:randomly", "test_unasserted.py", FOLDED)
    result.assert_outcomes(passed=1, failed=1)
    # The diagnosis comes first, right after the progress, then pytest's own failures.
    result.stdout.fnmatch_lines([
        "*What is wrong with this store*",
        "*C-KEY-2, cause of 1 failure*",
        "*test_reads_without_looking*only the judge caught it*",
        "*= FAILURES =*",
        "*JudgeFailure: judged history: store case_folded_keys broke C-KEY-2*get('Run')*"
        "the record written under 'run'*Fix: store each key exactly as given*",
    ])
    assert "dwc-" not in "\n".join(line for line in result.outlines if "C-KEY-2," in line)


def test_with_the_judge_off_the_unasserted_answer_goes_unseen(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_unasserted=UNASSERTED)
    result = pytester.runpytest("-p", "no:randomly", "test_unasserted.py", FOLDED,
                                "--dw-judge=off")
    result.assert_outcomes(passed=2)


def test_a_correct_store_passes_with_the_judge_on(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_unasserted=UNASSERTED)
    result = pytester.runpytest("-p", "no:randomly", "test_unasserted.py", "--dw-store=memory")
    result.assert_outcomes(passed=2)
    assert "What is wrong with this store" not in result.stdout.str()


def test_the_diagnosis_is_the_same_whatever_the_workers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_unasserted=UNASSERTED)
    alone = _diagnosis(pytester, "-p", "no:xdist")
    page = html_path(pytester.path / "report.json").read_text(encoding="utf-8")
    spread = _diagnosis(pytester, "-n", "2")
    assert alone and alone == spread, (alone, spread)
    assert '<section id="diagnosis"><h2>What is wrong with this store</h2>' in page
    assert "C-KEY-2, cause of 1 failure" in page
