"""What the report says about a run beyond its outcomes: versions, the replay command,
the contract clauses a test cites, and the calls of a history violation."""

from __future__ import annotations

import platform
import shlex
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import pytest

# @pytest.mark.dw_clause("C-CREATE-1", ...): the docs/contract.md clause ids a test checks.
CLAUSE_MARK = "dw_clause"
PACKAGES = ("dw-testing", "pytest", "hypothesis")
# Options that name where this run writes its outputs; a replay need not repeat them.
_OUTPUT_OPTIONS = ("--dw-report", "--junit-xml", "--junitxml")


def versions() -> dict[str, str]:
    """Python and the packages that decide what a run does, as installed."""
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def replay_command(args: Sequence[str], seed: int | None) -> str:
    """``python -m pytest`` with this run's arguments, its seed pinned, outputs left out."""
    kept: list[str] = []
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        name = arg.partition("=")[0]
        if name in (*_OUTPUT_OPTIONS, "--dw-seed"):
            skip_next = "=" not in arg
            continue
        kept.append(arg)
    if seed is not None:
        kept.append(f"--dw-seed={seed}")
    return shlex.join(["python", "-m", "pytest", *kept])


def clauses_of(item: pytest.Item) -> list[str]:
    """The contract clause ids ``item`` cites, in order, each once."""
    found: list[str] = []
    for mark in item.iter_markers(CLAUSE_MARK):
        found += [str(arg) for arg in mark.args]
    return list(dict.fromkeys(found))


def history_of(exc: BaseException) -> dict[str, Any] | None:
    """The calls of a history violation (``HistoryViolation.to_json()``), else ``None``."""
    from dw_testing.history.violation import HistoryViolation

    return exc.to_json() if isinstance(exc, HistoryViolation) else None


def failure_message(report: pytest.TestReport) -> str:
    """The whole exception text of a failed phase (``reason`` keeps only its first line)."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        message = str(crash.message)
    else:
        message = "" if isinstance(report.longrepr, tuple) else str(report.longrepr or "")
    # What the plugin found out about the failure (an emulator known to race) goes with it.
    notes = [text for title, text in report.sections if title.startswith("dw-testing emulator")]
    return "\n".join([message, *notes]) if notes else message
