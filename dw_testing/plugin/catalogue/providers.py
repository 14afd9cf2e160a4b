"""Providers: how each kind of store is entered once for a session, yielding its StoreSpec.

A *factory* is a zero-argument callable returning a new handle per call, with optional
``.capabilities``. A *provider* is a zero-argument callable returning a context manager that
yields a ``StoreSpec``; a provider is told from a factory by the engine's
:func:`~reference_engine.stores.registry.made_by_provider` rule. An ``exec:`` store's
capabilities are what its child announces in the ``dw-store/1`` handshake.
"""

from __future__ import annotations

import contextlib
import shlex
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from dw_testing.kit.spec import BUILTIN_LIST_CAPABILITIES, StoreSpec
from dw_testing.plugin.catalogue.entries import CatalogueError, Provider, check_capabilities
from reference_engine.stores.async_adapter import adapt_if_async
from reference_engine.stores.contract import close_store
from reference_engine.stores.exec import EXEC_PREFIX, end_spares
from reference_engine.stores.registry import (
    IMPORT_PATH,
    is_builtin_uri,
    load_object,
    made_by_provider,
    open_store,
)


def memory_provider(session: str, name: str = "") -> Provider:
    """The memory store ``name`` (``dwc-<session>`` if none), shared by every handle."""
    space = name or f"dwc-{session}"

    @contextlib.contextmanager
    def provide() -> Iterator[StoreSpec]:
        from reference_engine.stores.memory import MemoryStore

        yield StoreSpec(factory=lambda: MemoryStore(space), uri=f"memory://{space}",
                        capabilities=dict(BUILTIN_LIST_CAPABILITIES), name="memory")

    return provide


def uri_provider(uri: str, name: str) -> Provider:
    """A store the engine's registry opens from ``uri``; nothing to start or stop. A built-in
    scheme's store declares what the built-in stores promise; a registered scheme's, nothing."""
    declared = dict(BUILTIN_LIST_CAPABILITIES) if is_builtin_uri(uri) else {}

    @contextlib.contextmanager
    def provide() -> Iterator[StoreSpec]:
        yield StoreSpec(factory=lambda: open_store(uri), uri=uri, capabilities=declared,
                        name=name)

    return provide


@contextlib.contextmanager
def temporary_file_store() -> Iterator[StoreSpec]:
    """A filesystem store in a temporary directory, removed at the end (fsync off)."""
    with tempfile.TemporaryDirectory(prefix="dw-file-") as root:
        uri = f"file://{root}?fsync=0"
        yield StoreSpec(factory=lambda: open_store(uri), uri=uri,
                        capabilities=dict(BUILTIN_LIST_CAPABILITIES), name="file")


@contextlib.contextmanager
def temporary_sqlite_store() -> Iterator[StoreSpec]:
    """A SQLite store in a temporary database, removed at the end."""
    with tempfile.TemporaryDirectory(prefix="dw-sqlite-") as root:
        uri = f"sqlite:///{root}/dw.db"
        yield StoreSpec(factory=lambda: open_store(uri), uri=uri,
                        capabilities=dict(BUILTIN_LIST_CAPABILITIES), name="sqlite")


def exec_provider(reference: str, label: str, *, fork: bool = False) -> Provider:
    """Open one handle to read the child's handshake: its capabilities join the spec.

    ``fork=True`` is for our own ``python -m`` children, safe to fork from a warm process
    (``open_exec(..., fork=True)``); the spec's ``uri`` stays the command as written.
    """

    def open_handle() -> Any:
        if fork and reference.startswith(EXEC_PREFIX):
            from reference_engine.stores.exec.client import open_exec

            return open_exec(reference[len(EXEC_PREFIX):], fork=True)
        return open_store(reference)

    @contextlib.contextmanager
    def provide() -> Iterator[StoreSpec]:
        sample = open_handle()
        try:
            announced = dict(getattr(sample, "capabilities", {}) or {})
            # The handshake's store name; the catalogue uses it for an exec: command given
            # as is (a pyproject table or a built-in name keeps its own).
            chosen = str(getattr(sample, "store_name", "") or "").strip() or label
        finally:
            close_store(sample)
        check_capabilities(announced, f"exec store {chosen!r} (its dw-store/1 handshake)")
        try:
            yield StoreSpec(factory=open_handle, uri=reference, capabilities=announced,
                            name=chosen)
        finally:
            # Children started ahead of need would outlive the session (and its temp dirs).
            end_spares()

    return provide


_SCRIPT_SUFFIXES = (".ts", ".tsx", ".mts", ".js", ".mjs", ".cjs", ".py")


def exec_name(command: str) -> str:
    """A test-id name for an ``exec:`` command: its script's stem (``fs_store``), or ``exec``."""
    try:
        words = shlex.split(command)
    except ValueError:
        return "exec"
    scripts = [w for w in words if w.endswith(_SCRIPT_SUFFIXES) and not w.startswith("-")]
    return Path(scripts[-1]).stem if scripts else "exec"


def object_provider(obj: object, label: str) -> Provider:
    """A factory, a provider or a StoreSpec (``label`` names it in errors)."""
    return lambda: enter_object(obj, label)


def lazy_provider(import_path: str) -> Provider:
    """The object at ``import_path``, imported only when the store is entered."""
    return lambda: enter_object(load_object(import_path), import_path)


@contextlib.contextmanager
def enter_object(obj: object, label: str) -> Iterator[StoreSpec]:
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


def check_object_capabilities(obj: object, label: str) -> None:
    """Refuse a factory's ``.capabilities`` that is no mapping or names an unknown capability."""
    declared = getattr(obj, "capabilities", None)
    if isinstance(obj, StoreSpec) or declared is None:
        return
    if not isinstance(declared, Mapping):
        raise CatalogueError(
            f"{label}.capabilities must be a mapping like {{'cross_process': True}}"
        )
    check_capabilities(declared, f"store {label!r}")
