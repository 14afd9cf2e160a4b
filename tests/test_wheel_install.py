"""The built wheel, installed with its ``suite`` extra in a fresh venv, runs the suite and
the self-test from an empty directory: nothing it needs lives only in the source tree.

Slow (a wheel build, a venv, the whole kill matrix); ``.ci/run`` runs it explicitly.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# What a source checkout holds besides the packages; none of it may be needed at run time.
NOT_SHIPPED = (".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
               ".hypothesis", ".dw", ".mypy_cache", ".ruff_cache")
STEP_TIMEOUT = 1800
MIN_SUITE_TESTS = 50  # the suite on one store; an empty or shadowed collection has far fewer

pytestmark = pytest.mark.slow


def _run(command: list[str], cwd: Path,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = env if env is not None else _environment(Path(command[0]).parent)
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=STEP_TIMEOUT, check=False)
    assert done.returncode == 0, (
        f"`{' '.join(command)}` in {cwd} exited {done.returncode}\n"
        f"stdout tail:\n{done.stdout[-4000:]}\nstderr tail:\n{done.stderr[-4000:]}")
    return done


def _environment(bin_dir: Path | None = None) -> dict[str, str]:
    # Built per call, never held by a fixture: a failure report must not print the environment.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    if bin_dir is not None:
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin dir of a fresh venv holding only the wheel and its ``suite`` extra."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(*NOT_SHIPPED))
    env = _environment()
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(base / "dist"),
          str(source)], base, env)
    wheel = next((base / "dist").glob("dw_testing-*.whl"))
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], base, env)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"{wheel}[suite]"], base,
         env)
    return venv / "bin"


def _empty_dir(tmp_path: Path) -> Path:
    empty = tmp_path / "empty"
    empty.mkdir()
    return empty


def test_the_installed_package_comes_from_the_venv(bin_dir: Path,
                                                   tmp_path: Path) -> None:
    done = _run([str(bin_dir / "python"), "-c",
                 "import conformance, dw_testing, reference_engine; "
                 "print(conformance.__file__); print(dw_testing.__file__)"],
                _empty_dir(tmp_path))
    assert all(str(bin_dir.parent) in line for line in done.stdout.splitlines()), done.stdout


def test_pytest_runs_the_suite_from_an_empty_directory(bin_dir: Path,
                                                       tmp_path: Path) -> None:
    done = _run([str(bin_dir / "pytest"), "--dw-store=memory", "-q", "-p", "no:cacheprovider",
                 "--dw-profile=quick"], _empty_dir(tmp_path))
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed is not None and int(passed.group(1)) >= MIN_SUITE_TESTS, done.stdout[-2000:]
    assert "memory: contract PASS" in done.stdout and "engine PASS" in done.stdout, (
        done.stdout[-2000:])


def test_the_self_test_kills_every_mutant_from_an_empty_directory(
    bin_dir: Path, tmp_path: Path,
) -> None:
    done = _run([str(bin_dir / "dw"), "conformance", "--self-test"], _empty_dir(tmp_path))
    # Exit 0 means every mutant and engine variant was killed and every test that killed
    # nothing is explained by the shipped ledger (a missing ledger exits 1, naming it).
    assert "running the engine suite against each engine variant" in done.stdout
