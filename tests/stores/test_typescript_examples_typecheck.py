"""Every TypeScript example type-checks under the Deno that `pip install '.[test]'` brings:
a store author copies these files, and ``deno check`` is the first thing their editor runs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "typescript"
SCRIPTS = sorted(EXAMPLES.rglob("*.ts"))


@pytest.mark.skipif(shutil.which("deno") is None, reason="needs Deno: pip install '.[test]'")
def test_every_typescript_example_type_checks() -> None:
    assert SCRIPTS, f"no TypeScript example under {EXAMPLES}"
    done = subprocess.run(["deno", "check", *map(str, SCRIPTS)], capture_output=True,
                          text=True, timeout=300, check=False,
                          env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, (
        f"deno check failed on the TypeScript examples:\n{done.stderr[-3000:]}")
