"""One resolved ``--dw-store`` value, a :class:`StoreEntry`: its name in test ids, where it came
from, and what that source means for declaring a capability."""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace

from dw_testing.kit.spec import StoreSpec, UnknownCapability, check_capability_names
from reference_engine.stores.registry import IMPORT_PATH

# A zero-argument callable returning a context manager that yields the session's StoreSpec.
Provider = Callable[[], AbstractContextManager[StoreSpec]]


class CatalogueError(ValueError):
    """A ``--dw-store`` value or a ``[tool.dw-testing]`` entry that cannot be used."""


@dataclass(frozen=True)
class StoreEntry:
    """One resolved ``--dw-store`` value: how to enter it and what it is called in test ids.

    ``source`` says where it came from: ``built-in``, ``pyproject.toml (<target>)``,
    ``entry point <value>``, or the URI, ``exec:`` command or import path given.
    """

    name: str
    source: str
    open: Provider
    overrides: Mapping[str, bool] = field(default_factory=dict)
    description: str = ""


def check_capabilities(capabilities: Mapping[str, object], where: str) -> None:
    """Refuse capability names the suite does not know, as a CatalogueError."""
    try:
        check_capability_names(capabilities, where=where)
    except UnknownCapability as exc:
        raise CatalogueError(str(exc)) from None


def close_matches(wanted: str, candidates: Iterable[str]) -> str:
    """The names most like ``wanted``, for a message that says what was probably meant."""
    found = difflib.get_close_matches(wanted, sorted(set(candidates)), n=3, cutoff=0.5)
    return ", ".join(found) if found else "none"


# --- names in test ids -----------------------------------------------------------------------


def names_itself(entry: StoreEntry) -> bool:
    """Whether ``entry`` is an import path given to ``--dw-store``, whose provider's
    ``StoreSpec(name=...)`` names it, or an ``exec:`` command given to it, named by its
    handshake's store name (a pyproject table, an entry point or a built-in is named by
    that)."""
    return IMPORT_PATH.match(entry.source) is not None or entry.source.startswith("exec:")


def named_by_spec(entry: StoreEntry, spec: StoreSpec) -> StoreEntry:
    """``entry`` renamed to the name its provider's spec chose, if it chose one."""
    chosen = spec.name.strip()
    if not names_itself(entry) or not chosen or IMPORT_PATH.match(chosen):
        return entry  # a factory's spec carries its import path, not a chosen name
    return replace(entry, name=chosen)


def unique_ids(entries: list[StoreEntry]) -> list[StoreEntry]:
    """Give every entry a distinct test-id name (``memory``, ``memory-2``, ...)."""
    seen: dict[str, int] = {}
    result = []
    for entry in entries:
        count = seen.get(entry.name, 0) + 1
        seen[entry.name] = count
        result.append(entry if count == 1 else replace(entry, name=f"{entry.name}-{count}"))
    return result


# --- declaring a capability, by source -------------------------------------------------------


def capability_hint(store: str, capability: str, source: str = "pyproject.toml") -> str:
    """The skip reason for an undeclared capability, with how to declare it for ``source``.

    Only a store run by its pyproject name reads ``[tool.dw-testing.stores.NAME]``: an import
    path or URI given to ``--dw-store`` never does, so its hint says how to declare in code,
    or how to give the store a name that then carries the declaration.
    """
    missing = f"store {store} does not declare capability {capability}"
    table = f"`capabilities = {{{capability} = true}}`"
    if source.startswith("pyproject.toml"):
        return (f"{missing}; declare it with {table} under [tool.dw-testing.stores.{store}] in "
                "pyproject.toml")
    if source == "built-in":
        return f"built-in store {store} does not have capability {capability}"
    in_code = (f"`factory.capabilities = {{'{capability}': True}}` on the factory, or "
               "StoreSpec(capabilities=...) in a provider")
    if source.startswith("entry point "):
        return f"{missing}; declare it in code: {in_code}"
    if source.startswith("exec:"):
        try:
            words = ", ".join(f'"{w}"' for w in shlex.split(source[len("exec:"):]))
        except ValueError:  # unbalanced quotes: the command as given
            words = f'"{source[len("exec:"):]}"'
        return (f"{missing}; declare it in the store's dw-store/1 handshake "
                f"(`capabilities: {{ {capability}: true }}` in the options given to serve()), "
                f"or name the store in pyproject.toml, [tool.dw-testing.stores.NAME] with "
                f"exec = [{words}] and {table}, and run --dw-store=NAME")
    key = "uri" if "://" in source else "obj"
    return (f"{missing}; declare it in code: {in_code}; or name the store in pyproject.toml, "
            f"[tool.dw-testing.stores.NAME] with {key} = \"{source}\" and {table}, and run "
            "--dw-store=NAME")
