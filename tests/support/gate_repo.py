"""What the conformance action's tests share: its files, and the TypeScript example store as
it stands in a repository of its own (importing the shim the gate copies to ./vendor)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]  # tests/support/ -> the checkout
ACTION_DIR = ROOT / ".github" / "actions" / "conformance"
ACTION = ACTION_DIR / "action.yml"
GATE = ACTION_DIR / "gate.sh"
EXAMPLE_STORE = ROOT / "examples" / "typescript" / "fs_store.ts"
# The example imports the shim from the package source; a store elsewhere imports its copy.
_SOURCE_SHIM = "../../reference_engine/stores/exec/shim/dw_store_shim.js"
_COPIED_SHIM = "./vendor/dw_store_shim.js"
# The one line whose change turns the create into an overwrite (C-CREATE-1).
ATOMIC_CREATE = "await Deno.link(temp, file);"
OVERWRITING_CREATE = "await Deno.rename(temp, file);"


def action() -> dict[str, object]:
    loaded: dict[str, object] = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    return loaded


def store_repository(directory: Path, *, broken: bool = False, name: str = "fs_store.ts",
                     with_gate: bool = True) -> Path:
    """``directory`` holding only the example store as ``name`` (``broken``: its create
    overwrites) and a copy of the gate script, as a store author's repository would."""
    directory.mkdir(parents=True)
    text = EXAMPLE_STORE.read_text(encoding="utf-8")
    assert _SOURCE_SHIM in text and ATOMIC_CREATE in text, "the example store changed"
    text = text.replace(_SOURCE_SHIM, _COPIED_SHIM)
    if broken:
        text = text.replace(ATOMIC_CREATE, OVERWRITING_CREATE)
    (directory / name).write_text(text, encoding="utf-8")
    if with_gate:
        (directory / "gate.sh").write_bytes(GATE.read_bytes())
        (directory / "gate.sh").chmod(0o755)
    return directory


def plain_path(*more: str) -> str:
    """A PATH with a python3 and the system's tools, and no venv (so no deno, no dw)."""
    return os.pathsep.join([*more, os.path.join(sys.base_prefix, "bin"), "/usr/bin", "/bin"])


def author_environment(path: str, **more: str) -> dict[str, str]:
    """This machine's environment (its certificates and proxies) as a store author's shell
    would have it: no venv of ours, no outer pytest run, PATH as given."""
    kept = {k: v for k, v in os.environ.items()
            if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME") and not k.startswith(
                ("PYTEST_", "DW_", "GITHUB_"))}
    return {**kept, "PATH": path, **more}


_NOT_SHIPPED = (".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis",
                ".mypy_cache", ".ruff_cache", ".pytest_cache")


def build_wheel(into: Path) -> Path:
    """This checkout as a wheel (built from a copy, so the checkout gains no build files):
    what the gate installs instead of the one on PyPI."""
    source = into / "source"
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(*_NOT_SHIPPED))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--wheel-dir", str(into / "dist"), str(source)],
                   check=True, capture_output=True)
    [wheel] = (into / "dist").glob("dw_testing-*.whl")
    return wheel
