"""The conformance suite through exec:, run as a child pytest: the Python child serving the
built-in stores, the shim under Node.js, and broken TypeScript stores the suite must fail."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dw_testing.selftest.runner import SuiteRun
from reference_engine.errors import StoreError, TransientStoreError
from reference_engine.stores.exec import runner_path, shim_path
from reference_engine.stores.exec.client import ExecStore
from reference_engine.stores.registry import open_store

ROOT = Path(__file__).resolve().parents[2]
JS_MEMORY = Path(__file__).with_name("js") / "memory_store.mjs"
BROKEN = ROOT / "examples" / "typescript" / "broken"


def run_suite(tmp_path: Path, stores: list[str], *extra: str) -> tuple[int, dict[str, str], str]:
    """Exit code, {test id: outcome} from the junit file, and the output's tail."""
    junit = tmp_path / "junit.xml"
    run = SuiteRun(rootdir=tmp_path, stores=stores, report=tmp_path / "report.json",
                   profile="quick", junit=junit, scratch=tmp_path, extra=extra)
    done = subprocess.run(run.command(), cwd=tmp_path, env=run.environment(),
                          capture_output=True, text=True, timeout=900, check=False)
    outcomes: dict[str, str] = {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
            outcomes[case.get("name", "")] = kinds[0] if kinds else "passed"
    return done.returncode, outcomes, "\n".join(done.stdout.splitlines()[-30:])


def required_tool(name: str, install: str) -> str:
    """The tool's path; without it the test skips, except under CI=true, where it fails."""
    found = shutil.which(name)
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {name} is not installed; {install}", pytrace=False)
        pytest.skip(f"{name} is not installed here; {install}")
    return found


def deno_binary() -> str:
    return required_tool("deno", "pip install '.[test]' installs it from PyPI")


def test_the_suite_passes_through_a_python_child_serving_file(tmp_path: Path) -> None:
    code, outcomes, tail = run_suite(tmp_path, ["exec-file"])
    assert code == 0, tail
    cases = {k: v for k, v in outcomes.items() if re.search(r"\[exec-file[-\]]", k)}
    passed = [name for name, outcome in cases.items() if outcome == "passed"]
    assert len(passed) >= 60, "exec-file announces every capability: the suite runs in full"
    assert not {"failure", "error"} & set(cases.values()), tail


def test_the_suite_passes_through_python_children_serving_memory(tmp_path: Path) -> None:
    code, outcomes, tail = run_suite(tmp_path, ["exec-memory"])
    assert code == 0, tail
    cases = {k: v for k, v in outcomes.items() if re.search(r"\[exec-memory[-\]]", k)}
    assert "passed" in cases.values() and "failure" not in cases.values()
    # Each child holds a private memory store: the cross-handle tests are skipped, not failed.
    assert "skipped" in cases.values()


def test_the_shim_serves_a_javascript_store_under_node(tmp_path: Path) -> None:
    node = required_tool("node", "install Node.js 20 or newer (Debian: apt-get install nodejs)")
    reference = f"exec:{shlex.join([node, str(runner_path()), str(JS_MEMORY)])}"
    store = open_store(reference)
    try:
        assert isinstance(store, ExecStore) and store.store_name == "memory-js"
        assert store.put_if_absent("a/b", b"\x00\xff")  # type: ignore[attr-defined]
        assert store.get("a/b") == b"\x00\xff"
        with pytest.raises(TransientStoreError, match="busy on purpose"):
            store.get("x/transient")
        with pytest.raises(StoreError, match="boom on purpose") as caught:
            store.get("x/boom")
        assert type(caught.value) is StoreError, "an error of no known name is failed"
    finally:
        store.close()
    code, outcomes, tail = run_suite(tmp_path, [reference], "-m", "dw_store_contract")
    assert code == 0, tail
    assert "passed" in outcomes.values()


def dw(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reference_engine", *args], cwd=cwd,
                          capture_output=True, text=True, check=False, timeout=60)


def test_the_shim_is_installed_beside_its_types_and_runner(tmp_path: Path) -> None:
    assert shim_path().is_file() and shim_path().with_suffix(".d.ts").is_file()
    assert runner_path().parent == shim_path().parent
    # Run from elsewhere, so `python -m` imports the installed package, as this test does
    # (from a checkout's root it would import the checkout instead).
    printed = dw("store", "shim-path", cwd=tmp_path)
    assert printed.returncode == 0 and Path(printed.stdout.strip()) == shim_path()
    runner = dw("store", "shim-path", "--runner", cwd=tmp_path)
    assert runner.returncode == 0 and Path(runner.stdout.strip()) == runner_path()


def test_the_shim_copies_with_its_types(tmp_path: Path) -> None:
    copied = dw("store", "shim-path", "--copy-to", "vendor", cwd=tmp_path)
    assert copied.returncode == 0, copied.stderr
    assert copied.stdout.strip() == str(Path("vendor") / "dw_store_shim.js")
    for name in ("dw_store_shim.js", "dw_store_shim.d.ts"):
        assert (tmp_path / "vendor" / name).read_bytes() == (shim_path().parent / name).read_bytes()


BROKEN_CASES = {
    "check_then_write.ts": ("test_store_races.py", {
        "test_threads_racing_to_create_one_key_on_one_handle_have_exactly_one_winner",
        "test_handles_racing_to_create_one_key_have_exactly_one_winner",
    }),
    "name_prefix_list.ts": ("test_store_list.py", {
        # the tests whose keys hold a name-prefixed sibling ("r/listing" beside "r/list/")
        "test_list_of_a_slash_ending_prefix_returns_every_key_under_it_in_full",
        "test_list_treats_matcher_syntax_in_a_prefix_literally",
    }),
}


@pytest.mark.parametrize("script", sorted(BROKEN_CASES))
def test_the_suite_fails_broken_typescript_stores(tmp_path: Path, script: str) -> None:
    deno = deno_binary()
    module, must_fail = BROKEN_CASES[script]
    reference = f"exec:{shlex.join([deno, 'run', '-A', str(BROKEN / script), str(tmp_path / 'r')])}"
    code, outcomes, tail = run_suite(tmp_path, [reference], "-k", module.removesuffix(".py"))
    failed = {name.split("[")[0] for name, outcome in outcomes.items() if outcome == "failure"}
    assert code == 1, tail
    assert must_fail <= failed, f"{script}: expected {sorted(must_fail)} among {sorted(failed)}"
