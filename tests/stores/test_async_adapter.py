"""Async stores: recognised, driven on a loop of their own, and reported when they block it."""

from __future__ import annotations

import gc
import os
import threading
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from async_stores import (
    AsyncCheckThenWrite,
    AsyncDictStore,
    AsyncWithoutCreate,
    BlocksItsLoop,
    HalfAsync,
    SlowButAwaiting,
    SyncWithAsyncClose,
    WaitsForAPut,
)
from click.testing import CliRunner

from dw_testing.kit.together import run_together
from reference_engine.cli.main import dw
from reference_engine.errors import (
    EventLoopBlocked,
    InvalidKey,
    MixedSyncAsyncStore,
    StoreUnavailable,
)
from reference_engine.stores.async_adapter import (
    AsyncStoreAdapter,
    adapt_if_async,
    method_kinds,
)
from reference_engine.stores.contract import supports_create
from reference_engine.stores.memory import MemoryStore
from reference_engine.stores.registry import open_store

RACERS = 8


def _loop_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("dw-async-store:")]


@pytest.fixture
def adapted() -> Callable[..., AsyncStoreAdapter]:
    """``adapted(store, **options)``: an adapter closed at teardown."""
    made: list[AsyncStoreAdapter] = []

    def adapt(store: Any, **options: Any) -> AsyncStoreAdapter:
        adapter = AsyncStoreAdapter(store, **options)
        made.append(adapter)
        return adapter

    yield adapt  # type: ignore[misc]
    for adapter in made:
        release = getattr(adapter.store, "release", None)
        if release is not None:
            release.set()
        adapter.close()


# -- recognition --------------------------------------------------------------------------


def test_a_sync_store_is_returned_as_it_is() -> None:
    store = MemoryStore()
    assert adapt_if_async(store) is store


def test_an_async_store_is_wrapped_and_round_trips_every_call() -> None:
    handle = adapt_if_async(AsyncDictStore(), label="mine")
    try:
        assert isinstance(handle, AsyncStoreAdapter)
        assert supports_create(handle)
        handle.put("a/1", b"one")
        assert handle.put_if_absent("a/2", b"two") is True
        assert handle.put_if_absent("a/2", b"again") is False
        assert handle.get("a/1") == b"one"
        assert handle.get("missing") is None
        assert handle.list("a") == ["a/1", "a/2"]
        handle.delete("a/1")
        assert handle.list("") == ["a/2"]
    finally:
        handle.close()


def test_an_adapter_is_not_wrapped_twice() -> None:
    handle = adapt_if_async(AsyncDictStore())
    try:
        assert adapt_if_async(handle) is handle
    finally:
        handle.close()


def test_an_async_store_without_a_create_has_none_through_the_adapter(
    adapted: Callable[..., AsyncStoreAdapter],
) -> None:
    assert not supports_create(adapted(AsyncWithoutCreate()))
    assert supports_create(adapted(AsyncDictStore()))


def test_a_store_mixing_async_and_sync_methods_is_refused_naming_both_kinds() -> None:
    before = _loop_threads()
    with pytest.raises(MixedSyncAsyncStore) as caught:
        adapt_if_async(HalfAsync(), label="half")
    message = str(caught.value)
    assert "store 'half' mixes async and sync methods" in message
    assert "put, put_if_absent, delete are `async def` but get, list are not" in message
    assert "make all of put, put_if_absent, get, delete and list `async def`" in message
    assert isinstance(caught.value, StoreUnavailable)  # `dw` shows it as "cannot open"
    assert _loop_threads() == before  # nothing was started


def test_an_async_close_on_a_sync_store_is_refused() -> None:
    with pytest.raises(MixedSyncAsyncStore, match="`async def close` but synchronous put, get"):
        adapt_if_async(SyncWithAsyncClose())


def test_method_kinds_sees_only_the_contract_methods() -> None:
    assert method_kinds(HalfAsync()) == (["put", "put_if_absent", "delete"], ["get", "list"])
    assert method_kinds(object()) == ([], [])


def test_open_store_adapts_an_async_factory_named_by_import_path() -> None:
    first, second = open_store("async_stores:async_factory"), open_store(
        "async_stores:async_factory")
    try:
        assert isinstance(first, AsyncStoreAdapter)
        assert first.label == "async_stores:async_factory"
        first.put("shared/k", b"v")
        assert second.get("shared/k") == b"v"
    finally:
        first.close()
        second.close()


def test_open_store_refuses_a_mixed_factory_with_the_usage_error() -> None:
    with pytest.raises(MixedSyncAsyncStore, match="async_stores:half_async_factory"):
        open_store("async_stores:half_async_factory")


# -- errors and lifecycle -------------------------------------------------------------------


def test_the_store_s_own_errors_reach_the_caller_unchanged(
    adapted: Callable[..., AsyncStoreAdapter],
) -> None:
    handle = adapted(AsyncDictStore())
    with pytest.raises(InvalidKey, match="cannot put key of 0 chars"):
        handle.put("", b"x")
    assert handle.list("") == []  # nothing changed


