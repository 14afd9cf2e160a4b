"""`dw` on an exec: store: the demo signals from a second process, which starts its own child."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path


def test_dw_demo_runs_on_an_exec_store(tmp_path: Path) -> None:
    child = [sys.executable, "-m", "reference_engine.stores.exec.child",
             f"file://{tmp_path / 'store'}?fsync=0"]
    done = subprocess.run(
        [sys.executable, "-m", "reference_engine", "demo", "--json",
         "--store", f"exec:{shlex.join(child)}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded", result
    assert (tmp_path / "store" / "_control").is_dir(), "records went through the child"


def test_dw_store_commands_read_and_write_through_an_exec_store(tmp_path: Path) -> None:
    child = [sys.executable, "-m", "reference_engine.stores.exec.child",
             f"file://{tmp_path / 'store'}?fsync=0"]
    store = ["--store", f"exec:{shlex.join(child)}"]

    def dw(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "reference_engine", *args],
                              capture_output=True, text=True, timeout=120, check=False)

    assert dw("store", "create", "a/b", "--data", "hello", *store).returncode == 0
    again = dw("store", "create", "a/b", "--data", "other", *store)
    assert again.returncode != 0, "the second create must be refused"
    listed = dw("store", "ls", "a", *store)
    assert listed.returncode == 0 and listed.stdout.split() == ["a/b"]
