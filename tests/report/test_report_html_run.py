"""``--dw-report`` writes the HTML page beside the JSON: a real run, read back and parsed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import html5lib
import jsonschema
import pytest

from dw_testing.report.facts import replay_command
from dw_testing.report.schema import HISTORY_WINDOW, REPORT_SCHEMA

SVG = "{http://www.w3.org/2000/svg}"

# A torn read: the get returns a value nobody wrote, while two puts overlap it.
HISTORY_TESTS = '''
import pytest
from dw_testing.history.events import Operation
from dw_testing.history.violation import HistoryViolation


def calls(count):
    ops = [Operation("p0", "put", "k", b"a", None, 0, 10),
           Operation("p1", "get", "k", None, b"torn", 20, 30),
           Operation("p2", "put", "k", b"b", None, 5, None, "TimeoutError")]
    for n in range(3, count):
        ops.append(Operation(f"p{n % 4}", "get", "k", None, b"a", 40 + 10 * n, 45 + 10 * n))
    return ops


def test_passes(dw_store):
    dw_store.put("k", b"v")


@pytest.mark.dw_clause("C-PUT-1")
def test_torn_read(dw_store):
    raise HistoryViolation("history is not linearizable on key 'k'", key="k",
                           ops=calls(3), marked=[0, 1], key_calls=3)


def test_long_history(dw_store):
    raise HistoryViolation("history is not linearizable on key 'k'", key="k",
                           ops=calls(CALLS), marked=[0, 1], key_calls=CALLS)
'''


def run(pytester: pytest.Pytester, calls: int = 12) -> tuple[dict[str, Any], str, Path]:
    pytester.makepyfile(test_history=HISTORY_TESTS.replace("CALLS", str(calls)))
    result = pytester.runpytest("test_history.py", "--dw-store=memory", "--dw-seed=7",
                                "--dw-report=out/report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = pytester.path / "out"
    report = json.loads((out / "report.json").read_text())
    return report, (out / "report.html").read_text(), out


def test_the_page_is_written_beside_the_json_and_markdown(pytester: pytest.Pytester) -> None:
    report, page, out = run(pytester)
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json", "report.md"]
    jsonschema.validate(report, REPORT_SCHEMA)
    html5lib.HTMLParser(strict=True).parse(page)
    assert page.startswith("<!DOCTYPE html>")


def test_a_history_failure_carries_its_timeline_as_svg(pytester: pytest.Pytester) -> None:
    report, page, _out = run(pytester)
    torn = next(t for t in report["tests"] if "test_torn_read" in t["nodeid"])
    assert torn["outcome"] == "FAIL" and torn["clauses"] == ["C-PUT-1"]
    assert torn["history"]["marked"] == [0, 1] and len(torn["history"]["ops"]) == 3
    tree = html5lib.parse(page)
    article = next(a for a in tree.iter("{http://www.w3.org/1999/xhtml}article")
                   if "test_torn_read" in "".join(a.itertext()))
    [svg] = list(article.iter(f"{SVG}svg"))
    drawn = [g for g in svg.iter(f"{SVG}g") if "call" in g.get("class", "").split()]
    assert len(drawn) == 3
    assert sorted(int(g.get("data-index")) for g in drawn
                  if "marked" in g.get("class", "").split()) == [0, 1]
    assert all(g.find(f"{SVG}title") is not None for g in drawn)
    passed = next(t for t in report["tests"] if "test_passes" in t["nodeid"])
    assert "history" not in passed and "message" not in passed


def test_the_report_stays_small_for_a_history_of_ten_thousand_calls(
        pytester: pytest.Pytester) -> None:
    report, page, out = run(pytester, calls=10_000)
    long = next(t for t in report["tests"] if "test_long_history" in t["nodeid"])
    history = long["history"]
    assert len(history["ops"]) == HISTORY_WINDOW
    assert history["left_out"] == 10_000 - HISTORY_WINDOW
    marked = [history["ops"][i] for i in history["marked"]]
    assert [(op["process"], op["op"]) for op in marked] == [("p0", "put"), ("p1", "get")]
    assert (out / "report.json").stat().st_size < 80_000  # 50 kB measured
    assert len(page.encode()) < 120_000  # 72 kB measured
    tree = html5lib.parse(page)
    drawn = [g for g in tree.iter(f"{SVG}g") if "call" in g.get("class", "").split()]
    assert len(drawn) == 3 + HISTORY_WINDOW  # the torn read's 3, and the long one's window


def test_the_replay_command_pins_the_seed(pytester: pytest.Pytester) -> None:
    report, page, _out = run(pytester)
    replay = report["replay"]
    assert replay.startswith("python -m pytest test_history.py --dw-store=memory ")
    assert replay.endswith(" --dw-seed=7") and "--dw-report" not in replay
    assert {"python", "dw-testing", "pytest"} <= set(report["versions"])
    assert "--dw-seed=7" in page


@pytest.mark.parametrize(("args", "seed", "expected"), [
    ([], None, "python -m pytest"),
    (["--dw-store=s3", "--dw-report", "r.json", "-k", "x y"], 3,
     "python -m pytest --dw-store=s3 -k 'x y' --dw-seed=3"),
    (["--dw-seed", "9", "--junit-xml=j.xml", "--dw-report=o/r.json"], 9,
     "python -m pytest --dw-seed=9"),
])
def test_the_replay_command_drops_outputs_and_keeps_the_rest(
        args: list[str], seed: int | None, expected: str) -> None:
    assert replay_command(args, seed) == expected