def test_close_awaits_the_store_s_close_on_its_loop_and_ends_the_thread() -> None:
    store = AsyncDictStore()
    handle = AsyncStoreAdapter(store, label="closing")
    assert "dw-async-store:closing" in _loop_threads()
    handle.close()
    assert store.closed_on == "dw-async-store:closing"
    assert "dw-async-store:closing" not in _loop_threads()
    handle.close()  # a second close is harmless


def test_a_call_after_close_is_refused_with_what_to_do() -> None:
    handle = AsyncStoreAdapter(AsyncDictStore(), label="gone")
    handle.close()
    with pytest.raises(StoreUnavailable, match="get called after close\\(\\); open a new handle"):
        handle.get("k")


def test_a_handle_nobody_closed_stops_its_loop_when_collected() -> None:
    handle = AsyncStoreAdapter(AsyncDictStore(), label="forgotten")
    assert "dw-async-store:forgotten" in _loop_threads()
    del handle
    gc.collect()
    assert "dw-async-store:forgotten" not in _loop_threads()


def test_blocked_after_must_be_positive() -> None:
    with pytest.raises(ValueError, match="blocked_after must be a positive number"):
        AsyncStoreAdapter(AsyncDictStore(), blocked_after=0)


# -- concurrency on the one loop ------------------------------------------------------------


def test_calls_from_two_threads_run_as_concurrent_tasks_on_one_loop(
    adapted: Callable[..., AsyncStoreAdapter],
) -> None:
    """A get waiting for a put must not hold the put back: calls are not serialised."""
    handle = adapted(WaitsForAPut())
    got, put = run_together([lambda: handle.get("k"), lambda: handle.put("k", b"v")])
    assert got == b"v"
    assert put is None


def test_race_starts_every_task_before_any_runs(
    adapted: Callable[..., AsyncStoreAdapter],
) -> None:
    racy = adapted(AsyncCheckThenWrite())
    answers = racy.race("put_if_absent", [("k", f"{i}".encode()) for i in range(RACERS)])
    assert answers == [True] * RACERS  # every racer passed the check before any wrote

    correct = adapted(AsyncDictStore())
    answers = correct.race("put_if_absent", [("k", f"{i}".encode()) for i in range(RACERS)])
    assert answers.count(True) == 1
    assert correct.get("k") == f"{answers.index(True)}".encode()


def test_race_refuses_a_method_the_store_does_not_have(
    adapted: Callable[..., AsyncStoreAdapter],
) -> None:
    with pytest.raises(ValueError, match="no contract method 'put_if_absent' to race"):
        adapted(AsyncWithoutCreate()).race("put_if_absent", [("k", b"v")])
    with pytest.raises(ValueError, match="no contract method 'close' to race"):
        adapted(AsyncDictStore()).race("close", [()])


# -- the loop watchdog ----------------------------------------------------------------------


def test_a_store_blocking_its_loop_is_reported_with_the_method_and_line(
    adapted: Callable[..., AsyncStoreAdapter],
) -> None:
    store = BlocksItsLoop()
    handle = adapted(store, label="blocky", blocked_after=0.2)
    with pytest.raises(EventLoopBlocked) as caught:
        handle.put_if_absent("k", b"v")
    message = str(caught.value)
    assert message.startswith(
        "async store blocky blocked its event loop inside put_if_absent at ")
    assert "async_stores.py:" in message and "in BlocksItsLoop.put_if_absent" in message
    assert "for more than 0.2 s" in message
    assert "await asyncio.to_thread(...)" in message
    assert caught.value.op == "put_if_absent"
    assert caught.value.key == "k"


def test_racing_threads_on_a_blocked_loop_fail_with_the_block_not_a_hang(
    adapted: Callable[..., AsyncStoreAdapter],
) -> None:
    store = BlocksItsLoop()
    handle = adapted(store, label="blocky", blocked_after=0.2)
    with pytest.raises(EventLoopBlocked, match="blocked its event loop inside put_if_absent"):
        run_together([lambda i=i: handle.put_if_absent("k", bytes([i])) for i in range(4)])


def test_a_call_blocked_behind_another_call_names_the_call_that_blocks(
    adapted: Callable[..., AsyncStoreAdapter],
) -> None:
    store = BlocksItsLoop()
    handle = adapted(store, label="blocky", blocked_after=0.2)
    creator = threading.Thread(target=lambda: _swallow(handle.put_if_absent, "k", b"v"),
                               daemon=True)
    creator.start()
    assert store.blocking.wait(30)
    with pytest.raises(EventLoopBlocked, match="inside put_if_absent at ") as caught:
        handle.get("other")
    assert caught.value.op == "get"
    store.release.set()
    creator.join(30)


class _WatchedAdapter(AsyncStoreAdapter):
    """Tells the test when the watchdog starts waiting for the loop to answer."""

    def __init__(self, store: Any, **options: Any) -> None:
        super().__init__(store, **options)
        self.checking = threading.Event()

    def _loop_answers(self, within: float | None = None) -> bool:
        self.checking.set()
        return super()._loop_answers(within)


