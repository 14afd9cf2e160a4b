"""C-CREATE-2 and C-HANDLE-1: concurrent histories of put / put_if_absent / get / delete, recorded
against the store and checked for linearizability, per key.

Racers on their own handles (threads, and processes when the store allows) start together
at a barrier and run a random mix of calls over a few keys, among them a key and a key
beneath it. A history the checker cannot settle within its budget is UNKNOWN, not a pass.

Under ``--dw-network`` the threads' calls cross the fault proxy with the profile's faults
(``dw_network``): a call that met a lost or cut reply is indeterminate (C-LOST-1), every
other call is held to the whole contract.
"""

from __future__ import annotations

from typing import Any

import pytest

from dw_testing.history import Budget, Operation, assert_linearizable
from dw_testing.history.wire_faults import attribute_faults
from dw_testing.history.workload import run_processes, run_threads
from dw_testing.kit.fault_proxy import FaultProxy
from dw_testing.kit.procs import ChildTarget
from dw_testing.kit.spec import StoreFactory
from dw_testing.plugin.profiles import rng

pytestmark = [pytest.mark.dw_store_contract, pytest.mark.dw_requires("put_if_absent")]

BUDGET = Budget(max_steps=2_000_000, max_seconds=10.0)
FEW_KEYS = ("h/a", "h/a/b", "h/b")
# A store that does not declare nested_keys races over keys none of which lies beneath another.
FLAT_KEYS = ("h/a", "h/c/b", "h/b")


def few_keys(caps: dict[str, bool]) -> tuple[str, ...]:
    return FEW_KEYS if caps.get("nested_keys") else FLAT_KEYS
HOT_KEY = ("hot",)


def _check(history: list[Operation], seed: int, proxy: FaultProxy | None = None) -> None:
    if proxy is not None:
        history = attribute_faults(history, proxy.events)
    try:
        assert_linearizable(history, budget=BUDGET)
    except AssertionError as failure:
        failure.add_note(f"workload seed {seed} ({len(history)} calls recorded)")
        raise


@pytest.mark.dw_clause("C-CREATE-2", "C-CREATE-3", "C-CREATE-4", "C-HANDLE-1", "C-KEY-3",
                       "C-LOST-1")
@pytest.mark.dw_requires("cross_handle")
@pytest.mark.dw_network
def test_racing_handles_over_a_few_keys_are_linearizable(
    dw_open_handle: StoreFactory, dw_fault_proxy: FaultProxy | None, dw_caps: dict[str, bool],
) -> None:
    seed = rng("histories/few-keys").randrange(2**32)
    keys = few_keys(dw_caps)
    _check(run_threads(dw_open_handle, racers=4, calls=40, keys=keys, seed=seed), seed,
           dw_fault_proxy)


@pytest.mark.dw_clause("C-CREATE-2", "C-CREATE-3", "C-CREATE-4", "C-HANDLE-1", "C-LOST-1")
@pytest.mark.dw_requires("cross_handle")
@pytest.mark.dw_network
def test_racing_handles_on_one_hot_key_are_linearizable(
    dw_open_handle: StoreFactory, dw_fault_proxy: FaultProxy | None,
) -> None:
    seed = rng("histories/hot-key").randrange(2**32)
    _check(run_threads(dw_open_handle, racers=4, calls=30, keys=HOT_KEY, seed=seed), seed,
           dw_fault_proxy)


@pytest.mark.dw_clause("C-HANDLE-2", "C-CREATE-2", "C-LOST-1")
@pytest.mark.dw_network
def test_racing_threads_on_one_handle_are_linearizable(
    dw_store: Any, dw_fault_proxy: FaultProxy | None, dw_caps: dict[str, bool],
) -> None:
    seed = rng("histories/one-handle").randrange(2**32)
    keys = few_keys(dw_caps)
    _check(run_threads(lambda: dw_store, racers=4, calls=30, keys=keys, seed=seed), seed,
           dw_fault_proxy)


@pytest.mark.dw_clause("C-CREATE-2", "C-CHILD-1")
@pytest.mark.dw_requires("cross_process")
def test_racing_processes_are_linearizable(
    dw_child_target: ChildTarget, dw_caps: dict[str, bool],
) -> None:
    seed = rng("histories/processes").randrange(2**32)
    keys = few_keys(dw_caps)
    _check(run_processes(dw_child_target, racers=3, calls=40, keys=keys, seed=seed), seed)
