"""Every shell line of docs/how-to/gate-ci.md, run as written from a store author's
repository: the gate script in a repository with no Python, the uvx one-liners, and the
venv steps of a Python repository. dw-testing comes from this checkout instead of PyPI (the
one substitution); uv comes from PyPI with the test extra.

Slow: each block installs dw-testing into a fresh environment and runs the whole suite.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from support.gate_repo import (
    ROOT,
    author_environment,
    build_wheel,
    plain_path,
    store_repository,
)

pytestmark = pytest.mark.slow

PAGE = ROOT / "docs" / "how-to" / "gate-ci.md"
_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
PYPROJECT = """\
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "mystore"
version = "0"

[tool.setuptools]
py-modules = ["mystore"]

[tool.dw-testing.stores.mystore]
obj = "mystore:factory"
"""
MYSTORE = """\
from reference_engine.stores.memory import MemoryStore


def factory():
    return MemoryStore("gate-ci-page")
"""


def _blocks() -> list[str]:
    return _BLOCK.findall(PAGE.read_text(encoding="utf-8"))


def _run(block: str, cwd: Path, path: str = "", **env: str
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=cwd,
                          env=author_environment(path or plain_path(), **env),
                          capture_output=True, text=True, timeout=1800)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_page_has_the_three_by_hand_blocks() -> None:
    gate, uvx, python = _blocks()
    assert gate.startswith("DW_STORE=") and "./gate.sh" in gate
    assert all(line.startswith("uvx ") for line in uvx.splitlines())
    assert python.splitlines()[0] == "python3 -m venv .dw-venv"


def test_the_gate_script_block_gates_a_repository_with_no_python(
    tmp_path: Path, wheel: Path,
) -> None:
    [gate, _, _] = _blocks()
    repository = store_repository(tmp_path / "repo", name="my_store.ts")
    done = _run(gate, repository, DW_SOURCE=str(wheel), DW_VENV=str(tmp_path / "venv"))
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    assert (repository / "dw-conformance" / "conformance.json").is_file()
    assert "| put_if_absent | PASS |" in (repository / "dw-conformance" / "summary.md"
                                          ).read_text(encoding="utf-8")


def test_the_uvx_lines_need_no_venv(tmp_path: Path, wheel: Path) -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not installed: pip install '.[test]'")
    [_, uvx, _] = _blocks()
    repository = store_repository(tmp_path / "repo", name="my_store.ts", with_gate=False)
    block = uvx.replace('"dw-testing[deno]"', f'"{wheel}[deno]"')
    done = _run(block, repository, path=plain_path(os.path.dirname(uv)))
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    assert (repository / "vendor" / "dw_store_shim.js").is_file()
    assert (repository / "out" / "conformance.json").is_file()


def test_the_python_lines_gate_a_store_named_in_pyproject(tmp_path: Path, wheel: Path) -> None:
    [_, _, python] = _blocks()
    repository = tmp_path / "repo"
    repository.mkdir()
    (repository / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (repository / "mystore.py").write_text(MYSTORE, encoding="utf-8")
    done = _run(python.replace('"dw-testing[suite]"', f'"{wheel}[suite]"'), repository)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    summary = (repository / "out" / "summary.md").read_text(encoding="utf-8")
    assert "| contract | PASS |" in summary
