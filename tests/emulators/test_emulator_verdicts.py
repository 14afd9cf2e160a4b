"""The verdict of every emulator store on the emulators pip installs today, as
docs/how-to/s3-gcs-emulators.md states it: green, each known deviation excused because its
probe showed the bug, and nothing else failing.

``moto-serialized`` and ``fake-gcs`` run in every default test run (the project's addopts);
the two stores below run the whole suite each, so they are in the slow lane, and ``.ci/run``
runs them by name on every fresh install, where a new emulator release first shows up.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest
from support.adapter_runs import run_on_adapter

from dw_testing.plugin.deviations import KNOWN_DEVIATIONS

pytestmark = pytest.mark.slow

NEEDS = {"moto": ("moto", "boto3"), "gcs-open-xb-example": ("gcsfs",)}
TIMEOUT_SECONDS = 1200


@pytest.mark.parametrize("store", sorted(NEEDS))
def test_an_emulator_store_ends_as_the_emulator_page_says(store: str, tmp_path: Path) -> None:
    run = run_on_adapter(store, NEEDS[store], tmp_path, "--dw-suite-only", "-n", "2",
                         timeout=TIMEOUT_SECONDS)
    failed = run.failed()
    assert not failed, f"{store} failed {len(failed)} test(s):\n{run.tail}"
    assert run.returncode == 0, run.tail
    excused = {t["nodeid"].split("::", 1)[1].split("[")[0] for t in run.tests
               if t["outcome"] == "XFAIL"}
    for deviation in KNOWN_DEVIATIONS:
        if deviation.store != store or deviation.intermittent or deviation.probe is None:
            continue
        if "copy_object" in deviation.test:
            continue  # no suite test copies: tests/emulators/test_emulator_deviations.py
        name = deviation.test.split("::", 1)[1]
        assert fnmatch.filter(excused, name), (
            f"{store}: no test was excused by {deviation.test} (probe {deviation.probe}); "
            f"the probe did not show the bug, or the deviation no longer fails:\n{run.tail}")
