"""Helpers for the exec-store tests (a module, not conftest, so tests import it by name)."""

from __future__ import annotations

import contextlib
from pathlib import Path


def live_children() -> set[int]:
    """Process ids whose parent is this process (zombies included: unreaped is left behind)."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that just ended
            found.update(int(pid) for pid in (task / "children").read_text().split())
    return found
