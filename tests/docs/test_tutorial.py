"""docs/tutorial.md, run as written: its files and commands, in an empty directory.

The page's files are its code blocks whose first line is ``# <file name>``; its bug is the
one ``diff`` block; its commands are the ``pytest`` and ``dw`` lines of its ``bash`` blocks
(``pip install`` is skipped: this interpreter has the package). The green run must pass and
show the capabilities the page shows; the red one must fail with the line the page shows,
which names the clause. Both use ``--dw-profile=quick``, as the page does, and run side by
side: about 12 s of CPU in all.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "tutorial.md"
RUN_TIMEOUT = 300
MAX_LINES = 150


def _fenced() -> list[tuple[str, str]]:
    """Every fenced block of the page, as (language, text), in page order."""
    blocks: list[tuple[str, str]] = []
    language, lines = None, []
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("```") and language is None:
            language, lines = line[3:].strip(), []
        elif line.startswith("```"):
            blocks.append((language or "", "\n".join(lines) + "\n"))
            language = None
        elif language is not None:
            lines.append(line)
    return blocks


def _blocks(language: str) -> list[str]:
    return [text for kind, text in _fenced() if kind == language]


def _files() -> dict[str, str]:
    found: dict[str, str] = {}
    for language in ("python", "toml"):
        for block in _blocks(language):
            first = block.partition("\n")[0]
            name = re.fullmatch(r"# ([\w.-]+)", first)
            if name:
                found[name.group(1)] = block
    return found


def _commands() -> list[list[str]]:
    lines = [line.strip() for block in _blocks("bash") for line in block.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith(("pytest ", "dw "))]


def _bug() -> tuple[str, str]:
    (diff,) = _blocks("diff")
    removed = [line[1:] for line in diff.splitlines() if line.startswith("-")]
    added = [line[1:] for line in diff.splitlines() if line.startswith("+")]
    assert len(removed) == len(added) == 1, "the page's bug is one line changed"
    return removed[0], added[0]


def _shown_output() -> list[str]:
    """The page's plain blocks: what each run prints, in the order of the runs."""
    return _blocks("")


def _start(argv: list[str], cwd: Path) -> subprocess.Popen[str]:
    program = {"pytest": ["-m", "pytest"], "dw": ["-m", "reference_engine"]}[argv[0]]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "DW_")) and k != "PYTHONPATH"}
    env["COLUMNS"] = "400"  # the failure line is long; the page shows it whole
    return subprocess.Popen([sys.executable, *program, *argv[1:]], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(started: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = started.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        started.kill()
        out, err = started.communicate()
    return started.returncode, out, err


def _project(directory: Path, *, with_bug: bool) -> Path:
    directory.mkdir()
    for name, text in _files().items():
        (directory / name).write_text(text, encoding="utf-8")
    if with_bug:
        store = directory / "mystore.py"
        removed, added = _bug()
        store.write_text(store.read_text(encoding="utf-8").replace(removed, added),
                         encoding="utf-8")
    return directory


def test_the_tutorial_is_short_and_complete() -> None:
    assert len(PAGE.read_text(encoding="utf-8").splitlines()) < MAX_LINES
    assert set(_files()) == {"mystore.py", "pyproject.toml"}
    commands = _commands()
    assert [argv[0] for argv in commands] == ["pytest", "dw"], commands
    assert all("quick" in " ".join(argv) for argv in commands), "keep both runs quick"
    removed, _ = _bug()
    assert removed in _files()["mystore.py"], "the diff must change a line of mystore.py"


def test_the_tutorial_goes_green_then_red_naming_the_clause(tmp_path: Path) -> None:
    green_command, red_command = _commands()
    green_shown, red_shown = _shown_output()
    # The two runs are independent projects, so they run side by side.
    red_dir = _project(tmp_path / "red", with_bug=True)
    green_run = _start(green_command, _project(tmp_path / "green", with_bug=False))
    red_run = _start(red_command, red_dir)
    green_code, green_out, green_err = _finish(green_run)
    red_code, red_out, red_err = _finish(red_run)

    assert green_code == 0, green_out[-4000:] + green_err[-2000:]
    shown_line = green_shown.strip().splitlines()[0]
    printed = next((line for line in green_out.splitlines()
                    if line.startswith(shown_line.split(":")[0] + ":")), "")
    shown = set(re.findall(r"(\w+) (PASS|SKIP|FAIL)", shown_line))
    assert shown == set(re.findall(r"(\w+) (PASS|SKIP|FAIL)", printed)), (
        f"the tutorial shows {shown_line!r}, the run printed {printed!r}")
    skips = sum(outcome == "SKIP" for _, outcome in shown)
    words = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
    assert f"The {words.get(skips, skips)} skips" in PAGE.read_text(encoding="utf-8"), (
        f"the tutorial's line has {skips} skips; its prose must say so")

    assert red_code == 1, red_out[-4000:] + red_err[-2000:]
    failure = red_shown.strip()
    assert "C-CREATE-1" in failure, "the page's failure must name the clause"
    assert failure in red_out, f"the tutorial shows {failure!r}; the run printed:\n" + (
        red_out[-4000:])
    assert (red_dir / "out" / "report.html").is_file()
