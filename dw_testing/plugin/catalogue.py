"""The store catalogue: turn ``--dw-store`` values into StoreSpecs, entered once per session.

What is specific to pytest lives here: names from ``[tool.dw-testing.stores.NAME]`` in the
rootdir's ``pyproject.toml`` (first), the built-in names served by session fixtures
(``memory``, ``file``, ``sqlite``, ``moto``, ``moto-serialized``, ``fake-gcs``,
``gcs-open-xb-example``, ``exec-memory``, ``exec-file``), and providers entered once per
session. Every other value (a URI, an ``exec:`` command, an import path, an entry-point
name) is classified by the engine's one resolver,
:func:`reference_engine.stores.registry.parse_reference`, and a provider is told from a factory
by its :func:`~reference_engine.stores.registry.made_by_provider` rule. An ``exec:`` store's
capabilities are what its child announces in the ``dw-store/1`` handshake.

A *factory* is a zero-argument callable returning a new handle per call, with optional
``.capabilities``. A *provider* is a zero-argument callable returning a context manager that
yields a ``StoreSpec``.
"""

from __future__ import annotations

import contextlib
import difflib
import shlex
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dw_testing.kit.spec import CAPABILITIES, StoreSpec, UnknownCapability, check_capability_names
from reference_engine.errors import StoreUnavailable
from reference_engine.stores.async_adapter import adapt_if_async, adapting
from reference_engine.stores.contract import close_store
from reference_engine.stores.exec import end_spares
from reference_engine.stores.registry import (
    IMPORT_PATH,
    NAME,
    load_object,
    made_by_provider,
    open_store,
    parse_reference,
    registered_stores,
)

Provider = Callable[[], AbstractContextManager[StoreSpec]]

# Built-in names served by emulator fixtures, resolved lazily so the catalogue imports no server.
SERVER_PROVIDERS: Mapping[str, str] = {
    "moto": "dw_testing.emulators.moto:moto_raw",
    "moto-serialized": "dw_testing.emulators.moto:moto_serialized",
    "fake-gcs": "dw_testing.emulators.fake_gcs:fake_gcs",
    "gcs-open-xb-example": "dw_testing.emulators.fake_gcs:gcs_open_xb_example",
}
BUILTIN_DESCRIPTIONS: Mapping[str, str] = {
    "memory": "in-process memory store shared by name for the session",
    "file": "filesystem store in a temporary directory (fsync off)",
    "sqlite": "SQLite store in a temporary database",
    "moto": "S3 store on a raw moto server (its IfNoneMatch check is not atomic)",
    "moto-serialized": "S3 store on a moto server serialised by one lock",
    "fake-gcs": "GCS store (multipart creates) on fake-gcs-server",
    "gcs-open-xb-example": "a GCS store that creates through resumable uploads (a broken example)",
    "exec-memory": "memory store served by a Python dw-store/1 child per handle (exec:)",
    "exec-file": "filesystem store in a temporary directory, served by a Python dw-store/1 "
                 "child per handle (exec:)",
}
# The Python child that serves any store reference over dw-store/1 (docs/store-protocol.md).
EXEC_CHILD_MODULE = "reference_engine.stores.exec.child"


class CatalogueError(ValueError):
    """A ``--dw-store`` value or a ``[tool.dw-testing]`` entry that cannot be used."""


@dataclass(frozen=True)
class StoreEntry:
    """One resolved ``--dw-store`` value: how to enter it and what it is called in test ids."""

    name: str
    source: str
    open: Callable[[], AbstractContextManager[StoreSpec]]
    overrides: Mapping[str, bool] = field(default_factory=dict)
    description: str = ""


# --- pyproject -------------------------------------------------------------------------------


# The keys of a [tool.dw-testing.stores.NAME] table (docs/reference/plugin.md).
STORE_TABLE_KEYS = ("obj", "uri", "exec", "capabilities", "description")

def read_pyproject_stores(rootpath: Path | None) -> dict[str, dict[str, Any]]:
    """The ``[tool.dw-testing.stores]`` table of ``rootpath/pyproject.toml`` (``{}`` if none)."""
    if rootpath is None:
        return {}
    path = rootpath / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"{path} is not valid TOML ({exc}); fix it or remove it") from None
    stores = data.get("tool", {}).get("dw-testing", {}).get("stores", {})
    if not isinstance(stores, dict):
        raise CatalogueError(f"{path}: [tool.dw-testing.stores] must be a table of tables")
    return stores


