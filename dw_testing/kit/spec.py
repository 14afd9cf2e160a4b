"""``StoreSpec``: what a factory or provider hands the suite, and the capability names."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from reference_engine.stores.contract import supports_create

StoreFactory = Callable[[], Any]

# Capability name -> what it promises. Defaults live in ``default_capabilities``.
CAPABILITIES: Mapping[str, str] = MappingProxyType({
    "put_if_absent": "the store offers the write-once create",
    "cross_handle": "two handles on one backing store see each other's writes at once",
    "cross_process": "a child process can open its own handle from the spec's uri",
    "durable_reopen": "records survive closing every handle and opening a new one",
    "large_values": "values of 1 MiB round-trip",
    "distinguishes_conflict": "an in-flight conflict is retried or raised, never reported False",
    "segment_prefixes": "list with a prefix not ending in / matches whole segments only",
    "sorted_list": "list returns its keys sorted by code point",
    "refuses_bad_keys": "every key or prefix C-KEY-1 refuses raises InvalidKey before any I/O",
    "nested_keys": "a record and records beneath its name coexist (C-KEY-3)",
})


class UnknownCapability(ValueError):
    """A capability mapping names something the suite does not know."""


def unknown_capability_names(names: Iterable[str]) -> str:
    """``unknown capability x; known: ...`` for names the suite does not know, else ``""``."""
    unknown = sorted(set(names) - set(CAPABILITIES))
    if not unknown:
        return ""
    return (f"unknown capabilit{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; "
            f"known: {', '.join(sorted(CAPABILITIES))}")


def check_capability_names(declared: Mapping[str, object], *, where: str) -> None:
    unknown = unknown_capability_names(declared)
    if unknown:
        raise UnknownCapability(f"{where} declares {unknown}")


# What the built-in stores (memory, file, sqlite, s3, gs) promise beyond what the engine
# needs: of list, beyond the core clause; of keys, refusing bad shapes (C-KEY-1) and holding
# nested records (C-KEY-3), which the engine never asks for (its keys are its own, in the
# grammar, and never nest). A store of another author's makes none of these promises
# unless it declares them, and is held to each one in full when it does.
BUILTIN_LIST_CAPABILITIES: Mapping[str, bool] = MappingProxyType({
    "segment_prefixes": True,
    "sorted_list": True,
    "refuses_bad_keys": True,
    "nested_keys": True,
})


def default_capabilities(sample_store: object, uri: str | None) -> dict[str, bool]:
    scheme = (uri or "").split("://", 1)[0].lower() if uri and "://" in uri else ""
    local_durable = scheme in ("file", "sqlite") or (bool(uri) and "://" not in (uri or "")
                                                      and ":" not in (uri or ""))
    return {
        "put_if_absent": supports_create(sample_store),
        "cross_handle": True,
        "cross_process": local_durable,
        "durable_reopen": local_durable,
        "large_values": True,
        "distinguishes_conflict": True,
        "segment_prefixes": False,
        "sorted_list": False,
        "refuses_bad_keys": False,
        "nested_keys": False,
    }


@dataclass(frozen=True)
class NetworkRoute:
    """How a store reaches its server, so a network profile can put a fault proxy between.

    ``endpoint`` is the server's URL (``http://127.0.0.1:9000``); ``factory(endpoint)``
    returns a new handle that talks to the server at the endpoint it is given. Under
    ``--dw-network=lossy`` the suite calls it with the proxy's URL instead.
    """

    endpoint: str
    factory: Callable[[str], Any]

    def __post_init__(self) -> None:
        if not callable(self.factory):
            raise TypeError("NetworkRoute.factory must take an endpoint URL and return a new "
                            "handle, e.g. NetworkRoute(url, lambda endpoint: MyStore(endpoint))")
        parsed = urlsplit(self.endpoint)
        try:
            port = parsed.port
        except ValueError:
            port = None
        if not parsed.hostname or port is None:
            raise ValueError(f"NetworkRoute endpoint {self.endpoint!r} needs a host and a port, "
                             "e.g. http://127.0.0.1:9000")

    @property
    def upstream(self) -> tuple[str, int]:
        """(host, port) of the server."""
        parsed = urlsplit(self.endpoint)
        assert parsed.hostname is not None and parsed.port is not None
        return parsed.hostname, parsed.port

    def via(self, address: tuple[str, int]) -> str:
        """The endpoint URL with its host and port replaced by ``address`` (the proxy's)."""
        parsed = urlsplit(self.endpoint)
        return urlunsplit(parsed._replace(netloc=f"{address[0]}:{address[1]}"))


@dataclass(frozen=True)
class StoreSpec:
    """One store under test.

    ``factory()`` returns a new handle on the same backing store on every call. ``uri``
    lets a child process open its own handle (``open_store(uri)``); ``None`` means the
    store cannot be reached from another process. ``capabilities`` overrides the defaults.
    ``network`` says how the store reaches its server, for ``--dw-network`` (a store with
    none runs its network tests skipped). ``emulator_bugs`` names the known emulator bugs
    that the provider's probes showed on the server it started
    (:mod:`dw_testing.emulators.probes`); a known deviation that names one of them applies.
    """

    factory: StoreFactory
    uri: str | None = None
    capabilities: Mapping[str, bool] = field(default_factory=dict)
    name: str = ""
    network: NetworkRoute | None = None
    emulator_bugs: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not callable(self.factory):
            raise TypeError(
                "StoreSpec.factory must be a zero-argument callable returning a new handle, "
                "e.g. StoreSpec(factory=lambda: MyStore(url))"
            )
        where = f"StoreSpec {self.name or self.uri!r}"
        check_capability_names(self.capabilities, where=where)
        # bool("false") is True: a string or number here would silently flip a capability.
        loose = sorted(k for k, v in self.capabilities.items() if not isinstance(v, bool))
        if loose:
            raise TypeError(
                f"{where} declares capabilit{'y' if len(loose) == 1 else 'ies'} "
                f"{', '.join(loose)} with a value that is not True or False; "
                "write e.g. capabilities={'cross_process': True}"
            )

    def resolved_capabilities(self, sample_store: object) -> dict[str, bool]:
        """Defaults for this store, overridden by what the spec declares."""
        merged = default_capabilities(sample_store, self.uri)
        merged.update({k: bool(v) for k, v in self.capabilities.items()})
        return merged
