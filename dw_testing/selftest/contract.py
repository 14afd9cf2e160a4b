"""The clause table of ``docs/contract.md``, generated from the tests and the mutants.

Clauses are the ``### C-…`` headings of the page. Tests cite them with
``@pytest.mark.dw_clause("C-…")`` (or a module ``pytestmark``), read here from the source
without importing it; mutants and engine variants cite them in ``MutantInfo.clauses``.

    python -m dw_testing.selftest.contract --write docs/contract.md   # regenerate
    python -m dw_testing.selftest.contract --check docs/contract.md   # exit 1 if stale
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dw_testing.plugin.clauses import Clause, read_clauses
from dw_testing.selftest.mutants import GENERATED_MUTANTS, STORE_MUTANTS, MutantInfo

MARKER = "dw_clause"  # the plugin's marker (dw_testing.plugin.clauses.MARKER)
BEGIN = "<!-- BEGIN GENERATED: clause table"
END = "<!-- END GENERATED -->"
REGENERATE = "python -m dw_testing.selftest.contract --write docs/contract.md"
SUITE_DIR = "conformance"
PROJECT_TESTS_DIR = "tests"

CLAUSE_ID = re.compile(r"^C-[A-Z]+-\d+$")


@dataclass(frozen=True)
class CitingTest:
    """A test function and the clauses its markers name."""

    nodeid: str
    clauses: tuple[str, ...]
    line: int

    @property
    def in_suite(self) -> bool:
        return self.nodeid.startswith(f"{SUITE_DIR}/")


@dataclass
class ClauseRow:
    clause: Clause
    suite_tests: list[str] = field(default_factory=list)
    project_tests: list[str] = field(default_factory=list)
    mutants: list[MutantInfo] = field(default_factory=list)


def _marker_clauses(node: ast.expr) -> list[str]:
    """Clause ids in ``pytest.mark.dw_clause("…")`` expressions found anywhere in ``node``."""
    ids: list[str] = []
    for call in ast.walk(node):
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == MARKER):
            ids.extend(arg.value for arg in call.args
                       if isinstance(arg, ast.Constant) and isinstance(arg.value, str))
    return ids


def _module_marks(tree: ast.Module) -> list[str]:
    ids: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            ids.extend(_marker_clauses(node.value))
    return ids


def _tests_in(body: Iterable[ast.stmt], inherited: list[str],
              prefix: str) -> Iterable[tuple[str, list[str], int]]:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test"):
            own = [i for d in node.decorator_list for i in _marker_clauses(d)]
            yield f"{prefix}{node.name}", inherited + own, node.lineno
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            own = [i for d in node.decorator_list for i in _marker_clauses(d)]
            yield from _tests_in(node.body, inherited + own, f"{prefix}{node.name}::")


def scan_tests(root: Path, directory: str) -> list[CitingTest]:
    """Every test function under ``root/directory`` with the clauses it cites."""
    found = []
    for path in sorted((root / directory).rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        relative = path.relative_to(root).as_posix()
        for name, ids, line in _tests_in(tree.body, _module_marks(tree), f"{relative}::"):
            found.append(CitingTest(name, tuple(dict.fromkeys(ids)), line))
    return found


def all_mutants() -> list[MutantInfo]:
    """Store mutants, the network-only mutants, the generated families, then engine
    variants."""
    from dw_testing.selftest.engine_variants import ENGINE_VARIANTS
    from dw_testing.selftest.mutants.network import NETWORK_MUTANTS

    return [*STORE_MUTANTS.values(), *NETWORK_MUTANTS.values(), *GENERATED_MUTANTS.values(),
            *ENGINE_VARIANTS.values()]


FAMILY_PATTERNS = {"gen_key": "gen_key_<class>_<position>", "gen_list": "gen_list_<break>_<class>",
                   "gen_value": "gen_value_<byte class>"}


def _mutant_lines(mutants: Sequence[MutantInfo]) -> list[str]:
    """One row per hand-written mutant, one per generated family (with its size)."""
    lines = [f"| {m.level} mutant | `{m.name}` |" for m in mutants if not m.family]
    families: dict[str, int] = {}
    for mutant in mutants:
        if mutant.family:
            families[mutant.family] = families.get(mutant.family, 0) + 1
    lines += [f"| generated mutant family | `{FAMILY_PATTERNS.get(name, name)}` "
              f"({count} stores) |" for name, count in families.items()]
    return lines


def build_rows(clauses: Sequence[Clause], tests: Sequence[CitingTest],
               mutants: Sequence[MutantInfo]) -> list[ClauseRow]:
    rows = {clause.id: ClauseRow(clause) for clause in clauses}
    for test in tests:
        for cited in test.clauses:
            if cited in rows:
                target = rows[cited].suite_tests if test.in_suite else rows[cited].project_tests
                target.append(test.nodeid)
    for mutant in mutants:
        for cited in mutant.clauses:
            if cited in rows:
                rows[cited].mutants.append(mutant)
    return list(rows.values())


def render_table(rows: Sequence[ClauseRow]) -> str:
    """One small table per clause: the tests that check it and the mutants that fail them."""
    blocks = []
    for row in rows:
        lines = [f"#### [{row.clause.id}](#{row.clause.anchor}): {row.clause.title}", "",
                 "| checked or proven by | name |", "|---|---|"]
        lines += [f"| suite test | `{t}` |" for t in row.suite_tests]
        lines += [f"| project test | `{t}` |" for t in row.project_tests]
        lines += _mutant_lines(row.mutants)
        if not row.mutants:
            lines.append("| mutant | none: the project's own tests check this clause on the "
                         "built-in stores, the engine and the plugin |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def regenerate(page: str, table: str) -> str:
    """``page`` with the text between the generated markers replaced by ``table``."""
    start = page.find(BEGIN)
    stop = page.find(END)
    if start < 0 or stop < start:
        raise ValueError(f"the page has no generated block: add the two lines\n{BEGIN} "
                         f"({REGENERATE}) -->\n{END}")
    head_end = page.index("\n", start) + 1
    return page[:head_end] + table + "\n" + page[stop:]


def problems(page: str, tests: Sequence[CitingTest], mutants: Sequence[MutantInfo],
             table: str) -> list[str]:
    """Everything that keeps the page from being the true, complete contract."""
    clauses = read_clauses(page)
    known = {clause.id for clause in clauses}
    found: list[str] = []
    duplicates = sorted({c.id for c in clauses if [d.id for d in clauses].count(c.id) > 1})
    if duplicates:
        found.append(f"clause ids used twice in docs/contract.md: {', '.join(duplicates)}")
    suggestion = ", ".join(sorted(known))
    for test in tests:
        if test.in_suite and not test.clauses:
            found.append(
                f"{test.nodeid} (line {test.line}) cites no clause: add "
                f"@pytest.mark.{MARKER}(\"C-…\") naming the clause(s) of docs/contract.md it "
                f"checks (one of: {suggestion}), then run {REGENERATE}"
            )
        for cited in test.clauses:
            if cited not in known:
                found.append(f"{test.nodeid} (line {test.line}) cites {cited!r}, which "
                             f"docs/contract.md does not define; known: {suggestion}")
    for mutant in mutants:
        if not mutant.clauses:
            found.append(f"mutant {mutant.name} names no clause: set clauses=(\"C-…\",) on "
                         "its MutantInfo")
        for cited in mutant.clauses:
            if cited not in known:
                found.append(f"mutant {mutant.name} cites {cited!r}, which docs/contract.md "
                             f"does not define; known: {suggestion}")
    for row in build_rows(clauses, tests, mutants):
        if not row.suite_tests and not row.project_tests:
            found.append(f"{row.clause.id} has no test: mark the test that checks it with "
                         f"@pytest.mark.{MARKER}(\"{row.clause.id}\")")
        if row.suite_tests and not row.mutants:
            found.append(f"{row.clause.id} has suite tests but no mutant that fails them: "
                         "add its id to the clauses of the mutant that breaks it")
    try:
        expected = regenerate(page, table)
    except ValueError as exc:
        found.append(str(exc))
    else:
        if expected != page:
            found.append(f"docs/contract.md is out of date: run {REGENERATE}")
    return found


def generated_page(page: str, root: Path) -> tuple[str, list[str]]:
    """``(regenerated page, problems found in the current page)`` for the repo at ``root``."""
    tests = [*scan_tests(root, SUITE_DIR), *scan_tests(root, PROJECT_TESTS_DIR)]
    mutants = all_mutants()
    table = render_table(build_rows(read_clauses(page), tests, mutants))
    return regenerate(page, table), problems(page, tests, mutants, table)


def main(argv: Sequence[str] | None = None, *, root: Path | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dw_testing.selftest.contract",
                                     description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", metavar="PAGE", type=Path,
                        help="rewrite the clause table of PAGE (docs/contract.md)")
    action.add_argument("--check", metavar="PAGE", type=Path,
                        help="exit 1, listing what is wrong, unless PAGE is complete and current")
    args = parser.parse_args(argv)
    page_path: Path = args.write or args.check
    repo = root or page_path.resolve().parent.parent
    page = page_path.read_text(encoding="utf-8")
    try:
        new_page, found = generated_page(page, repo)
    except ValueError as exc:
        print(f"{page_path}: {exc}", file=sys.stderr)
        return 2
    if args.write:
        page_path.write_text(new_page, encoding="utf-8")
        found = [p for p in found if "is out of date" not in p]
        print(f"wrote the clause table of {page_path}")
    for problem in found:
        print(f"{page_path}: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