def read_pyproject_tool(rootpath: Path | None) -> dict[str, Any]:
    """The whole ``[tool.dw-testing]`` table (``{}`` if none)."""
    if rootpath is None or not (rootpath / "pyproject.toml").is_file():
        return {}
    try:
        data = tomllib.loads((rootpath / "pyproject.toml").read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError:
        return {}
    tool = data.get("tool", {}).get("dw-testing", {})
    return tool if isinstance(tool, dict) else {}


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
    _check_names(capabilities, where)
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
        return _builtin_entry(name, session)
    if name in registered_stores():
        return _resolve_target(name, name, session)
    raise CatalogueError(
        f"{where} has no `obj`, `uri` or `exec`, and no built-in or installed store is named "
        f"{name!r} (close matches: {close_matches(name, [*builtin_names(), *registered_stores()])}"
        "); add `obj = \"pkg.mod:factory\"`, `uri` or `exec`, or rename the table"
    )


def close_matches(wanted: str, candidates: Iterable[str]) -> str:
    """The names most like ``wanted``, for a message that says what was probably meant."""
    found = difflib.get_close_matches(wanted, sorted(set(candidates)), n=3, cutoff=0.5)
    return ", ".join(found) if found else "none"


def _check_names(capabilities: Mapping[str, object], where: str) -> None:
    try:
        check_capability_names(capabilities, where=where)
    except UnknownCapability as exc:
        raise CatalogueError(str(exc)) from None


# --- built-ins -------------------------------------------------------------------------------


def _memory_provider(session: str, name: str = "") -> Provider:
    space = name or f"dwc-{session}"

    @contextlib.contextmanager
    def provide() -> Iterator[StoreSpec]:
        from reference_engine.stores.memory import MemoryStore

        yield StoreSpec(factory=lambda: MemoryStore(space), uri=f"memory://{space}", name="memory")

    return provide


def _file_provider() -> Iterator[StoreSpec]:
    with tempfile.TemporaryDirectory(prefix="dw-file-") as root:
        uri = f"file://{root}?fsync=0"
        yield StoreSpec(factory=lambda: open_store(uri), uri=uri, name="file")


def _sqlite_provider() -> Iterator[StoreSpec]:
    with tempfile.TemporaryDirectory(prefix="dw-sqlite-") as root:
        uri = f"sqlite:///{root}/dw.db"
        yield StoreSpec(factory=lambda: open_store(uri), uri=uri, name="sqlite")


def python_child_reference(store_uri: str) -> str:
    """``exec:`` reference of the Python child serving ``store_uri``, with this interpreter."""
    return "exec:" + shlex.join([sys.executable, "-m", EXEC_CHILD_MODULE, store_uri])


def _exec_memory_provider(label: str) -> Provider:
    return _exec_provider(python_child_reference("memory://"), label)


def _exec_file_provider(label: str) -> Provider:
    @contextlib.contextmanager
    def provide() -> Iterator[StoreSpec]:
        with tempfile.TemporaryDirectory(prefix="dw-exec-file-") as root:
            reference = python_child_reference(f"file://{root}?fsync=0")
            with _exec_provider(reference, label)() as spec:
                yield spec

    return provide


def _lazy_provider(import_path: str) -> Provider:
    def provide() -> AbstractContextManager[StoreSpec]:
        return _enter_object(load_object(import_path), import_path)

    return provide


def builtin_names() -> list[str]:
    return ["memory", "file", "sqlite", *SERVER_PROVIDERS, "exec-memory", "exec-file"]


def _builtin_entry(name: str, session: str) -> StoreEntry:
    opener: Provider
    if name == "memory":
        opener = _memory_provider(session)
    elif name == "file":
        opener = contextlib.contextmanager(_file_provider)
    elif name == "sqlite":
        opener = contextlib.contextmanager(_sqlite_provider)
    elif name == "exec-memory":
        opener = _exec_memory_provider(name)
    elif name == "exec-file":
        opener = _exec_file_provider(name)
    else:
        opener = _lazy_provider(SERVER_PROVIDERS[name])
    return StoreEntry(name=name, source="built-in", open=opener,
                      description=BUILTIN_DESCRIPTIONS.get(name, ""))


# --- objects: factories, providers, specs ----------------------------------------------------


@contextlib.contextmanager
def _enter_object(obj: object, label: str) -> Iterator[StoreSpec]:
    """Enter a factory, a provider or a StoreSpec; yields the spec for the session."""
    if isinstance(obj, StoreSpec):
        yield obj
        return
    if not callable(obj):
        raise CatalogueError(
            f"store {label!r} is neither callable nor a StoreSpec; point at a zero-argument "
            "factory, a provider returning a context manager, or a StoreSpec"
        )
    made = obj()
    if made_by_provider(made):
        with made as spec:
            if not isinstance(spec, StoreSpec):
                raise CatalogueError(
                    f"provider {label!r} yielded {type(spec).__name__}, not a StoreSpec; "
                    "yield StoreSpec(factory, uri, capabilities)"
                )
            yield spec
        return
    # The sample call only told us what `obj` is; adapting it refuses a mixed store now.
    close_store(adapt_if_async(made, label=label))
    declared = getattr(obj, "capabilities", {}) or {}
    yield StoreSpec(factory=obj, uri=label if IMPORT_PATH.match(label) else None,
                    capabilities=dict(declared), name=label)


def _check_object_capabilities(obj: object, label: str) -> None:
    declared = getattr(obj, "capabilities", None)
    if isinstance(obj, StoreSpec) or declared is None:
        return
    if not isinstance(declared, Mapping):
        raise CatalogueError(
            f"{label}.capabilities must be a mapping like {{'cross_process': True}}"
        )
    _check_names(declared, f"store {label!r}")


_SCRIPT_SUFFIXES = (".ts", ".tsx", ".mts", ".js", ".mjs", ".cjs", ".py")


def exec_name(command: str) -> str:
    """A test-id name for an ``exec:`` command: its script's stem (``fs_store``), or ``exec``."""
    try:
        words = shlex.split(command)
    except ValueError:
        return "exec"
    scripts = [w for w in words if w.endswith(_SCRIPT_SUFFIXES) and not w.startswith("-")]
    return Path(scripts[-1]).stem if scripts else "exec"


def _exec_provider(reference: str, label: str) -> Provider:
    """Open one handle to read the child's handshake: its capabilities join the spec."""

    @contextlib.contextmanager
    def provide() -> Iterator[StoreSpec]:
        sample = open_store(reference)
        try:
            announced = dict(getattr(sample, "capabilities", {}) or {})
        finally:
            close_store(sample)
        _check_names(announced, f"exec store {label!r} (its dw-store/1 handshake)")
        try:
            yield StoreSpec(factory=lambda: open_store(reference), uri=reference,
                            capabilities=announced, name=label)
        finally:
            # Children started ahead of need would outlive the session (and its temp dirs).
            end_spares()

    return provide


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
                              open=_memory_provider(session, space))

        @contextlib.contextmanager
        def provide() -> Iterator[StoreSpec]:
            yield StoreSpec(factory=lambda: open_store(value), uri=value, name=name or scheme)

        return StoreEntry(name=name or scheme, source=value, open=provide)
    if reference.kind == "exec":
        label = name or exec_name(reference.command)
        return StoreEntry(name=label, source=value, open=_exec_provider(value, label))
    if reference.kind in ("import_path", "entry_point"):
        obj = reference.target
        label = name or (value if reference.kind == "entry_point" else _short_import_name(value))
        _check_object_capabilities(obj, label if reference.kind == "entry_point" else value)
        return StoreEntry(name=label, source=reference.source,
                          open=lambda: _enter_object(obj, value))
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


