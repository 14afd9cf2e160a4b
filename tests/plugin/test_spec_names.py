"""``StoreSpec(name=...)`` names an import-path provider in test ids, the summary and the
report: two adapters' ``make_store`` providers show up as their own names, not
``make_store`` and ``make_store-2``."""

from __future__ import annotations

import json

import pytest

ADAPTER = '''
import contextlib
from reference_engine.stores.memory import MemoryStore
from dw_testing.kit.spec import StoreSpec


@contextlib.contextmanager
def _spec():
    yield StoreSpec(factory=lambda: MemoryStore("{name}"), name={name!r})


def make_store():
    return _spec()


def factory():
    return MemoryStore("{name}-factory")
'''
TEST = """
def test_probe(dw_store):
    dw_store.put("k", b"v")
"""


@pytest.fixture
def adapters(pytester: pytest.Pytester) -> pytest.Pytester:
    for module, name in (("alpha_adapter", "alpha"), ("beta_adapter", "beta"),
                         ("other_alpha", "alpha")):
        pytester.makepyfile(**{module: ADAPTER.format(name=name)})
    pytester.makepyfile(test_probe=TEST)
    pytester.syspathinsert()
    return pytester


def test_providers_are_named_by_their_spec(adapters: pytest.Pytester) -> None:
    result = adapters.runpytest("-v", "test_probe.py", "--dw-store=alpha_adapter:make_store",
                                "--dw-store=beta_adapter:make_store", "--dw-report=r.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_probe[[]alpha[]] PASSED*", "*test_probe[[]beta[]] PASSED*",
                                 "alpha: contract PASS", "beta: contract PASS"])
    report = json.loads((adapters.path / "r.json").read_text(encoding="utf-8"))
    assert report["stores"] == ["alpha", "beta"]


def test_two_providers_choosing_one_name_are_told_apart(adapters: pytest.Pytester) -> None:
    result = adapters.runpytest("-v", "test_probe.py", "--dw-store=alpha_adapter:make_store",
                                "--dw-store=other_alpha:make_store")
    result.stdout.fnmatch_lines(["*test_probe[[]alpha[]] PASSED*",
                                 "*test_probe[[]alpha-2[]] PASSED*"])


def test_a_factory_keeps_its_short_name(adapters: pytest.Pytester) -> None:
    result = adapters.runpytest("-v", "test_probe.py", "--dw-store=alpha_adapter:factory")
    result.stdout.fnmatch_lines(["*test_probe[[]factory[]] PASSED*"])


def test_a_provider_that_fails_to_start_fails_its_tests_with_its_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(broken_adapter='''
import contextlib

@contextlib.contextmanager
def _fails():
    raise RuntimeError("the server binary is missing; pip install the server extra")
    yield


def make_store():
    return _fails()
''')
    pytester.makepyfile(test_probe=TEST)
    pytester.syspathinsert()
    result = pytester.runpytest("test_probe.py", "--dw-store=broken_adapter:make_store")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*RuntimeError: the server binary is missing; pip install the server extra*"])


def test_under_xdist_the_summary_and_report_use_the_workers_names(
    adapters: pytest.Pytester,
) -> None:
    result = adapters.runpytest_subprocess(
        "test_probe.py", "-n", "2", "-p", "no:cacheprovider",
        "--dw-store=alpha_adapter:make_store", "--dw-report=r.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["alpha: contract PASS"])
    report = json.loads((adapters.path / "r.json").read_text(encoding="utf-8"))
    assert report["stores"] == ["alpha"]
