"""Rules of the codebase that a reviewer would otherwise check by hand."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("reference_engine", "dw_testing", "conformance")
# A package may import only itself and the packages after it in this order.
ALLOWED = {
    "reference_engine": {"reference_engine"},
    "dw_testing": {"dw_testing", "reference_engine"},
    "conformance": {"conformance", "dw_testing", "reference_engine"},
}


def _imported_top_levels(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _strings_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def test_imports_run_one_way() -> None:
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            backwards = (_imported_top_levels(path) & set(PACKAGES)) - ALLOWED[package]
            if backwards:
                offenders.append(f"{path.relative_to(ROOT)} imports {sorted(backwards)}")
    assert not offenders, "imports must run conformance -> dw_testing -> reference_engine:\n" + (
        "\n".join(offenders)
    )


# Inside dw_testing, each room may import only the rooms listed here (and reference_engine).
# The kit is the floor: authors import it without pytest's plugin machinery.
ROOMS_ALLOWED = {
    "kit": set(),
    "history": {"kit"},
    "models": {"kit", "history"},
    # The judge records handles (kit) and checks their histories (history).
    "judge": {"kit", "history"},
    "report": {"kit", "history"},
    "emulators": {"kit", "plugin"},
    "plugin": {"kit", "history", "models", "report", "judge"},
    # emulators: the network-only mutants run the real S3 client on a moto server.
    "selftest": {"kit", "plugin", "report", "emulators"},
    "commands": {"kit", "plugin", "report", "selftest", "judge"},
}


def _dw_testing_rooms_imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    rooms: set[str] = set()
    for node in ast.walk(tree):
        modules = (
            [alias.name for alias in node.names] if isinstance(node, ast.Import)
            else [node.module] if isinstance(node, ast.ImportFrom) and node.module
            and node.level == 0 else []
        )
        for module in modules:
            parts = module.split(".")
            if parts[0] == "dw_testing" and len(parts) > 1:
                rooms.add(parts[1])
    return rooms


def test_dw_testing_rooms_import_only_the_rooms_below_them() -> None:
    offenders = []
    for room, allowed in ROOMS_ALLOWED.items():
        for path in sorted((ROOT / "dw_testing" / room).rglob("*.py")):
            extra = _dw_testing_rooms_imported(path) - allowed - {room}
            if extra:
                offenders.append(f"{path.relative_to(ROOT)} imports dw_testing.{sorted(extra)}")
    assert not offenders, "a room of dw_testing imports one above it:\n" + "\n".join(offenders)


def test_every_dw_testing_folder_is_a_known_room() -> None:
    folders = {p.name for p in (ROOT / "dw_testing").iterdir()
               if p.is_dir() and p.name != "__pycache__"}
    assert folders <= set(ROOMS_ALLOWED), (
        f"dw_testing has folders {sorted(folders - set(ROOMS_ALLOWED))} with no import rule: "
        "add them to ROOMS_ALLOWED in tests/test_project_rules.py"
    )


# Inside reference_engine, the rooms follow a run, from the command line down to the shared
# base: each may import only the rooms after it in this order. The facade (``engine.py``)
# sits under the command line; the base is what every room shares.
ENGINE_ROOM_ORDER = ("cli", "engine", "runs", "serving", "waits", "workflows", "records",
                     "stores", "base")
# runs and serving are siblings: the engine drives both, and neither imports the other.
ENGINE_SIBLINGS = {frozenset({"runs", "serving"})}
ENGINE_BASE = {"errors", "refusals", "clock", "secrets"}
# The package's own face may reach anywhere, lazily: `python -m reference_engine` and the
# names `reference_engine` exports.
ENGINE_FACE = {"__init__", "__main__"}
ENGINE_TOP_LEVEL_LIMIT = 8


def _engine_room(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "reference_engine" or len(parts) == 1:
        return None
    name = parts[1]
    if name in ENGINE_BASE:
        return "base"
    return name if name in ENGINE_ROOM_ORDER else None


def _engine_imports_against_the_order(path: Path, module: str = "") -> list[str]:
    module = module or ".".join(path.relative_to(ROOT).with_suffix("").parts)
    source = _engine_room(module)
    if source is None:
        return []
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    offences = []
    for node in ast.walk(tree):
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and node.module
                 and node.level == 0 else [])
        for name in names:
            target = _engine_room(name)
            if target is None or target == source:
                continue
            upward = ENGINE_ROOM_ORDER.index(target) < ENGINE_ROOM_ORDER.index(source)
            if upward or frozenset({source, target}) in ENGINE_SIBLINGS:
                offences.append(f"{module} ({source}) imports {name} ({target})")
    return offences


def test_reference_engine_rooms_import_only_the_rooms_below_them() -> None:
    offenders = [
        offence
        for path in sorted((ROOT / "reference_engine").rglob("*.py"))
        if path.stem not in ENGINE_FACE or path.parent.name != "reference_engine"
        for offence in _engine_imports_against_the_order(path)
    ]
    assert not offenders, (
        "reference_engine's rooms run " + " -> ".join(ENGINE_ROOM_ORDER)
        + "; these imports run against that order:\n" + "\n".join(offenders))


def test_every_reference_engine_folder_and_top_level_module_has_a_place() -> None:
    top = ROOT / "reference_engine"
    folders = {p.name for p in top.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in top.glob("*.py")}
    assert folders <= set(ENGINE_ROOM_ORDER), (
        f"reference_engine has rooms {sorted(folders - set(ENGINE_ROOM_ORDER))} with no place "
        "in ENGINE_ROOM_ORDER (tests/test_project_rules.py): add them where they belong")
    assert modules <= ENGINE_BASE | ENGINE_FACE | {"engine"}, (
        f"modules {sorted(modules - ENGINE_BASE - ENGINE_FACE - {'engine'})} sit at "
        "reference_engine's top level, which holds only the facade and the shared base: "
        "move them into the room that uses them")
    assert len(modules) <= ENGINE_TOP_LEVEL_LIMIT


def test_engine_room_checker_sees_an_upward_and_a_sideways_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from reference_engine.runs.executor import Executor\n"
                      "from reference_engine.records.keys import runs_root\n"
                      "import reference_engine.errors\n")
    assert _engine_imports_against_the_order(sample, "reference_engine.waits.sample") == [
        "reference_engine.waits.sample (waits) imports reference_engine.runs.executor (runs)"]
    sideways = tmp_path / "sideways.py"
    sideways.write_text("from reference_engine.runs.claims import Claims\n")
    assert _engine_imports_against_the_order(sideways, "reference_engine.serving.x") == [
        "reference_engine.serving.x (serving) imports reference_engine.runs.claims (runs)"]


def test_import_checker_sees_a_backwards_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from dw_testing.kit.spec import StoreSpec\nimport conformance.x\n")
    assert _imported_top_levels(sample) & set(PACKAGES) == {"dw_testing", "conformance"}


# Spelled in pieces so that this file, which names the calls it bans, does not match itself
# (nor the before-stop hook's grep for the same calls).
_NAP = "sl" + "eep"
SLEEP = re.compile(rf"\btime\.{_NAP}\(|from time import {_NAP}|asyncio\.{_NAP}\(")


def _sleep_users() -> list[str]:
    found = []
    for folder in ("tests", "conformance"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if SLEEP.search(text):
                found.append(str(path.relative_to(ROOT)))
    return found


def test_sleep_detector_sees_a_sleep() -> None:
    assert SLEEP.search(f"import time\ntime.{_NAP}(0.1)\n")
    assert SLEEP.search(f"from time import {_NAP}\n")
    assert not SLEEP.search("clock.advance(5)  # no sleeping here\n")


def test_no_test_orders_events_with_sleep() -> None:
    users = _sleep_users()
    assert not users, (
        "these files call sleep; order concurrent steps with GatedStore gates and FakeClock "
        f"instead: {users}"
    )


def test_readme_opens_with_the_two_commands_and_ci_runs_the_second() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, flags=re.S)
    assert blocks[:2] == [
        "pip install . && dw demo",
        "pip install '.[test]' && pytest -m \"not slow\" -n 2",
    ]
    first_prose = readme.split("```bash", 1)[0]
    assert first_prose.strip() == "# dw-testing", "nothing may stand before the two commands"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert blocks[1] in ci.splitlines(), ".ci/run must run README command 2 verbatim"


def test_importing_the_kit_needs_no_test_runner() -> None:
    """``import dw_testing`` works with only the base install: no pytest, no Hypothesis."""
    import subprocess
    import sys

    probe = ("import sys, dw_testing; "
             "print(sorted(m for m in ('pytest', 'hypothesis', 'packaging') if m in sys.modules))")
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           check=True, cwd=ROOT).stdout.strip()
    assert found == "[]", f"import dw_testing pulled in {found}; import them lazily"


# The old design notes do not ship: code, tests and docs cite a clause of docs/contract.md
# (C-...) or a docs page. Spelled in pieces, so this file does not match itself.
OLD_NOTES = "".join(("SP", "EC"))  # joined at run time: a folded constant would match
CITATION_SCOPE = ("dw_testing", "reference_engine", "conformance", "tests", "benchmarks",
                  "docs", "README.md")


def _old_citations() -> list[str]:
    found = []
    for name in CITATION_SCOPE:
        base = ROOT / name
        paths = [base] if base.is_file() else sorted(
            p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        for path in paths:
            data = path.read_bytes()
            if OLD_NOTES.encode() not in data:
                continue
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if OLD_NOTES in line:
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    return found


def test_nothing_cites_the_old_design_notes() -> None:
    found = _old_citations()
    assert not found, (
        "cite a clause of docs/contract.md (C-...) or a docs page instead:\n"
        + "\n".join(found))


def test_room_checker_sees_a_room_imported_upwards(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from dw_testing.plugin.session import DwSession\n"
                      "import dw_testing.kit.gates\n"
                      "from reference_engine.engine import Engine\n")
    rooms = _dw_testing_rooms_imported(sample)
    assert rooms == {"plugin", "kit"}
    assert rooms - ROOMS_ALLOWED["kit"] - {"kit"} == {"plugin"}, "kit importing plugin must show"


_REPO_PATH = re.compile(
    r"`((?:tests|conformance|dw_testing|reference_engine|benchmarks|examples|scripts|docs)"
    r"/[\w./-]+\.(?:py|md|ts|js|yaml|json))`")


def repo_paths_named_but_missing(text: str) -> list[str]:
    return [path for path in _REPO_PATH.findall(text) if not (ROOT / path).exists()]


def test_the_docs_name_only_files_that_exist() -> None:
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
    missing = {
        str(page.relative_to(ROOT)): gone
        for page in pages
        if (gone := repo_paths_named_but_missing(page.read_text(encoding="utf-8")))
    }
    assert not missing, f"these pages name files that moved or went; fix the paths: {missing}"


def test_the_docs_path_check_sees_a_moved_file() -> None:
    assert repo_paths_named_but_missing("see `tests/test_kill_matrix.py` and `README.md`") == [
        "tests/test_kill_matrix.py"]
    assert repo_paths_named_but_missing("see `tests/selftest/test_kill_matrix.py`") == []


# tests/ mirrors the rooms: a folder per room of reference_engine or dw_testing, plus the
# few that cut across them.
TESTS_ACROSS_ROOMS = {
    "support": "helpers, steps and stores the test folders share",
    "docs": "the docs' own examples, run",
    "multihost": "two hosts on one store",
    "slow": "real servers and soaks (-m slow)",
    "ci": "the conformance action (.github/actions/conformance) and its gate script",
}


def test_every_tests_folder_mirrors_a_room() -> None:
    rooms = {"engine"} | set(ENGINE_ROOM_ORDER) | set(ROOMS_ALLOWED)
    folders = {p.name for p in (ROOT / "tests").iterdir()
               if p.is_dir() and p.name != "__pycache__"}
    strays = folders - rooms - set(TESTS_ACROSS_ROOMS)
    assert not strays, (
        f"tests/ has folders {sorted(strays)} that mirror no room of the packages: move their "
        "tests into the folder of the room they test, or list a cross-cutting folder in "
        "TESTS_ACROSS_ROOMS (tests/test_project_rules.py)")
