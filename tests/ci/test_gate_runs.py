"""The gate from an empty directory holding only the TypeScript example store and a copy of
the action's script, run as the action runs it: green on the store, red with a Python-free
diagnosis once its create overwrites; the report and the job summary written either way.

Slow: each run installs dw-testing (this checkout, as a wheel) and Deno into a fresh venv
and runs the suite through Deno.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.gate_repo import author_environment, build_wheel, plain_path, store_repository

pytestmark = pytest.mark.slow

_PYTHON_FRAMES = ("Traceback (most recent call last)", 'File "', "site-packages")


def _gate(repository: Path, wheel: Path, venv: Path, *args: str) -> tuple[int, str, Path]:
    """Run ./gate.sh in ``repository`` as the action would; (exit code, output, summary)."""
    summary = repository.parent / f"{repository.name}-summary.md"
    env = author_environment(
        plain_path(),
        DW_STORE=f"exec:deno run -A fs_store.ts {repository}/.store",
        DW_PROFILE="quick", DW_DENO="true", DW_SOURCE=str(wheel),
        DW_VENV=str(venv), DW_ARGS=" ".join(args),
        GITHUB_STEP_SUMMARY=str(summary),
        GITHUB_OUTPUT=str(repository.parent / f"{repository.name}-output"),
        GITHUB_PATH=str(repository.parent / f"{repository.name}-path"),
    )
    done = subprocess.run(["./gate.sh"], cwd=repository, env=env, capture_output=True,
                          text=True, timeout=900)
    return done.returncode, done.stdout + done.stderr, summary


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_gate_passes_the_example_store_and_fails_it_once_its_create_overwrites(
    tmp_path: Path, wheel: Path,
) -> None:
    venv = tmp_path / "gate-venv"
    green = store_repository(tmp_path / "green")
    code, output, summary = _gate(green, wheel, venv)
    assert code == 0, output[-5000:]
    report = json.loads((green / "dw-conformance" / "conformance.json").read_text())
    assert {t["outcome"] for t in report["tests"]} <= {"PASS", "SKIP", "XFAIL"}
    assert "| put_if_absent | PASS |" in summary.read_text(encoding="utf-8")
    assert (tmp_path / "green-output").read_text() == "report-dir=dw-conformance\n"
    assert (green / "vendor" / "dw_store_shim.js").is_file()
    assert (tmp_path / "green-path").read_text().strip() == f"{venv}/bin"

    red = store_repository(tmp_path / "red", broken=True)
    code, output, summary = _gate(red, wheel, venv, "-k", "test_store_create")
    assert code == 1, output[-5000:]
    told = summary.read_text(encoding="utf-8")
    assert "| put_if_absent | FAIL |" in told and "## What to fix" in told
    assert "[C-CREATE-1](docs/contract.md#c-create-1)" in told
    # Told in the handshake's words: the judged call ("answered true") or the test's own.
    assert ("returned true" in told or "answered true" in told), told
    assert "True" not in told.split("## What to fix")[1], told
    assert "  clause   C-CREATE-1: The create writes only a new key" in output
    for frame in _PYTHON_FRAMES:
        assert frame not in output and frame not in told, frame
    assert (red / "dw-conformance" / "conformance.html").is_file()
