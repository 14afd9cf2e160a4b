"""Async stores through the plugin: every form of ``--dw-store`` drives them the same way."""

from __future__ import annotations

import textwrap

import pytest

ASYNC_STORES = '''
import contextlib, threading, uuid
from dw_testing import StoreSpec

_RECORDS = {}
_LOCK = threading.Lock()


class AsyncStore:
    async def put(self, key, data):
        with _LOCK:
            _RECORDS[key] = bytes(data)

    async def put_if_absent(self, key, data):
        with _LOCK:
            if key in _RECORDS:
                return False
            _RECORDS[key] = bytes(data)
            return True

    async def get(self, key):
        with _LOCK:
            return _RECORDS.get(key)

    async def delete(self, key):
        with _LOCK:
            _RECORDS.pop(key, None)

    async def list(self, prefix):
        with _LOCK:
            return sorted(k for k in _RECORDS if k.startswith(prefix + "/"))


class BlocksItsLoop(AsyncStore):
    async def put_if_absent(self, key, data):
        threading.Event().wait()  # the defect: a wait that never ends, on the loop's thread


def blocking_factory():
    return BlocksItsLoop()


class HalfAsync(AsyncStore):
    def get(self, key):
        return None


def factory():
    return AsyncStore()


def half_factory():
    return HalfAsync()


async def awaited_factory():
    return AsyncStore()


@contextlib.contextmanager
def _provide():
    yield StoreSpec(factory=AsyncStore, capabilities={"cross_handle": True})


def provider():
    return _provide()
'''

SHOW_HANDLES = """
from reference_engine.stores.async_adapter import AsyncStoreAdapter

def test_handles(dw_store, dw_open_handle, dw_raw_store, dw_spec, dw_caps):
    other = dw_open_handle()
    assert isinstance(dw_store.inner, AsyncStoreAdapter)
    assert isinstance(other.inner, AsyncStoreAdapter)
    assert isinstance(dw_raw_store, AsyncStoreAdapter)
    assert isinstance(dw_spec.factory(), AsyncStoreAdapter)
    assert dw_caps["put_if_absent"] is True
    assert dw_store.put_if_absent("k", b"v") is True
    assert other.get("k") == b"v"
    print("LOOP", dw_store.inner._thread.name)
"""


@pytest.fixture
def async_module(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(asyncstores=ASYNC_STORES, test_handles=SHOW_HANDLES)
    pytester.syspathinsert()
    return pytester


@pytest.mark.parametrize("store, name", [
    ("asyncstores:factory", "factory"),
    ("asyncstores:provider", "provider"),
    ("mine", "mine"),
])
def test_every_handle_of_an_async_store_is_driven_on_its_own_loop(
    async_module: pytest.Pytester, store: str, name: str,
) -> None:
    async_module.makepyprojecttoml(textwrap.dedent("""
        [tool.dw-testing.stores.mine]
        obj = "asyncstores:factory"
    """))
    result = async_module.runpytest("-s", "test_handles.py", f"--dw-store={store}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*LOOP dw-async-store:{name}"])


def test_the_store_races_run_on_an_async_store_and_race_on_one_loop(
    async_module: pytest.Pytester,
) -> None:
    result = async_module.runpytest("--dw-store=asyncstores:factory", "--dw-suite-only",
                                    "-k", "test_store_races and not processes", "-v")
    result.stdout.fnmatch_lines(
        ["*test_coroutines_racing_to_create_one_key_on_one_loop_have_exactly_one_winner*PASSED*"])
    assert result.ret == 0


def test_the_one_loop_race_skips_a_sync_store_and_says_why(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--dw-store=memory", "--dw-suite-only", "-rs",
                                "-k", "one_loop")
    result.assert_outcomes(skipped=1, deselected=result.parseoutcomes()["deselected"])
    result.stdout.fnmatch_lines(["*store memory is not async (its methods are plain def); "
                                 "the thread races above cover it*"])


def test_a_store_mixing_async_and_sync_methods_fails_with_the_methods_named(
    async_module: pytest.Pytester,
) -> None:
    result = async_module.runpytest("test_handles.py", "--dw-store=asyncstores:half_factory")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*MixedSyncAsyncStore: store 'asyncstores:half_factory' mixes async and sync methods: "
        "put, put_if_absent, delete, list are `async def` but get is not*",
    ])


def test_an_async_def_factory_fails_with_what_to_write_instead(
    async_module: pytest.Pytester,
) -> None:
    result = async_module.runpytest("test_handles.py",
                                    "--dw-store=asyncstores:awaited_factory")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*store factory 'asyncstores:awaited_factory' is `async def`*plain `def`*",
    ])


@pytest.mark.slow  # waits out the 5 s watchdog limit; tests/stores covers it with 0.2 s
def test_a_store_that_blocks_its_loop_fails_the_race_with_the_block_named(
    async_module: pytest.Pytester,
) -> None:
    """Reported by the adapter's watchdog within seconds, not by the race's 120 s join."""
    result = async_module.runpytest_subprocess(
        "--dw-store=asyncstores:blocking_factory", "--dw-suite-only", "-p", "no:cacheprovider",
        "-k", "test_threads_racing_to_create_one_key_on_one_handle", timeout=120,
    )
    result.assert_outcomes(failed=1, deselected=result.parseoutcomes()["deselected"])
    result.stdout.fnmatch_lines([
        "E *.EventLoopBlocked: async store blocking_factory blocked its event "
        "loop inside put_if_absent at *asyncstores.py:* in BlocksItsLoop.put_if_absent for "
        "more than 5 s*",
    ])
    result.stdout.no_fnmatch_line("*did not return within*")
