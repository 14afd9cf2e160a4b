"""``dw_requires``: which capabilities a test needs, and which capability it reports under.

The report groups tests by one capability each:

1. ``engine`` for every ``dw_engine`` test: that row answers "do workflows on this store lose
   or duplicate outcomes?";
2. else the last capability named by the test's closest ``dw_requires`` marker
   (``dw_requires("put_if_absent", "cross_process")`` reports under ``cross_process``);
3. else a module-level ``DW_CAPABILITY = "..."`` string in the test's module;
4. else ``contract``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import pytest

from dw_testing.kit.spec import unknown_capability_names
from dw_testing.plugin.catalogue.entries import capability_hint

MODULE_ATTRIBUTE = "DW_CAPABILITY"
F = TypeVar("F", bound=Callable[..., Any])


def required(item: pytest.Item) -> list[str]:
    """Every capability named by any ``dw_requires`` marker on the item, in order, deduplicated."""
    names: list[str] = []
    for mark in item.iter_markers("dw_requires"):
        names.extend(str(arg) for arg in mark.args)
    return list(dict.fromkeys(names))


def check_names(item: pytest.Item) -> None:
    """Refuse a ``dw_requires`` naming a capability the suite does not know (a typo)."""
    unknown = unknown_capability_names(required(item))
    if unknown:
        raise pytest.UsageError(
            f"{item.nodeid}: dw_requires names {unknown}. Fix the marker to name one of "
            "the known capabilities; the suite cannot test one it does not know")




def report_capability(item: pytest.Item) -> str:
    if item.get_closest_marker("dw_engine") is not None:
        return "engine"
    closest = item.get_closest_marker("dw_requires")
    if closest is not None and closest.args:
        return str(closest.args[-1])
    module = getattr(item, "module", None)
    declared = getattr(module, MODULE_ATTRIBUTE, None)
    if isinstance(declared, str) and declared:
        return declared
    return "contract"


def missing(needed: Iterable[str], capabilities: Mapping[str, bool]) -> list[str]:
    return [name for name in needed if not capabilities.get(name, False)]


def skip_reason(store: str, absent: list[str], source: str = "pyproject.toml",
                declared: Mapping[str, bool] | None = None) -> str:
    """Why a test skips: a capability the store declared false says so; for one it left
    undeclared, how to declare it (by ``source``)."""
    declared = declared or {}
    return "; ".join(
        f"store {store} declares capability {name} false" if declared.get(name) is False
        else capability_hint(store, name, source) for name in absent)


def conformance_test(
    *capabilities: str, level: str = "store"
) -> Callable[[F], F]:
    """Mark an extension author's own test as part of the conformance run.

    ``@conformance_test("put_if_absent", level="store")`` adds ``dw_store_contract`` (or
    ``dw_engine`` for ``level="engine"``) and ``dw_requires(*capabilities)``; the test then
    uses the ``dw_store`` fixtures and is parametrized per ``--dw-store`` like the suite.
    """
    unknown = unknown_capability_names(capabilities)
    if unknown:
        raise ValueError(unknown)
    if level not in ("store", "engine"):
        raise ValueError(f"level must be 'store' or 'engine', not {level!r}")
    level_mark = pytest.mark.dw_store_contract if level == "store" else pytest.mark.dw_engine

    def decorate(test: F) -> F:
        marked = level_mark(test)
        if capabilities:
            marked = pytest.mark.dw_requires(*capabilities)(marked)
        return marked  # type: ignore[no-any-return]

    return decorate
