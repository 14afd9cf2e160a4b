"""Child processes import what the test imports: a src-layout store made importable only by
pytest's ``pythonpath = ["src"]`` passes every cross-process test (the children get pytest's
import path through ``dw_testing.kit.child_env``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dw_testing.kit.child_env import child_environment, extra_import_paths

SRC_STORE = '''
from reference_engine.stores.registry import open_store

ROOT = {root!r}


def factory():
    return open_store(f"file://{{ROOT}}?fsync=0")


factory.capabilities = {{"cross_process": True, "durable_reopen": True}}
'''
PYPROJECT = '''
[tool.pytest.ini_options]
pythonpath = ["src"]
'''


# One test per kind of child: dw_testing.kit.procs, conformance.engine_child, the dw CLI.
ONE_OF_EACH_CHILD = ("processes_racing_to_create or signals_racing_from_processes or "
                     "cli_process_sees_the_deadline")


@pytest.mark.parametrize("selection", [
    pytest.param(ONE_OF_EACH_CHILD, id="one-per-child-kind"),
    pytest.param("process", id="every-cross-process-test", marks=pytest.mark.slow),
])
def test_a_src_layout_store_passes_the_cross_process_tests(
    pytester: pytest.Pytester, selection: str,
) -> None:
    package = pytester.path / "src" / "srcstore"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        SRC_STORE.format(root=str(pytester.path / "records")), encoding="utf-8")
    pytester.makefile(".toml", pyproject=PYPROJECT)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--dw-store=srcstore:factory", "--dw-suite-only",
        "--dw-profile=quick", "-k", selection, "--dw-report", "report.json",
        "--tb=short", "-q")
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    by_outcome: dict[str, list[str]] = {}
    for test in report["tests"]:
        by_outcome.setdefault(test["outcome"], []).append(test["nodeid"])
    wanted = 3 if selection == ONE_OF_EACH_CHILD else 5
    assert len(report["tests"]) >= wanted, f"the tests were not selected: {by_outcome}"
    assert set(by_outcome) == {"PASS"}, "\n".join(result.outlines[-40:])
    assert result.ret == 0


def test_only_directories_a_fresh_interpreter_lacks_are_passed_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    added = str(tmp_path / "src")
    os.mkdir(added)
    monkeypatch.syspath_prepend(added)
    extra = extra_import_paths()
    assert added in extra
    assert not any(path.endswith("site-packages") for path in extra), extra
    env = child_environment({"DW_MARK": "1"})
    assert env["DW_MARK"] == "1"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == extra[0]
