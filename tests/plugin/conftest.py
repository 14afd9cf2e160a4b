"""Plugin tests run pytest inside pytest (pytester); ``stores_module`` writes stores to point at.

pytester is loaded by ``-p pytester`` in the project's addopts: pytest refuses
``pytest_plugins`` in a conftest below the rootdir.
"""

from __future__ import annotations

import pytest

STORES = '''
import contextlib, os, pathlib, uuid
from reference_engine.stores.memory import MemoryStore
from dw_testing.kit.spec import StoreSpec

NAME = "plugin-test-" + uuid.uuid4().hex


def dict_factory():
    return MemoryStore(NAME)


dict_factory.capabilities = {"cross_process": False}


def plain_factory():
    return MemoryStore(NAME)


def typo_factory():
    return MemoryStore(NAME)


typo_factory.capabilities = {"teleport": True}


class NoDelete(MemoryStore):
    def delete(self, key):
        pass  # leaves every key behind


def leaky_factory():
    return NoDelete(NAME + "-leaky")


def _log(line):
    with pathlib.Path("provider.log").open("a") as log:
        log.write(f"{line} {os.getpid()}\\n")


@contextlib.contextmanager
def _counted():
    _log("enter")
    try:
        yield StoreSpec(factory=lambda: MemoryStore(NAME + "-p"),
                        capabilities={"cross_handle": True})
    finally:
        _log("exit")


def counted_provider():
    return _counted()


@contextlib.contextmanager
def _breaks_on_exit():
    yield StoreSpec(factory=lambda: MemoryStore(NAME + "-b"))
    raise RuntimeError("the server would not stop")


def stubborn_provider():
    return _breaks_on_exit()


spec_object = StoreSpec(factory=lambda: MemoryStore(NAME + "-s"))
'''


@pytest.fixture
def stores_module(pytester: pytest.Pytester) -> pytest.Pytester:
    """``dwstores.py`` importable by in-process and subprocess runs."""
    pytester.makepyfile(dwstores=STORES)
    pytester.syspathinsert()
    return pytester
