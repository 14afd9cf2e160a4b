"""The environment for a child Python process that must import what this process imports.

pytest puts directories on ``sys.path`` that a fresh interpreter does not have: its
``pythonpath`` setting (``pythonpath = ["src"]``, the usual src layout), the rootdir of a
test in the default import mode, and the directory ``python -m pytest`` ran from. A child
started with ``sys.executable -m ...`` gets none of them, so a store importable in the test
fails to import in its cross-process tests. :func:`child_environment` passes them on in
``PYTHONPATH``, ahead of what ``PYTHONPATH`` already held.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Mapping

__all__ = ["child_environment", "extra_import_paths"]


@functools.cache
def _fresh_sys_path(executable: str, pythonpath: str) -> frozenset[str]:
    """The ``sys.path`` of a fresh ``executable`` with this ``PYTHONPATH`` (cached)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    shown = subprocess.run(
        [executable, "-c", "import json, sys; print(json.dumps(sys.path[1:]))"],
        capture_output=True, text=True, env=env, check=True, timeout=60)
    return frozenset(os.path.abspath(p) for p in json.loads(shown.stdout) if p)


def extra_import_paths() -> list[str]:
    """Directories on this process's ``sys.path`` that a fresh interpreter lacks, in order."""
    fresh = _fresh_sys_path(sys.executable, os.environ.get("PYTHONPATH", ""))
    extra: list[str] = []
    for entry in sys.path:
        path = os.path.abspath(entry or os.curdir)
        if path not in fresh and path not in extra and os.path.isdir(path):
            extra.append(path)
    return extra


def child_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """``os.environ`` plus ``extra``, with :func:`extra_import_paths` put on ``PYTHONPATH``."""
    env = {**os.environ, **(extra or {})}
    inherited = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    paths = [*extra_import_paths(), *inherited]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env
