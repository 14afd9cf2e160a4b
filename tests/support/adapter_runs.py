"""One suite run as docs/explanation/example-adapters.md makes it: ``PYTHONPATH=. pytest
--dw-store=…`` in examples/adapters (whose pytest.ini makes it the rootdir), judged from its
JSON report."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ROOT / "examples" / "adapters"


@dataclass(frozen=True)
class SuiteRun:
    returncode: int
    tests: list[dict[str, Any]]
    tail: str

    def failed(self) -> list[str]:
        return [t["nodeid"] for t in self.tests if t["outcome"] not in {"PASS", "SKIP", "XFAIL"}]


def run_on_adapter(store: str, needs: tuple[str, ...], tmp_path: Path, *options: str,
                   timeout: float) -> SuiteRun:
    """The suite on ``store`` with ``options``; skips when a package in ``needs`` is missing."""
    missing = [name for name in needs if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}: pip install '.[test,slow]'")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ADAPTERS), env.get("PYTHONPATH", "")) if p)
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--dw-store={store}",
               *options, "-q", "--tb=short", "--no-header", "--dw-report", str(report)]
    finished = subprocess.run(command, cwd=ADAPTERS, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
    tail = "\n".join((finished.stdout + finished.stderr).strip().splitlines()[-40:])
    assert report.is_file(), f"the run wrote no report:\n{tail}"
    return SuiteRun(finished.returncode, json.loads(report.read_text(encoding="utf-8"))["tests"],
                    tail)
