"""The reference pages are generated from the code and current; the index links every page;
every environment variable the code reads is documented; every dw command is walked through
in docs/reference/cli.md."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import click

from reference_engine.cli.main import dw

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "reference_pages", ROOT / "scripts" / "reference_pages.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("reference_pages", module)
    spec.loader.exec_module(module)
    return module


def test_every_reference_page_is_current() -> None:
    stale = _generator().stale_pages()
    assert not stale, (f"stale: {', '.join(stale)}; run python scripts/reference_pages.py "
                       "--write and commit docs/reference/")


def test_the_index_links_every_page() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([^)#]+)", index))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")} - {"index.md"}
    missing = sorted(pages - linked)
    assert not missing, f"docs/index.md does not link: {missing}"
    broken = sorted(p for p in linked if not (DOCS / p).resolve().is_file())
    assert not broken, f"docs/index.md links pages that do not exist: {broken}"


def _dw_variables() -> set[str]:
    found: set[str] = set()
    for package in ("reference_engine", "dw_testing", "conformance"):
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            found |= {node.value for node in ast.walk(tree)
                      if isinstance(node, ast.Constant) and isinstance(node.value, str)
                      and re.fullmatch(r"DW_[A-Z_]+", node.value)}
    return found


def test_every_environment_variable_the_code_reads_is_documented() -> None:
    generator = _generator()
    undocumented = _dw_variables() - set(generator.ENVIRONMENT) - set(
        generator.NOT_ENVIRONMENT)
    assert not undocumented, (f"describe {sorted(undocumented)} in ENVIRONMENT in "
                              "scripts/reference_pages.py, then --write")
    stale = set(generator.ENVIRONMENT) - _dw_variables()
    assert not stale, f"ENVIRONMENT describes variables no code reads: {sorted(stale)}"


def test_every_dw_command_is_walked_through_in_the_cli_page() -> None:
    cli_page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    ctx = click.Context(dw, info_name="dw")
    missing = [name for name in dw.list_commands(ctx)
               if f"`dw {name}" not in cli_page]
    assert not missing, f"docs/reference/cli.md never shows: {missing}"
