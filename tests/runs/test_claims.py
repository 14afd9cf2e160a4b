"""The run claim: take, keep, lose, release, fenced saves. FakeClock drives ages."""

from __future__ import annotations

import pytest
from support.engine_flows import YES, MakeEngine, approval_workflow, plain_workflow

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.faults import FaultyStore, SimulatedCrash
from reference_engine.records import keys
from reference_engine.records.run import RUNNING, RunRecord
from reference_engine.refusals import Refusal
from reference_engine.runs.claims import ClaimBook
from reference_engine.runs.executor import FencedSaver
from reference_engine.stores.memory import MemoryStore

TTL_MS = 30_000


def _book(store: MemoryStore, clock: FakeClock, *, patience: bool = False) -> ClaimBook:
    return ClaimBook(store, clock, host="h", ttl_ms=TTL_MS, sleeper=clock.advance,
                     patience=patience)


def test_a_live_claim_refuses_busy(store: MemoryStore, clock: FakeClock) -> None:
    held = _book(store, clock).take("r")
    with pytest.raises(Refusal) as refused:
        _book(store, clock).take("r")
    assert refused.value.kind == "busy"
    held.release()
    assert _book(store, clock).take("r").generation == 2


def test_a_claim_unchanged_for_ttl_plus_grace_is_taken_over(
    store: MemoryStore, clock: FakeClock
) -> None:
    _book(store, clock).take("r")  # its holder dies without releasing
    taker = _book(store, clock)
    with pytest.raises(Refusal):
        taker.take("r")  # first look: remembered, not yet stale
    clock.advance(TTL_MS / 1000 * 1.1)
    with pytest.raises(Refusal):
        taker.take("r")  # not yet ttl + grace since the first look
    clock.advance(TTL_MS / 1000 * 0.2)
    assert taker.take("r").generation == 2


def test_patience_waits_out_a_dead_holder_but_not_a_beating_one(
    store: MemoryStore, clock: FakeClock
) -> None:
    _book(store, clock).take("dead")
    assert _book(store, clock, patience=True).take("dead").generation == 2
    live = _book(store, clock).take("live")

    def advance_and_beat(seconds: float) -> None:
        clock.advance(seconds)
        live.beat()

    beating = ClaimBook(store, clock, host="h", ttl_ms=TTL_MS, sleeper=advance_and_beat,
                        patience=True)
    with pytest.raises(Refusal) as refused:
        beating.take("live")
    assert refused.value.kind == "busy"


def test_the_holder_loses_to_a_newer_generation_and_writes_nothing(
    store: MemoryStore, clock: FakeClock
) -> None:
    old = _book(store, clock).take("r")
    clock.advance(1)
    taker = _book(store, clock)
    with pytest.raises(Refusal):
        taker.take("r")
    clock.advance(TTL_MS / 1000 * 1.3)
    new = taker.take("r")
    # the old holder's clock says its lease is young (it was paused): only g+1 stops it
    old._last_beat = clock.monotonic()
    with pytest.raises(Refusal) as refused:
        old.ensure_held()
    assert refused.value.kind == "busy"
    before = store.list("")
    old.release()  # a lost holder does not write its lease
    assert store.list("") == before
    assert new.generation == 2


def test_the_holder_stops_when_its_last_beat_is_too_old(
    store: MemoryStore, clock: FakeClock
) -> None:
    claim = _book(store, clock).take("r")
    clock.advance(TTL_MS / 1000 / 3)
    claim.ensure_held()  # a beat is due: it beats
    clock.advance(TTL_MS / 1000 * 0.85)
    with pytest.raises(Refusal):
        claim.ensure_held()


def test_a_beat_changes_the_lease_bytes(store: MemoryStore, clock: FakeClock) -> None:
    claim = _book(store, clock).take("r")
    key = keys.claim_key("r", 1)
    before = store.get(key)
    claim.beat()
    assert store.get(key) != before


def _record(run_id: str, rev: int) -> RunRecord:
    return RunRecord(run_id=run_id, workflow="w", source={}, run_nonce="0" * 32, rev=rev,
                     status=RUNNING, generation=0, created_at=0.0, updated_at=0.0)


def test_a_fenced_save_that_loses_its_create_aborts_busy(
    store: MemoryStore, clock: FakeClock
) -> None:
    claim = _book(store, clock).take("r")
    saver = FencedSaver(store, clock, claim, creates=True)
    saved = saver(_record("r", 0))
    store.put_if_absent(keys.revision_key("r", 2), b'{"someone": "else"}')
    with pytest.raises(Refusal) as refused:
        saver(saved)
    assert refused.value.kind == "busy"
    assert claim.lost
    with pytest.raises(Refusal):
        saver(saved)  # and it writes nothing more


def test_a_crashed_owner_is_resumed_after_the_lease_goes_stale(
    store: MemoryStore, clock: FakeClock, make_engine: MakeEngine
) -> None:
    faulty = FaultyStore(store)
    faulty.crash("put_if_absent", key=f"{keys.waits_root()}*")
    with pytest.raises(SimulatedCrash):
        make_engine(faulty).run(approval_workflow(), run_id="r")
    busy = make_engine(store, claim_patience=False)
    with pytest.raises(Refusal) as refused:
        busy.resume("r")
    assert refused.value.kind == "busy"
    view = make_engine(store).resume("r")  # patient: waits ttl + grace on the fake clock
    assert view.status == "suspended"
    make_engine(store).signal(view.waits[0].wait_id, YES)
    assert make_engine(store).resume("r").status == "succeeded"


@pytest.mark.dw_clause("C-CAP-2")
def test_without_put_if_absent_plain_runs_execute_unclaimed_and_waits_are_refused(
    clock: FakeClock, make_engine: MakeEngine
) -> None:
    class PutOnly:
        def __init__(self) -> None:
            self.inner = MemoryStore()
            self.name = "put-only"

        def put(self, key: str, data: bytes) -> None:
            self.inner.put(key, data)

        def get(self, key: str) -> bytes | None:
            return self.inner.get(key)

        def delete(self, key: str) -> None:
            self.inner.delete(key)

        def list(self, prefix: str) -> list[str]:
            return self.inner.list(prefix)

    store = PutOnly()
    engine = make_engine(store)
    with pytest.raises(Refusal) as refused:
        engine.run(approval_workflow())
    assert refused.value.kind == "unsupported"
    assert "put-only" in refused.value.message and "put_if_absent" in refused.value.message
    assert store.list("") == []
    assert engine.run(plain_workflow()).status == "succeeded"
    assert store.list(keys.claims_prefix("x")) == []
    assert not [k for k in store.list("") if keys.parse_claim_key(k)]
    for action in (lambda: engine.resume("x"), lambda: engine.cancel("x"),
                   engine.serve_once):
        with pytest.raises(Refusal) as refused:
            action()
        assert refused.value.kind == "unsupported"


def test_a_frozen_clock_ends_the_wait_for_a_stale_lease(
    store: MemoryStore, clock: FakeClock
) -> None:
    _book(store, clock).take("r")
    naps: list[float] = []
    frozen = ClaimBook(store, clock, host="h", ttl_ms=TTL_MS, sleeper=naps.append,
                       patience=True)
    with pytest.raises(Refusal) as refused:
        frozen.take("r")
    assert refused.value.kind == "busy"
    assert naps == [1.0]  # one poll, then it saw the clock never moves
