"""`dw` starts fast: what a fresh interpreter imports to start the command line.

Each check runs in a new Python process, since this test process has imported
everything already. The heavy libraries load only when a command needs them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("rich", "jsonschema", "yaml", "boto3", "gcsfs")


def _modules_after(code: str) -> set[str]:
    """Every module a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=env, check=True, timeout=60)
    return set(json.loads(done.stdout.splitlines()[-1]))


def _heavy(modules: set[str]) -> list[str]:
    return sorted({name.split(".")[0] for name in modules} & set(HEAVY))


def test_importing_the_command_line_imports_no_heavy_library() -> None:
    loaded = _modules_after("import reference_engine.cli.main")
    assert "reference_engine.cli.main" in loaded  # the probe imported what it says
    assert _heavy(loaded) == [], (f"import reference_engine.cli.main imports {_heavy(loaded)}; "
                                  "import them inside the function that needs them")


def test_the_probe_sees_a_heavy_import() -> None:
    assert _heavy(_modules_after("import reference_engine.workflows.yaml_text")) == ["yaml"]


@pytest.mark.parametrize("argv", [
    ["--help"], ["signal", "--help"], ["store", "ls", "--store", "memory://"],
])
def test_a_command_that_needs_no_heavy_library_imports_none(argv: list[str]) -> None:
    code = ("from reference_engine.cli.main import dw\n"
            f"try:\n    dw.main({argv!r}, prog_name='dw')\nexcept SystemExit:\n    pass")
    loaded = _modules_after(code)
    assert _heavy(loaded) == [], f"dw {' '.join(argv)} imported {_heavy(loaded)}"
    assert "importlib.metadata" not in loaded, "plugins are found without importlib.metadata"
    assert "asyncio" not in loaded, "only an async store needs asyncio"
