"""Claims of the pages that no command shows: checked against the code they describe."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
from support.doc_pages import ROOT, pages, parse

from reference_engine.cli.main import dw

CLI_PAGE = ROOT / "docs" / "reference" / "cli.md"


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> dict[str, click.Command]:
    ctx = click.Context(group)
    found: dict[str, click.Command] = {}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            found.update(_commands(command, (*prefix, name)))
        elif command is not None:
            found[" ".join(("dw", *prefix, name))] = command
    return found


def _lacking(option: str) -> set[str]:
    return {name for name, command in _commands(dw).items()
            if not any(option in getattr(p, "opts", ()) for p in command.params)}


def test_cli_page_names_each_command_without_store_or_json() -> None:
    """cli.md's Conventions names, as exceptions, exactly the commands lacking an option."""
    text = CLI_PAGE.read_text(encoding="utf-8")
    conventions = text.split("## Conventions", 1)[1].split("| Option |", 1)[0]
    named = set(re.findall(r"`(dw [a-z -]+?)`", conventions))
    assert named == _lacking("--store") | _lacking("--json"), conventions
    for name in _lacking("--store"):
        assert f"but `{name}`" in conventions, f"cli.md must say {name} takes no --store"


def test_install_lines_say_how_to_install_from_a_clone() -> None:
    """Each shell line installing from an index names its extras from a clone too."""
    wrong = []
    for page in pages():
        for example in parse(page):
            block = example.parsed
            if getattr(block, "language", None) not in ("bash", "sh", "console"):
                continue
            for line in block.source.splitlines():
                index = re.search(r"pip install (?:-e \. )?['\"]dw-testing\[([\w,]+)\]['\"]", line)
                if index and "from a clone: pip install " not in line:
                    wrong.append(f"{page.relative_to(ROOT)}:{example.line}: {line.strip()}")
                elif index and f"[{index.group(1)}]" not in line.split("from a clone:")[1]:
                    wrong.append(f"{page.relative_to(ROOT)}:{example.line}: other extras")
    assert wrong == [], "add  # from a clone: pip install '.[EXTRAS]'  to:\n" + "\n".join(wrong)


def _shown_after(page_text: str, command: str) -> list[str]:
    """The output lines a page shows under ``$ command`` (up to the next prompt or fence)."""
    lines = page_text.split(command, 1)[1].splitlines()[1:]
    shown = []
    for line in lines:
        if line.startswith("```") or re.match(r"^[\w-]*\$ ", line):
            break
        shown.append(line.strip())
    return shown


def test_multi_host_cleanup_shows_all_that_is_left_after_serve_and_delete(
        tmp_path: Path) -> None:
    """multi-host.md's last `dw store ls`, after the page's `dw serve`: exactly what is left."""
    from click.testing import CliRunner

    page = (ROOT / "docs" / "how-to" / "multi-host.md").read_text(encoding="utf-8")
    shown = _shown_after(page, "$ dw store ls")
    store = ["--store", f"file://{tmp_path / 'store'}"]
    flow = tmp_path / "approval.yaml"
    runner = CliRunner()

    def call(*args: str) -> str:
        return runner.invoke(dw, [*args, *store], catch_exceptions=False).stdout

    flow.write_text(call("demo", "--print-workflow"), encoding="utf-8")
    call("run", str(flow), "--run-id", "release-42")
    wait_id = json.loads(call("waits", "--json"))["waits"][0]["waitId"]
    call("signal", wait_id, "--payload", '{"approved": true}')
    call("resume", "release-42")
    call("serve", "--once")
    call("delete", "release-42")
    assert json.loads(call("store", "ls", "--json"))["keys"] == shown


def test_no_page_counts_tests_by_hand() -> None:
    """A count of tests goes stale with the next test added: pages give the command instead."""
    counted = re.compile(r"\b\d[\d,]* (?:passed|failed|skipped|tests)\b")
    found = [f"{page.relative_to(ROOT)}:{number}: {line.strip()[:90]}"
             for page in pages()
             for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
             if counted.search(line) and "killed by" not in line]
    assert found == [], "\n".join(found)


def test_write_your_own_tests_imports_what_the_tutorials_store_defines() -> None:
    """Its examples run on the tutorial's store, so they import the names that store has."""
    tutorial = ROOT / "docs" / "tutorial.md"
    store = next(block.source for example in parse(tutorial)
                 if (block := example.parsed) is not None
                 and getattr(block, "source", "").startswith("# mystore.py"))
    defined = set(re.findall(r"^(?:def|class) (\w+)|^(\w+)\s*[:=]", store, re.MULTILINE))
    names = {name for pair in defined for name in pair if name}
    page = (ROOT / "docs" / "how-to" / "write-your-own-tests.md").read_text(encoding="utf-8")
    imported = set(re.findall(r"from mystore import (\w+)", page))
    assert imported and imported <= names, f"mystore.py defines {sorted(names)}"