def test_a_loop_blocked_for_less_than_the_limit_is_not_reported() -> None:
    store = BlocksItsLoop()
    handle = _WatchedAdapter(store, blocked_after=30.0, poll_seconds=0.01)
    try:
        creator = threading.Thread(target=lambda: answers.append(
            handle.put_if_absent("k", b"v")), daemon=True)
        answers: list[bool] = []
        creator.start()
        assert store.blocking.wait(30)
        assert handle.checking.wait(30)  # the watchdog now waits on the blocked loop ...
        store.release.set()              # ... which answers well inside the limit
        creator.join(30)
        assert answers == [True]
    finally:
        store.release.set()
        handle.close()


def test_a_slow_call_on_a_free_loop_is_not_reported(
    adapted: Callable[..., AsyncStoreAdapter],
) -> None:
    """The watchdog judges the loop, not the call: waiting 3x the limit on a reply is fine."""
    handle = adapted(SlowButAwaiting(delay=1.5), blocked_after=0.5, poll_seconds=0.05)
    assert handle.get("k") == b"late"


def test_the_loop_answers_again_once_the_blocking_call_returns() -> None:
    store = BlocksItsLoop()
    handle = AsyncStoreAdapter(store, label="unstuck", blocked_after=1.0)
    with pytest.raises(EventLoopBlocked):
        handle.put_if_absent("k", b"v")
    store.release.set()
    assert handle.get("other") is None
    handle.close()
    assert store.closed_on == "dw-async-store:unstuck"  # close ran on the loop again


def test_closing_a_handle_whose_loop_is_still_blocked_does_not_wait_for_it_again() -> None:
    store = BlocksItsLoop()
    handle = AsyncStoreAdapter(store, label="stuck", blocked_after=0.2)
    with pytest.raises(EventLoopBlocked):
        handle.put_if_absent("k", b"v")
    handle.close()  # returns without a second EventLoopBlocked
    assert store.closed_on == ""  # the store's close could not run on the stuck loop
    store.release.set()
    handle._thread.join(30)
    assert "dw-async-store:stuck" not in _loop_threads()  # the loop stops once freed


def _swallow(call: Callable[..., object], *args: object) -> None:
    try:
        call(*args)
    except EventLoopBlocked:
        return


def test_an_async_def_factory_is_refused_with_what_to_write_instead() -> None:
    def refusal() -> str:
        with pytest.raises(StoreUnavailable) as caught:
            open_store("async_stores:async_def_factory")
        return str(caught.value)

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        message = refusal()
        gc.collect()
    assert "store factory 'async_stores:async_def_factory' is `async def`" in message
    assert "make the factory a plain `def` that returns the store" in message
    assert not [w for w in seen if "never awaited" in str(w.message)]


# -- dw ---------------------------------------------------------------------------------------


def test_dw_store_commands_work_on_an_async_store() -> None:
    runner = CliRunner()
    store = ["--store", "async_stores:async_factory"]
    created = runner.invoke(dw, ["store", "create", "dw/once", "--data", "1", *store])
    again = runner.invoke(dw, ["store", "create", "dw/once", "--data", "2", *store])
    shown = runner.invoke(dw, ["store", "cat", "dw/once", *store])
    assert (created.exit_code, again.exit_code, shown.exit_code) == (0, 1, 0), (
        created.output + again.output + shown.output)
    assert shown.output.strip() == "1"


def test_dw_refuses_a_mixed_store_as_a_store_it_cannot_open() -> None:
    result = CliRunner().invoke(dw, ["store", "ls", "--store", "async_stores:half_async_factory"])
    assert result.exit_code == 1
    assert ("cannot open the store: store 'async_stores:half_async_factory' mixes async and "
            "sync methods") in result.output
    assert "Traceback" not in result.output


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_handle_used_in_a_forked_child_says_to_open_a_new_one(
    adapted: Callable[..., AsyncStoreAdapter],
) -> None:
    handle = adapted(AsyncDictStore(), label="parent")
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report the refusal through the pipe, then leave at once
        try:
            handle.get("k")
            answer = "no refusal"
        except StoreUnavailable as exc:
            answer = str(exc)
        os.write(writer, answer.encode())
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    assert answer.startswith("async store parent: get in a process forked after the handle")
    assert "Open a new handle in the child process" in answer
    assert handle.get("k") is None  # the parent's handle still works


def test_a_call_racing_a_close_from_another_thread_is_refused_cleanly() -> None:
    handle = AsyncStoreAdapter(AsyncDictStore(), label="racing-close")
    handle._stop()  # the loop is gone, as if close() finished between the check and the call

    def refusal() -> str:
        with pytest.raises(StoreUnavailable) as caught:
            handle.get("k")
        return str(caught.value)

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        message = refusal()
        gc.collect()
    assert message == "async store racing-close: get called after close(); open a new handle"
    assert not [w for w in seen if "never awaited" in str(w.message)]
