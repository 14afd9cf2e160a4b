"""One pytest run's dw-testing state: the stores under test, key prefixes, seed, profile,
known deviations and the report being built.

:class:`DwSession` is registered as a plugin per run (so in-process pytest runs never share
it) and found again with :func:`dw_session`. The hooks that act on it are grouped by phase:
:mod:`.collection`, :mod:`.outcomes` and :mod:`.summary`.
"""

from __future__ import annotations

import itertools
import secrets
from dataclasses import replace
from typing import Any

import pytest

from dw_testing.kit.prefixed import PrefixedStore
from dw_testing.kit.spec import StoreSpec
from dw_testing.plugin.catalogue.entered import EnteredStores
from dw_testing.plugin.catalogue.entries import StoreEntry, named_by_spec, names_itself, unique_ids
from dw_testing.plugin.catalogue.pyproject import read_pyproject_tool
from dw_testing.plugin.catalogue.resolution import resolve
from dw_testing.plugin.deviations import KNOWN_DEVIATIONS, KnownDeviation, from_pyproject
from dw_testing.plugin.network import NetworkRouting
from dw_testing.report.writer import ReportBuilder
from reference_engine.stores.contract import close_store

PLUGIN_NAME = "dw-testing-session"
STORE_FIXTURE = "dw_spec"


class DwSession:
    """The run's state, registered per run under :data:`PLUGIN_NAME` (so in-process pytest
    runs never share it) for :func:`dw_session` and the phase hooks to find."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        # The same value twice (addopts plus the command line) runs the store once.
        values: list[str] = list(dict.fromkeys(config.option.dw_store or []))
        self.active = bool(values)
        worker_input: dict[str, Any] = getattr(config, "workerinput", {})
        self.is_worker = hasattr(config, "workerinput")
        self.session_id: str = worker_input.get("dw_session") or secrets.token_hex(4)
        self.worker: str = worker_input.get("workerid", "main")
        self.rootpath = config.rootpath
        self.distributes = (not self.is_worker
                            and getattr(config.option, "dist", "no") not in (None, "no"))
        self.profile: str = config.option.dw_profile or "ci"
        seed = config.option.dw_seed
        if seed is None and self.active:
            seed = worker_input.get("dw_seed", secrets.randbelow(2**32))
        self.seed: int | None = seed
        self.network: str = getattr(config.option, "dw_network", None) or "none"
        self.stores = EnteredStores(NetworkRouting(self.network, seed))
        self.entries = self._named_entries([
            resolve(value, session=self.session_id, rootpath=self.rootpath) for value in values
        ])
        self._by_name: dict[str, StoreEntry] = {e.name: e for e in self.entries}
        tool = read_pyproject_tool(self.rootpath)
        self.user_deviations = from_pyproject(tool.get("known-deviations"))
        self.deviations: list[KnownDeviation] = [*KNOWN_DEVIATIONS, *self.user_deviations]
        self._numbers = itertools.count(1)
        self.report = ReportBuilder()
        self.stop_errors: list[str] = []
        # Per store, what the --dw-network faults provoked (plugin/fault_tally.py).
        self.faults_met: dict[str, dict[str, Any]] = {}
        if self.active:
            from dw_testing.plugin import profiles

            profiles.activate(self.profile, self.seed)

    # -- stores --------------------------------------------------------------------------

    def _named_entries(self, resolved: list[StoreEntry]) -> list[StoreEntry]:
        """Unique test-id names; an import-path provider is entered now, so the name its
        ``StoreSpec(name=...)`` chose is the one in test ids, reports and deviations."""
        entered: list[StoreSpec | None] = []
        named: list[StoreEntry] = []
        for entry in resolved:
            spec = None
            # An xdist controller runs no test: it takes the names its workers report.
            if names_itself(entry) and not self.distributes:
                try:
                    spec = self.stores.enter(entry)
                except Exception:
                    # Left for the first test to enter again: its error lands on the tests,
                    # as for any other store that fails to open.
                    spec = None
                else:
                    entry = named_by_spec(entry, spec)
            entered.append(spec)
            named.append(entry)
        unique = unique_ids(named)
        for entry, spec in zip(unique, entered, strict=True):
            if spec is not None:
                self.stores.adopt(entry, spec)
        return unique

    def adopt_worker_names(self, names: list[str]) -> None:
        """Take the names the workers gave the stores (their providers named them)."""
        if len(names) != len(self.entries):
            return
        self.entries = [replace(entry, name=name) for entry, name in zip(self.entries, names,
                                                                          strict=True)]
        self._by_name = {e.name: e for e in self.entries}

    def entry(self, name: str | None) -> StoreEntry:
        if name is None:
            if "memory" not in self._by_name:
                self._by_name["memory"] = resolve(
                    "memory", session=self.session_id, rootpath=self.rootpath)
            return self._by_name["memory"]
        return self._by_name[name]

    def entry_named(self, name: str) -> StoreEntry | None:
        """The entry that test ids call ``name``, if a store of this run has that name."""
        return self._by_name.get(name)

    def next_prefix(self) -> str:
        return f"{self.prefix_root()}/{next(self._numbers)}"

    def prefix_root(self) -> str:
        return f"dwc-{self.session_id}-{self.worker}"

    def clear_prefix(self, spec: StoreSpec, prefix: str) -> None:
        """Best effort: a store whose delete or list is broken leaves keys, counted at the end.

        A clear that raises is not a teardown error: the suite's tests judge delete and list,
        and the session-end leftover check reports what stayed behind.
        """
        handle = None
        try:
            handle = spec.factory()
            PrefixedStore(handle, prefix).clear()
        except Exception:
            return
        finally:
            if handle is not None:
                close_quietly(handle)

    def leftovers(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for name, spec in self.stores.entered().items():
            handle = None
            try:
                handle = spec.factory()
                counts[name] = len(handle.list(f"{self.prefix_root()}/"))
            except Exception:
                counts[name] = -1  # the check itself failed; reported as unknown
            finally:
                if handle is not None:
                    close_quietly(handle)
        return counts

    def exec_store_names(self) -> list[str]:
        """The test-id names of the stores given as ``exec:`` commands (named by their
        handshake), whose failures are told in the handshake's terms."""
        return [entry.name for entry in self.entries if entry.source.startswith("exec:")]

    def store_names(self) -> list[str]:
        if self.entries:
            return [entry.name for entry in self.entries]
        return sorted({r.store for r in self.report.results})

    def replay_hint(self) -> str:
        """The run's seed and the options that replay it."""
        network = "" if self.network == "none" else f" --dw-network={self.network}"
        return (f"seed {self.seed}, profile {self.profile}: replay with "
                f"--dw-seed={self.seed} --dw-profile={self.profile}{network}")


def close_quietly(handle: object) -> None:
    # Teardown closes are best effort: tests close handles themselves to reopen, and the
    # contract does not promise that a second close() is harmless.
    try:
        close_store(handle)
    except Exception:
        return


def dw_session(config: pytest.Config) -> DwSession:
    """The run's :class:`DwSession`."""
    plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
    assert isinstance(plugin, DwSession)
    return plugin
