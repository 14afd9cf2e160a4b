"""The session's entered stores: each provider entered at most once, all exited at the end."""

from __future__ import annotations

import contextlib
from dataclasses import replace

from dw_testing.kit.spec import StoreSpec
from dw_testing.plugin.catalogue.entries import StoreEntry
from dw_testing.plugin.fault_tally import tallied
from dw_testing.plugin.network import NetworkRouting
from reference_engine.stores.async_adapter import adapting
from reference_engine.stores.contract import close_store


class EnteredStores:
    """Enters each entry's provider at most once and exits them all at the end."""

    def __init__(self, routing: NetworkRouting | None = None) -> None:
        self.routing = routing if routing is not None else NetworkRouting("none", None)
        self._stack = contextlib.ExitStack()
        self._specs: dict[str, StoreSpec] = {}
        self._caps: dict[str, dict[str, bool]] = {}

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
        # Under --dw-network, a store that declares its route reaches it through a proxy.
        spec = self.routing.route(entry.name, spec, self._stack)
        # Handles of an async store (methods `async def`) are driven on a loop of their own.
        factory = adapting(spec.factory, label=entry.name)
        if self.routing.proxy(entry.name) is not None:
            # What the faults provoke in it is tallied for the report (fault_tally).
            factory = tallied(factory, self.routing.tally(entry.name))
        self._specs[entry.name] = replace(
            spec, name=entry.name, capabilities=merged, factory=factory)
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
