"""Run a docs page as written: its fenced blocks in page order, in one scratch directory.

Sybil parses each page (its fenced-block lexer and its ``<!-- skip: next "…" -->``
directive); one evaluator, below, runs each block by its language:

* ``bash``, ``sh``, ``console``: each command runs in ``bash`` in the page's directory;
  ``cd`` and ``export`` carry over to the next command. In a block whose commands carry a
  prompt (``$ ``, ``host-a$ ``), the lines without one are the output of the command above.
  A command whose comment says ``exit code N`` or ``exits N`` must exit N, as must one
  followed by ``echo $?`` shown printing N; any other must exit 0.
  ``<waitId>`` and ``<runId>`` stand for the wait and run the page's last command printed
  (its ``dw signal …`` and ``dw resume …`` lines); any other ``<…>`` is for the reader to fill
  in, so its block must be marked. A command whose comment says ``Ctrl-C`` stops it (a loop)
  gets SIGINT after a few seconds. ``pip install`` lines are checked, not run: the extras
  they name must exist, and the test runs against the package already installed.
  A command put in the background (``&``) runs until the page ends.
* ``python``: a block whose first line is ``# <file name>`` is written to that file (and
  compiled); any other runs in the page's namespace, in the page's directory.
* ``toml``, ``ts``, ``yaml``: written to the file their first line names (``#`` or ``//``),
  if it names one.
* ``diff``: its ``-`` lines are replaced by its ``+`` lines in the page's files.
* An untyped or ``text`` block right after a shell block is that block's last output: each
  of its lines, after :func:`normalise`, must be a whole line of the output, in order, with
  ``…`` matching anything.

The page's directory starts empty, or, for a page read in a clone of the repository, as a
copy of the clone's tracked files. Commands find ``dw``, ``pytest`` and ``python`` of the
interpreter running the test, with no ``DW_*`` or ``PYTEST_*`` variable of the test's own.

A marked block is one the reader must fill in, one that needs a real cloud account, or one
that runs the project's own tests (which would run this test again); docs/index.md explains
the marker.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import SkipTest

from sybil import Document, Example, Region, Sybil
from sybil.parsers.markdown import SkipParser
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer

ROOT = Path(__file__).resolve().parents[2]
SHELL = ("bash", "sh", "console")
FILES = ("python", "toml", "ts", "yaml")
OUTPUT = ("", "text")
MARK_REASONS = ("fill in:", "needs a cloud account:", "runs the project's own tests:")
COMMAND_TIMEOUT = 600
STOP_AFTER = 3.0  # a loop's first passes, then Ctrl-C, as the reader would

_PROMPT = re.compile(r"^(?:[\w-]*\$) (.*)$")
_EXIT = re.compile(r"#.*\b(?:exit code|exits) (\d+)")
_FILE_HEADER = re.compile(r"^(?://|#) ([\w./-]+\.\w+)$")
_FILL_IN = re.compile(r"<[A-Za-z][\w -]*>")
_SIGNAL_LINE = re.compile(r"dw signal (\S+) --payload")
_RESUME_LINE = re.compile(r"dw resume (\S+)")


# --- the one normalisation, for ids, seeds, times and paths ------------------------------

_NORMAL: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\x1b\[[0-9;]*m"), ""),
    (re.compile(r"\b(seed[ =`]*)\d+"), r"\1<seed>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<id>"),
    (re.compile(r"\b[0-9a-f]{4,}-?…"), "<id>"),
    (re.compile(r"\b[0-9a-f]{8,}\b"), "<id>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z?"), "<time>"),
    (re.compile(r"\b\d\d:\d\d:\d\d\b"), "<time>"),
    (re.compile(r"\b\d+(?:\.\d+)? ?s\b"), "<secs>"),
    (re.compile(r"(?:/tmp|/var/folders)/[\w./-]+"), "<path>"),
    (re.compile(r"([━─═┅]){2,}"), r"\1"),
    (re.compile(r"[ \t]+"), " "),
)


def normalise(text: str, scratch: Path | None = None) -> str:
    """Ids, seeds, times and paths as placeholders, runs of rules and spaces as one."""
    if scratch is not None:
        text = text.replace(str(scratch), "/tmp/scratch")
    for pattern, replacement in _NORMAL:
        text = pattern.sub(replacement, text)
    return "\n".join(line.strip() for line in text.splitlines())


def unmatched_lines(shown: str, printed: str, scratch: Path | None = None) -> list[str]:
    """The shown lines, normalised, that no later printed line is (``…`` matches anything)."""
    actual = [line for line in normalise(printed, scratch).splitlines() if line]
    at, missing = 0, []
    for line in normalise(shown, scratch).splitlines():
        if not line:
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in line.split("…")))
        for index in range(at, len(actual)):
            if pattern.fullmatch(actual[index]):
                at = index + 1
                break
        else:
            missing.append(line)
    return missing


def _shown(page: Path) -> str:
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)


# --- the page's state --------------------------------------------------------------------

@dataclass
class PageRun:
    """One page's scratch directory, shell state and what its commands printed."""

    page: Path
    scratch: Path
    env: dict[str, str]
    cwd: Path
    output: str = ""
    facts: dict[str, str] = field(default_factory=dict)
    namespace: dict[str, Any] = field(default_factory=dict)
    marked: list[str] = field(default_factory=list)
    returncode: int = 0
    sessions: list[int] = field(default_factory=list)

    @classmethod
    def start(cls, page: Path, scratch: Path, env: dict[str, str] | None = None) -> PageRun:
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("PYTEST_", "DW_", "COV_")) and k != "PYTHONPATH"}
        base["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), base["PATH"]))
        base.update(env or {})
        return cls(page, scratch, base, scratch)


def _commands(source: str) -> Iterator[tuple[str, list[str]]]:
    """(command, the output lines shown after it) for each command of a shell block."""
    joined = source.replace("\\\n", " ").splitlines()
    prompted = any(_PROMPT.match(line) for line in joined)
    current: tuple[str, list[str]] | None = None
    for line in joined:
        match = _PROMPT.match(line) if prompted else None
        if prompted and match is None:
            if current is not None:
                current[1].append(line)
            continue
        command = match.group(1) if match else line
        if not command.strip() or command.lstrip().startswith("#"):
            continue
        if current is not None:
            yield current
        current = (command, [])
    if current is not None:
        yield current


def _check_install(command: str) -> None:
    """``pip install …`` names extras the package has; the test does not reinstall it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = set(project["optional-dependencies"])
    for word in shlex.split(command.partition("#")[0])[2:]:
        named = re.fullmatch(r"(?:\.|dw-testing|dw_testing)(?:\[([\w,-]+)\])?", word)
        if named is None:
            if word.startswith("-") or word in {"."}:
                continue
            raise AssertionError(f"pip install names {word!r}, not this package")
        unknown = set(filter(None, (named.group(1) or "").split(","))) - extras
        assert not unknown, f"pip install names extras the package lacks: {sorted(unknown)}"


def run_command(run: PageRun, command: str,
                expected: int | None = None) -> subprocess.CompletedProcess[str]:
    """One command in ``bash``, in the page's directory and environment; keeps cd/export.

    ``$?`` is the last command's status; a command the page puts in the background keeps
    running until the page ends.
    """
    for name, value in run.facts.items():
        command = command.replace(f"<{name}>", value)
    left = _FILL_IN.findall(command.partition(" #")[0])
    assert not left, f"{command!r} has {left} for the reader to fill in: mark its block"
    if expected is None:
        expected = int(found.group(1)) if (found := _EXIT.search(command)) else 0
    parts = command.split(" && ")
    installs = [p for p in parts if re.match(r"\s*(?:python -m )?pip install\b", p)]
    for install in installs:
        _check_install(install)
    command = " && ".join(p for p in parts if p not in installs)
    if not command.strip():
        return subprocess.CompletedProcess(command, 0, "", "")
    state = run.scratch.parent / f".{run.scratch.name}-shell"
    script = (f"cd {shlex.quote(str(run.cwd))}\n(exit {run.returncode})\n{command}\n__rc=$?\n"
              f"pwd > {shlex.quote(str(state))}.cwd\n"
              f"env -0 > {shlex.quote(str(state))}.env\nexit $__rc\n")
    done = _bash(script, run.env, stop="Ctrl-C" in command.partition(" #")[2],
                 sessions=run.sessions)
    run.returncode = done.returncode
    printed = done.stdout + done.stderr
    assert done.returncode == expected, (
        f"{_shown(run.page)}: `{command}` exited {done.returncode}, the page says "
        f"{expected}; it printed:\n{printed[-3000:]}")
    run.cwd = Path(Path(f"{state}.cwd").read_text().strip())
    run.env = dict(item.split("=", 1) for item in
                   Path(f"{state}.env").read_text().split("\0") if "=" in item)
    for name in ("_", "SHLVL", "PWD", "OLDPWD", "__rc"):
        run.env.pop(name, None)
    run.output = printed
    if (wait := _SIGNAL_LINE.findall(printed)):
        run.facts["waitId"] = wait[-1]
    if (resumed := _RESUME_LINE.findall(printed)):
        run.facts["runId"] = resumed[-1]
    return done


def _bash(script: str, env: dict[str, str], *, stop: bool,
          sessions: list[int]) -> subprocess.CompletedProcess[str]:
    """Run ``script``; a loop the page stops with Ctrl-C gets SIGINT after ``STOP_AFTER`` s."""
    with subprocess.Popen(["bash", "-c", script], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                          start_new_session=True) as proc:
        sessions.append(proc.pid)
        try:
            out, err = proc.communicate(timeout=STOP_AFTER if stop else COMMAND_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT if stop else signal.SIGKILL)
            out, err = proc.communicate(timeout=COMMAND_TIMEOUT)
        return subprocess.CompletedProcess(script, proc.returncode, out, err)


# --- the blocks --------------------------------------------------------------------------

@dataclass(frozen=True)
class Block:
    language: str
    source: str
    line: int
    after_shell: bool


def _write_file(run: PageRun, block: Block) -> bool:
    first = block.source.partition("\n")[0]
    named = _FILE_HEADER.match(first)
    if named is None:
        return False
    target = run.cwd / named.group(1)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(block.source, encoding="utf-8")
    if target.suffix == ".py":  # a file the reader saves must at least be Python
        compile(block.source, str(target), "exec")
    return True


def _apply_diff(run: PageRun, block: Block) -> None:
    old = "\n".join(line[1:] for line in block.source.splitlines() if line.startswith("-"))
    new = "\n".join(line[1:] for line in block.source.splitlines() if line.startswith("+"))
    hits = [p for p in run.cwd.rglob("*")
            if p.is_file() and old in p.read_text(encoding="utf-8", errors="replace")]
    assert len(hits) == 1, f"the diff at line {block.line} matches {len(hits)} files"
    hits[0].write_text(hits[0].read_text(encoding="utf-8").replace(old, new, 1),
                       encoding="utf-8")


def _run_python(run: PageRun, block: Block) -> None:
    code = compile("\n" * (block.line) + block.source, str(run.page), "exec")
    before = Path.cwd()
    sys.path.insert(0, str(run.cwd))
    os.chdir(run.cwd)
    try:
        exec(code, run.namespace)
    finally:
        os.chdir(before)
        sys.path.remove(str(run.cwd))


def evaluate(run: PageRun, block: Block) -> None:
    """Run one block of the page, by its language (see the module's docstring)."""
    if block.language in SHELL:
        commands = list(_commands(block.source))
        for index, (command, shown) in enumerate(commands):
            following = commands[index + 1] if index + 1 < len(commands) else ("", [])
            status = following[0].strip() == "echo $?" and "".join(following[1]).strip()
            done = run_command(run, command, int(status) if status else None)
            missing = unmatched_lines("\n".join(shown), done.stdout + done.stderr, run.scratch)
            assert not missing, _mismatch(run, block, command, missing)
    elif block.language in FILES and _write_file(run, block):
        return
    elif block.language == "python":
        _run_python(run, block)
    elif block.language == "diff":
        _apply_diff(run, block)
    elif block.language in OUTPUT and block.after_shell:
        missing = unmatched_lines(block.source, run.output, run.scratch)
        assert not missing, _mismatch(run, block, "the block above", missing)


def _mismatch(run: PageRun, block: Block, command: str, missing: list[str]) -> str:
    return (f"{_shown(run.page)}:{block.line}: the output of `{command}` has no "
            f"line like {missing[0]!r} (after {len(missing) - 1} more), normalised as "
            f"tests/support/doc_pages.py says; it printed:\n{run.output[-3000:]}")


# --- Sybil: parse the page into blocks and skip directives -------------------------------

class _BlockParser:
    """Every fenced block, with its language and whether a shell block is right above it."""

    lexer = FencedCodeBlockLexer(language=r"[\w-]*")

    def __call__(self, document: Document) -> Iterable[Region]:
        previous_end, previous_shell = -1, False
        for lexed in self.lexer(document):
            language = lexed.lexemes["language"]
            between = document.text[previous_end:lexed.start] if previous_end >= 0 else "x"
            block = Block(language, str(lexed.lexemes["source"]),
                          document.text.count("\n", 0, lexed.start) + 1,
                          previous_shell and not between.strip())
            previous_end, previous_shell = lexed.end, language in SHELL
            yield Region(lexed.start, lexed.end, block, _evaluate_example)


def _evaluate_example(example: Example) -> None:
    evaluate(example.namespace["page_run"], example.parsed)


SYBIL = Sybil(parsers=[_BlockParser(), SkipParser()])


def parse(page: Path) -> Document:
    return SYBIL.parse(page)


def copy_clone(scratch: Path) -> None:
    """The repository's tracked files, as a fresh clone has them, into ``scratch``."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        source = ROOT / name
        if source.is_file():
            target = scratch / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)


def run_page(page: Path, scratch: Path, env: dict[str, str] | None = None, *,
             clone: bool = False) -> PageRun:
    """Every block of ``page`` in order; a marked block is listed in ``marked``, not run.

    ``scratch`` is the page's directory (made if missing; the shell's state is kept beside
    it). ``clone``: the page is read in a clone, so its directory starts as one.
    """
    scratch.mkdir(parents=True, exist_ok=True)
    if clone:
        copy_clone(scratch)
    run = PageRun.start(page, scratch, env)
    document = parse(page)
    document.namespace["page_run"] = run
    run.namespace = {"__name__": "__docs_page__"}
    try:
        for example in document:
            try:
                example.evaluate()
            except SkipTest as marked:
                run.marked.append(f"{_shown(page)}:{example.line}: {marked}")
    finally:
        for session in run.sessions:  # what the page left running in the background
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(session, signal.SIGTERM)
    return run


def marks(page: Path) -> list[tuple[int, str]]:
    """(line, reason) of every ``<!-- skip: next "…" -->`` on the page."""
    found = []
    for example in parse(page):
        if isinstance(example.parsed, tuple) and example.parsed[0] in ("next", "start"):
            found.append((example.line, str(example.parsed[1]).strip().strip("\"'")))
    return found


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
