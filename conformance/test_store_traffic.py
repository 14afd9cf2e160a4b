"""Traffic the judge checks: lists that run while other handles write and delete under the
same prefix (C-LIST-3 for a list that is not a snapshot, C-HANDLE-2).

The test asserts only what any one answer must be on its own (keys under the prefix, each
once); what an answer must hold given the calls around it is the judge's to check
(``dw_testing.judge``): every key written before the list began and untouched since is
there, and nothing that never existed while it ran. Writers start together at a barrier and
take turns with the lister, a list after each write, so every list runs in the midst of
both writers' traffic (overlapping their calls on a store whose calls wait on I/O) without
any sleep. Then the writers' handles are closed, and a new handle reads what each wrote last.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from dw_testing.plugin.profiles import rng
from reference_engine.stores.contract import close_store

pytestmark = [pytest.mark.dw_store_contract,
              pytest.mark.dw_clause("C-LIST-3", "C-HANDLE-1", "C-HANDLE-2")]

STABLE_KEYS = 12
WRITERS = 2
WRITES_EACH = 40
CALL_TIMEOUT_SECONDS = 60.0


def _churn(store: Any, writer: int, start: threading.Barrier, done: threading.Semaphore,
           turn: threading.Semaphore, seed: int, last: dict[str, bytes | None]) -> None:
    draw = rng(f"traffic/{seed}/{writer}")
    start.wait()
    for n in range(WRITES_EACH):
        key = f"churn/{writer}/{draw.randrange(6)}"
        if draw.random() < 0.3:
            store.delete(key)
            last[key] = None
        else:
            store.put(key, b"%d" % n)
            last[key] = b"%d" % n
        done.release()  # one list per call, so the lists spread over the writing
        if not turn.acquire(timeout=CALL_TIMEOUT_SECONDS):
            return  # the lister raised: its error is the test's


@pytest.mark.dw_requires("cross_handle")
def test_lists_running_beside_writes_and_deletes_on_other_handles(
    dw_store: Any, dw_open_handle: Callable[[], Any],
) -> None:
    for n in range(STABLE_KEYS):
        dw_store.put(f"stable/{n:03d}", b"kept")
    start = threading.Barrier(WRITERS + 1)
    done = threading.Semaphore(0)
    turn = threading.Semaphore(0)
    seed = rng("traffic").randrange(2**32)
    last: dict[str, bytes | None] = {}  # each writer its own keys: no lock needed
    handles = [dw_open_handle() for _ in range(WRITERS)]
    writers = [threading.Thread(target=_churn, args=(handles[w], w, start, done, turn, seed,
                                                      last))
               for w in range(WRITERS)]
    for thread in writers:
        thread.start()
    start.wait()
    answers = []
    try:
        for _ in range(WRITERS * WRITES_EACH):
            if not done.acquire(timeout=CALL_TIMEOUT_SECONDS):
                break  # a writer raised: its thread's error is the store's own tests' to judge
            answers.append(dw_store.list(""))
            turn.release()
    finally:
        turn.release(WRITERS * WRITES_EACH)  # no writer waits on a lister that stopped
        for thread in writers:
            thread.join()
    answers.append(dw_store.list(""))
    for answer in answers:
        problems = [k for k in answer if not isinstance(k, str) or "/" not in k]
        assert not problems and len(answer) == len(set(answer)), (
            f"C-LIST-3: list('') answered {answer!r}; expected each key once, in full")
    stable = {f"stable/{n:03d}" for n in range(STABLE_KEYS)}
    assert stable <= set(answers[-1]), (
        f"C-LIST-3: after every writer finished, list('') answered {sorted(answers[-1])!r}; "
        f"expected it to hold the {STABLE_KEYS} keys stable/000..stable/{STABLE_KEYS - 1:03d}")
    # The writers' handles closed, a new handle reads what each wrote last (C-HANDLE-1).
    for handle in handles:
        close_store(handle)
    reader = dw_open_handle()
    wrong = {key: reader.get(key) for key in sorted(last)}
    wrong = {key: got for key, got in wrong.items() if got != last[key]}
    assert not wrong, (
        f"C-HANDLE-1: after the writers' handles were closed, a new handle read "
        f"{len(wrong)} of {len(last)} keys wrong (first {min(wrong)!r}: "
        f"{_shown(wrong[min(wrong)])}, expected {_shown(last[min(wrong)])}); every handle "
        "must read what the last completed write left, whichever handle made it")


def _shown(value: bytes | None) -> str:
    return "no record" if value is None else repr(bytes(value))
