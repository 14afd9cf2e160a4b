"""The HTML report: one self-contained page drawn from the validated report dict."""

from __future__ import annotations

import copy
from typing import Any

import html5lib
import pytest

from dw_testing.report.html_page import ReportInvalid, html_path, render_html

NS = {"h": "http://www.w3.org/1999/xhtml", "svg": "http://www.w3.org/2000/svg"}


def parse(page: str) -> Any:
    """The page through a strict HTML5 parser: any parse error fails the test."""
    return html5lib.HTMLParser(strict=True, namespaceHTMLElements=True).parse(page)


def text_of(element: Any) -> str:
    return "".join(element.itertext())


def by_id(tree: Any, ident: str) -> Any:
    found = tree.find(f".//*[@id='{ident}']")
    assert found is not None, f"no element with id {ident}"
    return found


def sample(**changes: Any) -> dict[str, Any]:
    tests = [
        {"nodeid": "conformance/test_store_create.py::test_one_winner[memory]",
         "store": "memory", "capability": "put_if_absent", "outcome": "PASS", "reason": ""},
        {"nodeid": "conformance/test_store_create.py::test_torn[memory]", "store": "memory",
         "capability": "put_if_absent", "outcome": "FAIL",
         "reason": "AssertionError: torn read", "message": "AssertionError: torn read\n"
         "  get returned #1a2b3c4d(2B)"},
        {"nodeid": "conformance/test_store_list.py::test_sorted[memory]", "store": "memory",
         "capability": "list", "outcome": "XFAIL", "reason": "known deviation: lists unsorted"},
        {"nodeid": "conformance/test_store_races.py::test_procs[memory]", "store": "memory",
         "capability": "cross_process", "outcome": "SKIP",
         "reason": "store memory lacks capability cross_process"},
    ]
    report: dict[str, Any] = {
        "schema": 1, "store": "memory", "stores": ["memory"], "profile": "ci", "seed": 42,
        "tests": tests,
        "capabilities": {"list": {"outcome": "XFAIL", "failing": []},
                         "put_if_absent": {"outcome": "FAIL",
                                           "failing": [tests[1]["nodeid"]]}},
        "by_store": {"memory": {"list": {"outcome": "XFAIL", "failing": []},
                                "put_if_absent": {"outcome": "FAIL",
                                                  "failing": [tests[1]["nodeid"]]}}},
        "leftovers": {"memory": 0},
        "versions": {"dw-testing": "0.1.0", "python": "3.11.9", "pytest": "8.3.0"},
        "replay": "python -m pytest --dw-store=memory --dw-profile=ci --dw-seed=42",
    }
    report.update(changes)
    return report


def test_the_page_parses_cleanly_and_shows_the_run() -> None:
    tree = parse(render_html(sample()))
    run = text_of(by_id(tree, "run"))
    assert "memory" in run and "ci" in run and "42" in run
    assert "dw-testing 0.1.0" in run and "pytest 8.3.0" in run
    assert text_of(by_id(tree, "replay")) == (
        "python -m pytest --dw-store=memory --dw-profile=ci --dw-seed=42")
    assert text_of(by_id(tree, "verdict")).startswith("FAIL: 1 FAIL, 1 PASS, 1 XFAIL, 1 SKIP")


def test_the_capability_table_has_one_row_per_capability() -> None:
    table = by_id(parse(render_html(sample())), "capabilities-table")
    rows = table.findall(".//h:tbody/h:tr", NS)
    assert [(text_of(r.find("h:th", NS)), text_of(r.find("h:td", NS))) for r in rows] == [
        ("list", "XFAIL"), ("put_if_absent", "FAIL")]


def test_each_failure_shows_its_whole_message() -> None:
    failures = by_id(parse(render_html(sample())), "failures")
    [article] = failures.findall(".//h:article", NS)
    assert "test_torn[memory]" in text_of(article.find("h:h3", NS))
    assert text_of(article.find("h:pre", NS)) == (
        "AssertionError: torn read\n  get returned #1a2b3c4d(2B)")


def test_deviations_and_skips_each_with_their_reason() -> None:
    tree = parse(render_html(sample()))
    deviations = [text_of(td) for td in by_id(tree, "deviations").iter(f"{{{NS['h']}}}td")]
    assert "known deviation: lists unsorted" in deviations
    skips = [text_of(td) for td in by_id(tree, "skips").iter(f"{{{NS['h']}}}td")]
    assert "store memory lacks capability cross_process" in skips


