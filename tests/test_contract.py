"""docs/contract.md is complete and current: every clause has a test, every suite test and
mutant cites clauses that exist, and the generated table matches the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from dw_testing.selftest import contract
from dw_testing.selftest.mutants import STORE_MUTANTS

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "contract.md"


def _problems(page: str, tests: list[contract.CitingTest]) -> list[str]:
    mutants = contract.all_mutants()
    table = contract.render_table(
        contract.build_rows(contract.read_clauses(page), tests, mutants))
    return contract.problems(page, tests, mutants, table)


def _repo_tests() -> list[contract.CitingTest]:
    return [*contract.scan_tests(ROOT, contract.SUITE_DIR),
            *contract.scan_tests(ROOT, contract.PROJECT_TESTS_DIR)]


def test_the_contract_page_is_complete_and_current() -> None:
    found = _problems(PAGE.read_text(encoding="utf-8"), _repo_tests())
    assert not found, "docs/contract.md:\n" + "\n".join(f"- {p}" for p in found)


def test_the_page_defines_every_clause_once_with_a_title() -> None:
    clauses = contract.read_clauses(PAGE.read_text(encoding="utf-8"))
    assert len(clauses) >= 20
    assert len({c.id for c in clauses}) == len(clauses)
    assert all(c.title for c in clauses), [c.id for c in clauses if not c.title]


def test_every_store_mutant_breaks_a_clause() -> None:
    assert all(m.clauses for m in STORE_MUTANTS.values())


# The checker itself: each kind of drift is reported, naming what to do.

PAGE_TEXT = f"""# t

### C-A-1

**One.** text

### C-A-2

**Two.** text

{contract.BEGIN} ({contract.REGENERATE}) -->
{contract.END}
"""


def _current(page: str, tests: list[contract.CitingTest]) -> str:
    mutants = contract.all_mutants()
    table = contract.render_table(
        contract.build_rows(contract.read_clauses(page), tests, mutants))
    return contract.regenerate(page, table)


def test_a_suite_test_without_a_clause_is_named_with_the_fix() -> None:
    tests = [contract.CitingTest("conformance/test_x.py::test_new", (), 7),
             contract.CitingTest("conformance/test_x.py::test_old", ("C-A-1", "C-A-2"), 3)]
    found = _problems(_current(PAGE_TEXT, tests), tests)
    assert any("conformance/test_x.py::test_new (line 7) cites no clause" in p
               and '@pytest.mark.dw_clause("C-…")' in p and contract.REGENERATE in p
               for p in found), found


def test_a_project_test_may_cite_nothing() -> None:
    tests = [contract.CitingTest("tests/test_y.py::test_other", (), 1),
             contract.CitingTest("conformance/test_x.py::test_old", ("C-A-1", "C-A-2"), 3)]
    found = _problems(_current(PAGE_TEXT, tests), tests)
    assert not [p for p in found if "test_other" in p], found


def test_an_unknown_clause_is_reported_with_the_known_ones() -> None:
    tests = [contract.CitingTest("conformance/test_x.py::test_old", ("C-A-1", "C-A-2", "C-A-3"), 3)]
    found = _problems(_current(PAGE_TEXT, tests), tests)
    assert any("cites 'C-A-3'" in p and "C-A-1, C-A-2" in p for p in found), found


def test_a_clause_without_a_test_is_reported() -> None:
    tests = [contract.CitingTest("conformance/test_x.py::test_old", ("C-A-1",), 3)]
    found = _problems(_current(PAGE_TEXT, tests), tests)
    assert any(p.startswith("C-A-2 has no test") for p in found), found


def test_a_stale_page_is_reported_with_the_command() -> None:
    tests = [contract.CitingTest("conformance/test_x.py::test_old", ("C-A-1", "C-A-2"), 3)]
    found = _problems(PAGE_TEXT, tests)
    assert found == [f"docs/contract.md is out of date: run {contract.REGENERATE}"] or any(
        "out of date" in p for p in found), found
    assert not [p for p in _problems(_current(PAGE_TEXT, tests), tests) if "out of date" in p]


def test_markers_are_read_from_modules_classes_and_functions(tmp_path: Path) -> None:
    suite = tmp_path / "conformance"
    suite.mkdir()
    (suite / "test_m.py").write_text(
        "import pytest\n"
        "pytestmark = [pytest.mark.dw_store_contract, pytest.mark.dw_clause('C-A-1')]\n"
        "@pytest.mark.dw_clause('C-A-2')\n"
        "def test_f(): pass\n"
        "@pytest.mark.dw_clause('C-B-1')\n"
        "class TestC:\n"
        "    def test_g(self): pass\n"
        "def helper(): pass\n",
        encoding="utf-8")
    found = {t.nodeid: t.clauses for t in contract.scan_tests(tmp_path, "conformance")}
    assert found == {"conformance/test_m.py::test_f": ("C-A-1", "C-A-2"),
                     "conformance/test_m.py::TestC::test_g": ("C-A-1", "C-B-1")}


def test_the_command_checks_and_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "docs" / "contract.md"
    page.parent.mkdir()
    page.write_text(PAGE_TEXT, encoding="utf-8")
    (tmp_path / "conformance").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "conformance" / "test_a.py").write_text(
        "import pytest\n@pytest.mark.dw_clause('C-A-1', 'C-A-2')\ndef test_a(): pass\n",
        encoding="utf-8")
    assert contract.main(["--check", str(page)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert contract.main(["--write", str(page)]) == 1  # still true: C-A-* have no mutant
    assert "conformance/test_a.py::test_a" in page.read_text(encoding="utf-8")
