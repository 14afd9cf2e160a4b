"""Where the conformance suite is: beside the installed ``dw_testing``, never "whatever
``import conformance`` finds".

A project may have its own ``conformance`` package. The suite's directory is therefore taken
from this distribution (the ``conformance`` folder next to ``dw_testing``), and before the
suite is collected the name ``conformance`` is bound to it. The project's own package stays
importable: its directories are appended to the bound package's ``__path__``, so
``conformance.<its module>`` still resolves (the suite's modules win a clash of names).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

import dw_testing

SUITE_PACKAGE = "conformance"


class SuiteMissing(RuntimeError):
    """The installed dw-testing has no suite beside it: a broken install."""


def suite_dir() -> Path:
    """The suite shipped with the ``dw_testing`` that is running."""
    suite = Path(dw_testing.__file__).resolve().parent.parent / SUITE_PACKAGE
    if not (suite / "__init__.py").is_file():
        raise SuiteMissing(
            f"dw-testing's conformance suite is missing (looked in {suite}); reinstall "
            "dw-testing: pip install --force-reinstall 'dw-testing[suite]'"
        )
    return suite


def _other_packages(suite: Path, search: Iterable[str]) -> list[str]:
    """Directories of any other ``conformance`` package on ``search``, in order."""
    found: list[str] = []
    for entry in search:
        spec = importlib.machinery.PathFinder.find_spec(SUITE_PACKAGE, [entry])
        for location in (spec.submodule_search_locations or []) if spec else []:
            resolved = str(Path(location).resolve())
            if resolved != str(suite) and resolved not in found:
                found.append(resolved)
    return found


def bind_suite_package(extra_search: Iterable[str] = ()) -> ModuleType:
    """Make ``import conformance`` mean the shipped suite; keep a project's own reachable."""
    suite = suite_dir()
    current = sys.modules.get(SUITE_PACKAGE)
    if current is not None and _is_suite(current, suite):
        return current
    search = [*(p or "." for p in sys.path), *extra_search]
    others = _other_packages(suite, search)
    if current is not None:
        others += [str(Path(p).resolve()) for p in getattr(current, "__path__", [])
                   if str(Path(p).resolve()) not in others]
    spec = importlib.util.spec_from_file_location(
        SUITE_PACKAGE, suite / "__init__.py", submodule_search_locations=[str(suite)])
    if spec is None or spec.loader is None:
        raise SuiteMissing(f"cannot load dw-testing's conformance suite from {suite}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[SUITE_PACKAGE] = module
    spec.loader.exec_module(module)
    module.__path__ = [str(suite), *others]
    return module


def _is_suite(module: ModuleType, suite: Path) -> bool:
    paths = [Path(p).resolve() for p in getattr(module, "__path__", [])]
    return bool(paths) and paths[0] == suite
