"""The session's entered stores: each provider entered at most once, all exited at the end."""

from __future__ import annotations

import contextlib
from dataclasses import replace

from dw_testing.judge.slot import TrialSlot
from dw_testing.kit.spec import StoreSpec
from dw_testing.plugin.catalogue.entries import CatalogueError, StoreEntry
from dw_testing.plugin.catalogue.setup_error import StoreSetupError
from dw_testing.plugin.fault_tally import tallied
from dw_testing.plugin.network import NetworkRouting
from reference_engine.stores.async_adapter import adapting
from reference_engine.stores.contract import close_store


class EnteredStores:
    """Enters each entry's provider at most once and exits them all at the end.

    A provider or factory that raises is tried once: every later call for that store
    raises the same :class:`StoreSetupError`, so a server that cannot start is not
    restarted for each test.
    """

    def __init__(self, routing: NetworkRouting | None = None) -> None:
        self.routing = routing if routing is not None else NetworkRouting("none", None)
        self._stack = contextlib.ExitStack()
        self._specs: dict[str, StoreSpec] = {}
        self._caps: dict[str, dict[str, bool]] = {}
        self._failed: dict[str, StoreSetupError] = {}
        # Every handle a test opens is recorded for the judge (dw_testing.judge).
        self.trials = TrialSlot()

    def spec(self, entry: StoreEntry) -> StoreSpec:
        self._raise_if_failed(entry)
        if entry.name not in self._specs:
            try:
                self.adopt(entry, self.enter(entry))
            except CatalogueError:
                raise  # the declaration is wrong, not the store: a usage error of its own
            except Exception as exc:
                raise self._failure(entry, exc) from exc
        return self._specs[entry.name]

    def setup_errors(self) -> dict[str, str]:
        """Store name -> why it could not be opened, for the stores that could not."""
        return {name: str(error) for name, error in self._failed.items()}

    def _raise_if_failed(self, entry: StoreEntry) -> None:
        if entry.name in self._failed:
            raise self._failed[entry.name]

    def _failure(self, entry: StoreEntry, exc: Exception) -> StoreSetupError:
        error = exc if isinstance(exc, StoreSetupError) else StoreSetupError(entry.name, exc)
        self._failed[entry.name] = error
        return error

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
            spec, name=entry.name, capabilities=merged,
            factory=self.trials.judged_factory(factory))
        return self._specs[entry.name]

    def capabilities(self, entry: StoreEntry) -> dict[str, bool]:
        if entry.name not in self._caps:
            spec = self.spec(entry)
            try:
                sample = spec.factory()
            except Exception as exc:
                # Told in the author's words, but not remembered: a later call may succeed.
                raise StoreSetupError(entry.name, exc) from exc
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
