"""Kill an exec child, or its parent, at random points: no call hangs, no process is left."""

from __future__ import annotations

import os
import random
import select
import shlex
import signal
import subprocess
import sys
import threading

import pytest
from exec_helpers import live_children

from reference_engine.stores.exec.client import ExecChildError, ExecStore
from reference_engine.stores.registry import open_store

SERVE_MEMORY = f"exec:{shlex.join([sys.executable, '-m', 'reference_engine.stores.exec.child', 'memory://'])}"
SEEDS = range(6)




def random_call(store: ExecStore, rng: random.Random, worker: int, i: int) -> None:
    key = f"w{worker}/k{rng.randrange(20)}"
    op = rng.choice(("put", "put_if_absent", "get", "delete", "list"))
    if op == "put":
        store.put(key, b"v" * rng.randrange(1, 5000))
    elif op == "put_if_absent":
        store.put_if_absent(key, b"c")  # type: ignore[attr-defined]
    elif op == "get":
        store.get(key)
    elif op == "delete":
        store.delete(key)
    else:
        store.list(f"w{worker}")


@pytest.mark.parametrize("seed", SEEDS)
def test_killing_the_child_mid_calls_fails_them_all_and_leaves_nothing(seed: int) -> None:
    rng = random.Random(seed)
    store = open_store(SERVE_MEMORY)
    assert isinstance(store, ExecStore)
    kill_after = rng.randrange(0, 200)
    done = threading.Semaphore(0)
    outcomes: list[str] = []

    def worker(index: int) -> None:
        local = random.Random(f"{seed}:{index}")
        for i in range(10_000):
            try:
                random_call(store, local, index, i)
            except ExecChildError:
                outcomes.append("child error")
                return
            except BaseException as exc:
                outcomes.append(f"unexpected {type(exc).__name__}: {exc}")
                return
            if index == 0:
                done.release()
        outcomes.append("ran out of calls without seeing the kill")

    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(4)]
    for thread in threads:
        thread.start()
    for _ in range(kill_after):  # worker 0 has made this many calls: other calls are in flight
        assert done.acquire(timeout=30)
    os.kill(store.pid, signal.SIGKILL)
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads), "a call hung after the kill"
    assert outcomes == ["child error"] * 4, outcomes
    assert store.pid not in live_children(), "the killed child was not reaped"
    store.close()


PARENT_SCRIPT = """
import random, sys
from reference_engine.stores.registry import open_store
store = open_store(sys.argv[1])
print(store.pid, flush=True)
rng = random.Random(sys.argv[2])
i = 0
while True:
    key = f"k{rng.randrange(50)}"
    store.put_if_absent(key, b"x")
    store.get(key)
    i += 1
    print(i, flush=True)
"""


@pytest.mark.parametrize("seed", SEEDS)
def test_a_killed_parent_takes_its_child_along(seed: int) -> None:
    rng = random.Random(seed)
    parent = subprocess.Popen([sys.executable, "-c", PARENT_SCRIPT, SERVE_MEMORY, str(seed)],
                              stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child_pid = int(parent.stdout.readline())
    watch = os.pidfd_open(child_pid)
    try:
        for _ in range(rng.randrange(0, 300)):
            parent.stdout.readline()
        parent.kill()
        parent.wait(timeout=30)
        # The child sees its stdin close and exits: the pidfd turns readable when it has.
        readable, _, _ = select.select([watch], [], [], 30)
        assert readable, f"child {child_pid} outlived its killed parent by 30 s"
    finally:
        os.close(watch)
        parent.stdout.close()