def resolve(value: str, *, session: str, rootpath: Path | None) -> StoreEntry:
    """One ``--dw-store`` value -> a StoreEntry; raises CatalogueError that lists known names."""
    configured = read_pyproject_stores(rootpath)
    if value in configured:
        entry = _pyproject_entry(value, configured[value], session)
        return replace(entry, name=value)
    if value in builtin_names():
        return _builtin_entry(value, session)
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


def aliases(entry: StoreEntry) -> set[str]:
    """The entry's name plus the built-in name whose provider it points at, if any."""
    names = {entry.name}
    names.update(name for name, path in SERVER_PROVIDERS.items() if path == entry.source)
    return names


def names_itself(entry: StoreEntry) -> bool:
    """Whether ``entry`` is an import path given to ``--dw-store``, whose provider's
    ``StoreSpec(name=...)`` names it (a pyproject table, an entry point or a built-in is
    named by that)."""
    return IMPORT_PATH.match(entry.source) is not None


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


# --- the session's entered stores ------------------------------------------------------------


class EnteredStores:
    """Enters each entry's provider at most once and exits them all at the end."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._specs: dict[str, StoreSpec] = {}
        self._caps: dict[str, dict[str, bool]] = {}
        self._entries: dict[str, StoreEntry] = {}

    def spec(self, entry: StoreEntry) -> StoreSpec:
        if entry.name not in self._specs:
            self.adopt(entry, self.enter(entry))
        return self._specs[entry.name]

    def enter(self, entry: StoreEntry) -> StoreSpec:
        """Enter ``entry``'s provider (exited with the others) without naming it yet."""
        return self._stack.enter_context(entry.open())

    def adopt(self, entry: StoreEntry, spec: StoreSpec) -> StoreSpec:
        """Keep an entered ``spec`` under ``entry``'s name, with its capability overrides."""
        merged = {**spec.capabilities, **entry.overrides}
        # Handles of an async store (methods `async def`) are driven on a loop of their own.
        self._specs[entry.name] = replace(
            spec, name=entry.name, capabilities=merged,
            factory=adapting(spec.factory, label=entry.name))
        self._entries[entry.name] = entry
        return self._specs[entry.name]

    def capabilities(self, entry: StoreEntry) -> dict[str, bool]:
        if entry.name not in self._caps:
            spec = self.spec(entry)
            sample = spec.factory()
            try:
                self._caps[entry.name] = spec.resolved_capabilities(sample)
            finally:
                close_store(sample)
        return dict(self._caps[entry.name])

    def entered(self) -> dict[str, StoreSpec]:
        return dict(self._specs)

    def close(self) -> None:
        self._specs.clear()
        self._caps.clear()
        self._stack.close()


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
    key = "uri" if "://" in source else "obj"
    return (f"{missing}; declare it in code: {in_code}; or name the store in pyproject.toml, "
            f"[tool.dw-testing.stores.NAME] with {key} = \"{source}\" and {table}, and run "
            "--dw-store=NAME")


def known_capabilities() -> list[str]:
    return sorted(CAPABILITIES)
