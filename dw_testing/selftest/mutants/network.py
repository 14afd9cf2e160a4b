"""Store mutants that break the contract only when the network fails, over the real S3 client.

Each is the S3 store on a moto server (serialized: a conforming emulator), changed in one
place: what it does with a call whose connection failed. With no fault on the wire they
pass the whole store-level suite; under ``--dw-network`` the suite's network tests catch
each (``dw_testing.selftest.network_matrix``). The control, the unchanged store on the
same server, passes both ways. Each handle's client makes 2 attempts a call, so a fault
reaches the store's own code without minutes of botocore's backoff.

A create retried after a lost reply that answers ``False`` to its own writer is the
ambiguity the contract allows (C-LOST-1), not a mutant.

    --dw-store=dw_testing.selftest.mutants.network:swallows_failed_writes --dw-network=lossy
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from dw_testing.selftest.mutants.base import Provider
from dw_testing.selftest.mutants.registry import MutantInfo
from reference_engine.errors import TransientStoreError
from reference_engine.stores.s3 import S3Store

#: The name that serves the unchanged S3 store: the control run.
CONTROL = "network_correct_store"
MODULE = __name__
ATTEMPTS = 2
SECTION = "Network"


class NoneOnTimeoutGet(S3Store):
    """A ``get`` whose connection failed answers ``None``: the record reads as missing."""

    def get(self, key: str) -> bytes | None:
        try:
            return super().get(key)
        except TransientStoreError:
            return None


class FalseOnDroppedCreate(S3Store):
    """A create whose connection dropped before any reply answers ``False``: a failure is
    taken for an existing record, and the caller never writes its record."""

    def put_if_absent(self, key: str, data: bytes) -> bool:
        try:
            return super().put_if_absent(key, data)
        except TransientStoreError:
            return False


class ListStopsAtFailedPage(S3Store):
    """A paginated ``list`` that stops at a page that failed and returns the keys it has."""

    def _names_under(self, search: str) -> Iterator[str]:
        with contextlib.suppress(Exception):
            yield from super()._names_under(search)

    def list(self, prefix: str) -> builtins.list[str]:
        return super().list(prefix)


class SwallowsFailedWrites(S3Store):
    """A ``put`` or ``delete`` whose connection failed returns as if it had written."""

    def put(self, key: str, data: bytes) -> None:
        with contextlib.suppress(TransientStoreError):
            super().put(key, data)

    def delete(self, key: str) -> None:
        with contextlib.suppress(TransientStoreError):
            super().delete(key)


# (name, class, the clauses it breaks)
_DEFECTS: tuple[tuple[str, type[S3Store], tuple[str, ...]], ...] = (
    ("none_on_timeout_get", NoneOnTimeoutGet, ("C-ERR-1", "C-GET-1")),
    ("false_on_dropped_create", FalseOnDroppedCreate, ("C-ERR-1", "C-CREATE-6")),
    ("list_stops_at_failed_page", ListStopsAtFailedPage, ("C-ERR-1", "C-LIST-3")),
    ("swallows_failed_writes", SwallowsFailedWrites, ("C-ERR-1", "C-PUT-1", "C-DEL-1")),
)
_CLASSES: dict[str, type[S3Store]] = {name: cls for name, cls, _ in _DEFECTS}


def _doc(cls: type) -> str:
    return " ".join((inspect.getdoc(cls) or "").split("\n\n")[0].split())


NETWORK_MUTANTS: dict[str, MutantInfo] = {
    name: MutantInfo(name, _doc(cls), f"{MODULE}:{name}", SECTION, clauses=clauses)
    for name, cls, clauses in _DEFECTS
}


def network_provider(name: str) -> Provider:
    """A provider: a moto server of its own and the store ``name`` on it, with its route."""
    store_class = S3Store if name == CONTROL else _CLASSES[name]

    @contextlib.contextmanager
    def provide() -> Iterator[Any]:
        from dw_testing.emulators.moto import _child_credentials, s3_spec, serve_moto

        def make(*args: Any, **kwargs: Any) -> S3Store:
            return store_class(*args, max_attempts=ATTEMPTS, **kwargs)

        with _child_credentials(), serve_moto("serialized") as endpoint:
            spec = s3_spec(endpoint, f"dw-net-{name.replace('_', '-')}", name, make)
            # A child process would open the plain S3 store from the URI: keep it in process.
            yield replace(spec, uri=None,
                          capabilities={**spec.capabilities, "cross_process": False})

    provide.__name__ = name
    provide.__qualname__ = name
    provide.__doc__ = store_class.__doc__
    return provide


def __getattr__(name: str) -> Provider:
    """``--dw-store=dw_testing.selftest.mutants.network:<name>`` reaches its provider."""
    if name != CONTROL and name not in _CLASSES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return network_provider(name)
