"""A long run of failing tests through ``exec:`` keeps this process's descriptors bounded.

A failing test's traceback keeps its handles alive long after the test ended, so nothing
may wait for the garbage collector: once a child is closed, killed or broken, every pipe to
it is closed, even while the handle object is still referenced.
"""

from __future__ import annotations

import os
import sys

import pytest

from dw_testing.kit.procs import ChildFailed, run_in_children
from reference_engine.errors import StoreError
from reference_engine.stores.exec.client import ExecStore, start_child

SERVE_MEMORY = [sys.executable, "-m", "reference_engine.stores.exec.child", "memory://"]
ROUNDS = 30
# Slack for descriptors the interpreter or pytest open meanwhile; one pipe of each leaked
# child would exceed it (three pipes per child, thirty children).
SLACK = 12


class Target:
    def __init__(self, uri: str, prefix: str) -> None:
        self.uri, self.prefix = uri, prefix


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _settle(store: ExecStore) -> None:
    store._conn._stdout_thread.join(timeout=5)
    store._conn._stderr_thread.join(timeout=5)


def test_failed_exec_handles_release_their_descriptors_while_still_referenced() -> None:
    kept: list[ExecStore] = []  # what the tracebacks of failing tests would keep alive
    before = open_descriptors()
    for round_ in range(ROUNDS):
        store = start_child(SERVE_MEMORY)
        kept.append(store)
        store.put("k", b"v")
        if round_ % 2:
            os.kill(store.pid, 9)  # the child dies under the test: its next call fails
            with pytest.raises(StoreError):
                store.get("k")
        store.close()  # the fixture's teardown, after the failure
        _settle(store)
    grown = open_descriptors() - before
    assert grown <= SLACK, (
        f"{grown} descriptors stayed open after {ROUNDS} exec handles were closed or broken: "
        "a child's pipes outlive it")


def test_child_runs_that_fail_release_their_pipes() -> None:
    target = Target("memory://", "p")
    before = open_descriptors()
    for _ in range(ROUNDS // 3):
        with pytest.raises(ChildFailed):
            run_in_children(target, "os:does_not_exist", [[], []], timeout=30)
    grown = open_descriptors() - before
    assert grown <= SLACK, f"{grown} descriptors stayed open after {ROUNDS} failed child runs"
