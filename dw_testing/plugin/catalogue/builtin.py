"""The built-in store names: ``memory``, ``file``, ``sqlite``, the emulators and the two
``exec-`` stores served by the Python ``dw-store/1`` child."""

from __future__ import annotations

import contextlib
import shlex
import sys
import tempfile
from collections.abc import Iterator, Mapping

from dw_testing.kit.spec import StoreSpec
from dw_testing.plugin.catalogue.entries import Provider, StoreEntry
from dw_testing.plugin.catalogue.providers import (
    exec_provider,
    lazy_provider,
    memory_provider,
    temporary_file_store,
    temporary_sqlite_store,
)

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
    "exec-sqlite": "SQLite store in a temporary database, served by a Python dw-store/1 "
                   "child per handle (exec:)",
}
# The Python child that serves any store reference over dw-store/1
# (docs/reference/store-protocol.md).
EXEC_CHILD_MODULE = "reference_engine.stores.exec.child"


def builtin_names() -> list[str]:
    return ["memory", "file", "sqlite", *SERVER_PROVIDERS, "exec-memory", "exec-file",
            "exec-sqlite"]


def builtin_entry(name: str, session: str) -> StoreEntry:
    """The entry of built-in store ``name`` (one of :func:`builtin_names`)."""
    opener: Provider
    if name == "memory":
        opener = memory_provider(session)
    elif name == "file":
        opener = temporary_file_store
    elif name == "sqlite":
        opener = temporary_sqlite_store
    elif name == "exec-memory":
        opener = exec_provider(python_child_reference("memory://"), name, fork=True)
    elif name == "exec-file":
        opener = _exec_temporary_provider(name, "file://{root}?fsync=0")
    elif name == "exec-sqlite":
        opener = _exec_temporary_provider(name, "sqlite://{root}/store.db")
    else:
        opener = lazy_provider(SERVER_PROVIDERS[name])
    return StoreEntry(name=name, source="built-in", open=opener,
                      description=BUILTIN_DESCRIPTIONS.get(name, ""))


def aliases(entry: StoreEntry) -> set[str]:
    """The entry's name plus the built-in name whose provider it points at, if any."""
    names = {entry.name}
    names.update(name for name, path in SERVER_PROVIDERS.items() if path == entry.source)
    return names


def python_child_reference(store_uri: str) -> str:
    """``exec:`` reference of the Python child serving ``store_uri``, with this interpreter."""
    return "exec:" + shlex.join([sys.executable, "-m", EXEC_CHILD_MODULE, store_uri])


def _exec_temporary_provider(label: str, uri: str) -> Provider:
    """A store in a new temporary directory (``uri`` with ``{root}``), served through exec:."""
    @contextlib.contextmanager
    def provide() -> Iterator[StoreSpec]:
        with tempfile.TemporaryDirectory(prefix=f"dw-{label}-") as root:
            reference = python_child_reference(uri.format(root=root))
            with exec_provider(reference, label, fork=True)() as spec:
                yield spec

    return provide
