"""A store that cannot be opened is told in its author's own words: in pytest, in
``dw conformance`` and in the report, which records a failed run (never an empty one)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dw_testing.commands.conformance import EXIT_FAIL, conformance
from dw_testing.plugin.catalogue.setup_error import StoreSetupError

FACTORIES = '''
import os

def needs_env():
    raise RuntimeError("DDB_ENDPOINT is not set; export DDB_ENDPOINT=http://127.0.0.1:8000")

def reads_env():
    return os.environ["DDB_ENDPOINT_FOR_DW_TEST"]

def leaks():
    raise RuntimeError("bad key AKIAABCDEFGHIJKLMNOP for user")
'''
TESTS = """
def test_one(dw_store):
    dw_store.put("k", b"v")

def test_two(dw_store):
    dw_store.put("k", b"v")
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(my_factories=FACTORIES, test_open=TESTS)
    pytester.syspathinsert()
    return pytester


def test_pytest_shows_the_factorys_own_message_and_the_report_records_a_failed_run(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DW_DEBUG", raising=False)
    result = project.runpytest("test_open.py", "--dw-store=my_factories:needs_env",
                               "--dw-report=r.json")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([
        "*store 'needs_env' could not be opened: its factory or provider raised RuntimeError: "
        "DDB_ENDPOINT is not set; export DDB_ENDPOINT=http://127.0.0.1:8000*",
        "*rerun with DW_DEBUG=1*"])
    assert "Traceback" not in result.stdout.str()
    report = json.loads((project.path / "r.json").read_text())
    assert {t["outcome"] for t in report["tests"]} == {"FAIL"}, report["tests"]
    assert "DDB_ENDPOINT is not set" in report["tests"][0]["message"]


def test_dw_debug_adds_the_traceback(project: pytest.Pytester,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DW_DEBUG", "1")
    result = project.runpytest("test_open.py", "--dw-store=my_factories:needs_env")
    result.stdout.fnmatch_lines(["*Traceback (most recent call last):*", "*my_factories.py*"])


def test_a_missing_environment_variable_is_named() -> None:
    try:
        {}["DDB_ENDPOINT"]  # what os.environ[...] raises
    except KeyError as exc:
        message = str(StoreSetupError("ddb", exc))
    assert "KeyError: 'DDB_ENDPOINT'" in message and "export that variable" in message


def test_a_message_that_holds_a_secret_is_withheld(project: pytest.Pytester) -> None:
    result = project.runpytest("test_open.py", "--dw-store=my_factories:leaks")
    result.stdout.fnmatch_lines(["*raised RuntimeError: (its message is withheld: it matched "
                                 "the secret rule 'aws_access_key_id')*"])
    assert "AKIAABCDEFGHIJKLMNOP" not in result.stdout.str()


def test_dw_conformance_prints_the_error_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "my_factories.py").write_text(FACTORIES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    result = CliRunner().invoke(conformance, [
        "--store", "my_factories:needs_env", "--report", "r.json", "--profile", "quick",
        "--", "-k", "test_store_create"])
    assert result.exit_code == EXIT_FAIL, result.output
    assert "DDB_ENDPOINT is not set; export DDB_ENDPOINT" in result.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["tests"] and {t["outcome"] for t in report["tests"]} == {"FAIL"}


def test_an_emulators_request_log_stays_out_of_a_failure(pytester: pytest.Pytester) -> None:
    pytest.importorskip("werkzeug")
    pytester.makepyfile(test_noisy="""
        from werkzeug._internal import _log

        def test_noisy(dw_store):
            for _ in range(50):  # what werkzeug's server logs for each request it serves
                _log("info", '"%s / HTTP/1.1" %s -', "POST", 400)
            assert False, "the store's own failure"
    """)
    result = pytester.runpytest("test_noisy.py", "--dw-store=memory", "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    assert "POST / HTTP/1.1" not in result.stdout.str()
    assert "Captured log" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*the store's own failure*"])