def test_without_clause_ids_the_tests_are_listed_by_capability() -> None:
    clauses = by_id(parse(render_html(sample())), "clauses")
    assert "names a clause" in text_of(by_id(clauses, "no-clauses"))
    assert [text_of(h).split()[0] for h in clauses.iter(f"{{{NS['h']}}}h3")] == [
        "cross_process", "list", "put_if_absent"]


def test_clause_ids_group_the_tests_with_their_worst_outcome() -> None:
    report = sample()
    report["tests"][0]["clauses"] = ["C-CREATE-1"]
    report["tests"][1]["clauses"] = ["C-CREATE-1", "C-GET-1"]
    clauses = by_id(parse(render_html(report)), "clauses")
    assert clauses.find(".//*[@id='no-clauses']") is None
    rows = {text_of(r.find("h:th", NS)): r for r in clauses.findall(".//h:tbody/h:tr", NS)}
    assert sorted(rows) == ["C-CREATE-1", "C-GET-1"]
    assert text_of(rows["C-CREATE-1"].findall("h:td", NS)[0]) == "FAIL"
    assert len(rows["C-CREATE-1"].findall(".//h:li", NS)) == 2
    assert "2 test(s) name no clause" in text_of(clauses)


def test_the_page_loads_nothing_from_anywhere() -> None:
    page = render_html(sample())
    tree = parse(page)
    for element in tree.iter():
        tag = str(element.tag).rpartition("}")[2]
        assert tag not in ("script", "link", "img", "iframe", "object", "embed"), tag
        for name in ("src", "href", "action"):
            assert element.get(name) is None, (tag, name)
    assert "url(" not in page and "@import" not in page
    csp = tree.find(".//h:meta[@http-equiv='Content-Security-Policy']", NS)
    assert csp is not None and csp.get("content").startswith("default-src 'none'")


def test_text_from_tests_is_escaped_never_markup() -> None:
    report = sample()
    report["tests"][1]["nodeid"] = "t.py::test_x[<script>alert(1)</script>]"
    report["tests"][1]["message"] = "</pre><b>bold</b>"
    tree = parse(render_html(report))
    assert not any(str(e.tag).endswith(("}script", "}b")) for e in tree.iter())
    assert "</pre><b>bold</b>" in text_of(by_id(tree, "failure-1"))


@pytest.mark.parametrize(("path", "field"), [
    (("seed",), "seed"), (("tests", 0, "outcome"), "tests/0/outcome")])
def test_a_report_that_breaks_its_schema_draws_no_page(path: tuple[Any, ...],
                                                        field: str) -> None:
    report = copy.deepcopy(sample())
    target: Any = report
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = "not-valid"
    with pytest.raises(ReportInvalid, match=f"at {field}: "):
        render_html(report)


def test_the_html_path_sits_beside_the_json(tmp_path: Any) -> None:
    assert html_path(tmp_path / "out" / "report.json") == tmp_path / "out" / "report.html"
    assert html_path(tmp_path / "r.html") == tmp_path / "r.html.html"


# --- the kill matrix -------------------------------------------------------------------------

def kill_matrix() -> dict[str, Any]:
    tests = ["conformance/test_store_create.py::test_one_winner",
             "conformance/test_store_list.py::test_sorted",
             "conformance/test_engine_orderings.py::test_cancel_inside_signal"]
    return {"tests": tests, "mutants": [
        {"name": "false_to_winner", "level": "store", "defect": "tells the winner False",
         "killed_by": [tests[0]]},
        {"name": "unsorted_list", "level": "store", "defect": "lists out of order",
         "killed_by": [tests[0], tests[1]]},
        {"name": "boolean_decision", "level": "engine", "defect": "trusts the boolean",
         "killed_by": []},
    ]}


def test_the_kill_grid_marks_each_kill_and_names_the_survivors() -> None:
    tree = parse(render_html(sample(kill_matrix=kill_matrix())))
    grid = by_id(tree, "kill-grid")
    header = [text_of(th) for th in grid.findall(".//h:thead/h:tr/h:th", NS)]
    assert header == ["test", "M1 false_to_winner", "M2 unsorted_list", "E3 boolean_decision"]
    marks = [[text_of(td) for td in row.findall("h:td", NS)]
             for row in grid.findall(".//h:tbody/h:tr", NS)]
    assert marks == [["X", "X", ""], ["", "X", ""], ["", "", ""]]
    section = text_of(by_id(tree, "kill-matrix"))
    assert "Survived: boolean_decision" in section and "SURVIVED" in section


def test_without_a_kill_matrix_the_page_has_no_grid() -> None:
    tree = parse(render_html(sample()))
    assert tree.find(".//*[@id='kill-matrix']") is None
