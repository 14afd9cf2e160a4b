"""The suite is the one shipped beside the installed dw_testing, whatever ``conformance``
package the project under test has of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dw_testing
from dw_testing.plugin.suite import suite_dir

ROOT = Path(__file__).resolve().parents[2]
OURS = "test_create_returns_true_once_then_false_and_never_the_value[memory]"


def _project(root: Path) -> Path:
    """A project with its own ``conformance`` package (a helper and a test) and ``tests/``."""
    (root / "conformance").mkdir(parents=True)
    (root / "conformance" / "__init__.py").write_text('OWNER = "the project"\n')
    (root / "conformance" / "helpers.py").write_text("def helper():\n    return 'theirs'\n")
    (root / "conformance" / "test_theirs.py").write_text("def test_theirs():\n    pass\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_own.py").write_text(
        "from conformance.helpers import helper\n\n\n"
        "def test_own():\n    assert helper() == 'theirs'\n")
    return root


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--dw-store=memory", "-p", "no:cacheprovider",
         "--dw-profile=quick", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_the_suite_is_found_beside_the_installed_package() -> None:
    assert suite_dir() == Path(dw_testing.__file__).resolve().parent.parent / "conformance"
    assert (suite_dir() / "test_store_create.py").is_file()


def test_a_projects_own_conformance_package_does_not_shadow_the_suite(tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    done = _pytest(project, "-q", "-rA", "-k", "test_create_returns_true_once or test_own "
                   "or test_theirs")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    passed = [line for line in done.stdout.splitlines() if line.startswith("PASSED")]
    assert any(line.endswith(OURS) for line in passed), passed
    assert any(line.endswith("tests/test_own.py::test_own") for line in passed), passed
    assert any(line.endswith("conformance/test_theirs.py::test_theirs") for line in passed), (
        passed)
    assert len(passed) == 3, passed
