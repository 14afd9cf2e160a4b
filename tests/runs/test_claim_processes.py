"""Two OS processes contend for one run claim on the filesystem store
(docs/explanation/engine.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dw_testing.kit.clock import FakeClock
from reference_engine.runs.claims import ClaimBook

CHILD = """
import json, sys
from pathlib import Path
from reference_engine.runs.claims import ClaimBook
from reference_engine.clock import clock_from_env
from reference_engine.refusals import Refusal
from reference_engine.stores.fs import FsStore

store = FsStore(sys.argv[1], fsync=False)
book = ClaimBook(store, clock_from_env(), host=sys.argv[2], ttl_ms=30_000, patience=False)
try:
    claim = book.take("contended")
    print(json.dumps({"held": claim.generation}))
except Refusal as refusal:
    print(json.dumps({"refused": refusal.kind}))
"""


def _spawn(root: Path, name: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CHILD, str(root), name],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def test_only_one_of_several_processes_takes_a_fresh_claim(tmp_path: Path) -> None:
    clock = FakeClock(mirror_to=tmp_path / "clock")
    env = {**os.environ, **clock.env}
    children = [_spawn(tmp_path / "store", f"host-{i}", env) for i in range(4)]
    results = []
    for child in children:
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        results.append(json.loads(out))
    assert sorted(json.dumps(r) for r in results) == sorted(
        [json.dumps({"held": 1})] + [json.dumps({"refused": "busy"})] * 3
    )


TAKER = """
import json, sys
from pathlib import Path
from reference_engine.runs.claims import ClaimBook
from reference_engine.clock import clock_from_env
from reference_engine.refusals import Refusal
from reference_engine.stores.fs import FsStore

book = ClaimBook(FsStore(sys.argv[1], fsync=False), clock_from_env(), host="taker",
                 ttl_ms=30_000, patience=False, looks_path=Path(sys.argv[2]))
try:
    print(json.dumps({"held": book.take("dead-owner").generation}))
except Refusal as refusal:
    print(json.dumps({"refused": refusal.kind}))
"""


def test_a_later_process_takes_over_once_dw_clock_ages_the_lease(tmp_path: Path) -> None:
    from reference_engine.stores.fs import FsStore

    clock = FakeClock(mirror_to=tmp_path / "clock")
    ClaimBook(FsStore(tmp_path / "store", fsync=False), clock, ttl_ms=30_000).take(
        "dead-owner")  # its holder never beats again
    env = {**os.environ, **clock.env}

    def taker() -> dict[str, object]:
        done = subprocess.run([sys.executable, "-c", TAKER, str(tmp_path / "store"),
                               str(tmp_path / "looks.json")], capture_output=True,
                              text=True, env=env, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        result: dict[str, object] = json.loads(done.stdout)
        return result

    assert taker() == {"refused": "busy"}  # first look, recorded in the looks file
    clock.advance(20)
    assert taker() == {"refused": "busy"}  # unchanged, but not yet for ttl + grace
    clock.advance(20)
    assert taker() == {"held": 2}
