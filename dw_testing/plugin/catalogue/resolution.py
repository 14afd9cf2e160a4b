"""Resolution: which :class:`StoreEntry` one ``--dw-store`` value means.

Names from ``[tool.dw-testing.stores.NAME]`` in the rootdir's ``pyproject.toml`` come first,
then the built-in names. Every other value (a URI, an ``exec:`` command, an import path, an
entry-point name) is classified by the engine's one resolver,
:func:`reference_engine.stores.registry.parse_reference`.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path

from dw_testing.plugin.catalogue.builtin import BUILTIN_DESCRIPTIONS, builtin_entry, builtin_names
from dw_testing.plugin.catalogue.entries import (
    CatalogueError,
    StoreEntry,
    check_capabilities,
    close_matches,
)
from dw_testing.plugin.catalogue.providers import (
    check_object_capabilities,
    exec_name,
    exec_provider,
    memory_provider,
    object_provider,
    uri_provider,
)
from dw_testing.plugin.catalogue.pyproject import STORE_TABLE_KEYS, read_pyproject_stores
from reference_engine.errors import StoreUnavailable
from reference_engine.stores.registry import NAME, parse_reference, registered_stores


def resolve(value: str, *, session: str, rootpath: Path | None) -> StoreEntry:
    """One ``--dw-store`` value -> a StoreEntry; raises CatalogueError that lists known names."""
    configured = read_pyproject_stores(rootpath)
    if value in configured:
        entry = _pyproject_entry(value, configured[value], session)
        return replace(entry, name=value)
    if value in builtin_names():
        return builtin_entry(value, session)
    return _resolve_target(value, None, session, rootpath)


def known_names(rootpath: Path | None) -> list[str]:
    names = [*read_pyproject_stores(rootpath), *builtin_names(), *registered_stores()]
    return list(dict.fromkeys(names))


def describe_known(rootpath: Path | None) -> list[tuple[str, str, str]]:
    """(name, where it comes from, description) for ``--dw-stores``."""
    rows: list[tuple[str, str, str]] = []
    for name, table in read_pyproject_stores(rootpath).items():
        target = (table.get("obj") or table.get("uri") or table.get("exec")
                  if isinstance(table, dict) else "?")
        rows.append((name, f"pyproject.toml ({target})",
                     str(table.get("description", "")) if isinstance(table, dict) else ""))
    seen = {row[0] for row in rows}
    for name in builtin_names():
        if name not in seen:
            rows.append((name, "built-in", BUILTIN_DESCRIPTIONS.get(name, "")))
    seen |= set(builtin_names())
    rows.extend((name, f"entry point {value}", "")
                for name, value in registered_stores().items() if name not in seen)
    return rows


# --- a [tool.dw-testing.stores.NAME] table ---------------------------------------------------


def _pyproject_entry(name: str, table: object, session: str) -> StoreEntry:
    where = f"[tool.dw-testing.stores.{name}] in pyproject.toml"
    if not isinstance(table, dict):
        raise CatalogueError(f"{where} must be a table with `obj`, `uri` or `exec`")
    unknown_keys = sorted(set(table) - set(STORE_TABLE_KEYS))
    if unknown_keys:
        raise CatalogueError(
            f"{where} has unknown key(s) {', '.join(unknown_keys)}; "
            "allowed: obj, uri, exec, capabilities, description"
        )
    capabilities = table.get("capabilities", {})
    if not isinstance(capabilities, dict):
        raise CatalogueError(
            f"{where}: `capabilities` must be a table like {{cross_process = true}}"
        )
    check_capabilities(capabilities, where)
    overrides = {k: bool(v) for k, v in capabilities.items()}
    given = [key for key in ("obj", "uri", "exec") if key in table]
    if not given:
        # A capability table for a store named elsewhere (built in, or an entry point).
        return replace(_named_elsewhere(name, where, session), overrides=overrides,
                       description=str(table.get("description", "")))
    if len(given) != 1:
        raise CatalogueError(
            f"{where} needs exactly one of `obj = \"pkg.mod:factory\"`, `uri = \"...\"` or "
            "`exec = [\"deno\", \"run\", \"-A\", \"store.ts\"]`"
        )
    target = _exec_reference(table["exec"], where) if "exec" in table else str(table[given[0]])
    inner = _resolve_target(target, name, session)
    return replace(
        inner,
        source=f"pyproject.toml ({target})",
        overrides=overrides,
        description=str(table.get("description", "")),
    )


def _exec_reference(argv: object, where: str) -> str:
    """``exec = ["deno", "run", "-A", "store.ts"]`` -> ``exec:deno run -A store.ts``."""
    if not isinstance(argv, list) or not argv or not all(
        isinstance(word, str) and word for word in argv
    ):
        raise CatalogueError(
            f"{where}: `exec` must be a non-empty list of command-line words, e.g. "
            "exec = [\"deno\", \"run\", \"-A\", \"store.ts\"]"
        )
    return "exec:" + shlex.join(argv)


def _named_elsewhere(name: str, where: str, session: str) -> StoreEntry:
    """The built-in or entry-point store a table without ``obj``/``uri`` adds capabilities to."""
    if name in builtin_names():
        return builtin_entry(name, session)
    if name in registered_stores():
        return _resolve_target(name, name, session)
    raise CatalogueError(
        f"{where} has no `obj`, `uri` or `exec`, and no built-in or installed store is named "
        f"{name!r} (close matches: {close_matches(name, [*builtin_names(), *registered_stores()])}"
        "); add `obj = \"pkg.mod:factory\"`, `uri` or `exec`, or rename the table"
    )


# --- a URI, an exec: command, an import path or an entry-point name --------------------------


def _short_import_name(path: str) -> str:
    return path.rpartition(":")[2].rpartition(".")[2]


def _resolve_target(value: str, name: str | None, session: str,
                    rootpath: Path | None = None) -> StoreEntry:
    """A URI, an import path or an entry-point name, classified by the engine's resolver."""
    try:
        reference = parse_reference(value)
    except StoreUnavailable as exc:
        raise CatalogueError(str(exc)) from None
    if reference.kind == "uri":
        scheme = reference.scheme
        if scheme == "memory":
            space = value.split("://", 1)[1].split("?", 1)[0].strip("/")
            return StoreEntry(name=name or "memory", source=value,
                              open=memory_provider(session, space))
        return StoreEntry(name=name or scheme, source=value,
                          open=uri_provider(value, name or scheme))
    if reference.kind == "exec":
        label = name or exec_name(reference.command)
        return StoreEntry(name=label, source=value, open=exec_provider(value, label))
    if reference.kind in ("import_path", "entry_point"):
        obj = reference.target
        label = name or (value if reference.kind == "entry_point" else _short_import_name(value))
        check_object_capabilities(obj, label if reference.kind == "entry_point" else value)
        return StoreEntry(name=label, source=reference.source, open=object_provider(obj, value))
    if NAME.match(value):
        raise CatalogueError(
            f"unknown store name {value!r} (close matches: "
            f"{close_matches(value, known_names(rootpath))}); known names: "
            f"{', '.join(known_names(rootpath))}. "
            "You can also pass a URI (memory://, file:///abs/path, sqlite:///path.db, ...) or "
            "an import path package.module:factory"
        )
    raise CatalogueError(
        f"store {value!r} is neither a known name, a URI (scheme://...) nor an import path "
        "(package.module:factory); for a directory write file:///abs/path"
    )
