"""FaultyStore injects each fault exactly where asked, and crashes like a process."""

from __future__ import annotations

import pytest

from dw_testing.kit.doubles import NoCreateStore
from dw_testing.kit.faults import FaultMisuse, FaultyStore, SimulatedCrash, StoreCall
from dw_testing.kit.together import run_together
from reference_engine.errors import StoreError, TransientStoreError
from reference_engine.stores.contract import supports_create
from reference_engine.stores.memory import MemoryStore


@pytest.fixture
def inner() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def faulty(inner: MemoryStore) -> FaultyStore:
    return FaultyStore(inner)


# -- each fault ----------------------------------------------------------------------


def test_raise_before_fails_without_touching_the_store(inner: MemoryStore,
                                                       faulty: FaultyStore) -> None:
    fault = faulty.inject("put", "raise-before")
    with pytest.raises(StoreError) as caught:
        faulty.put("k", b"v")
    assert not isinstance(caught.value, TransientStoreError)
    assert (caught.value.op, caught.value.key) == ("put", "k")
    assert inner.get("k") is None
    assert fault.hit and fault.hit_key == "k"
    faulty.put("k", b"v")               # one fault, one call
    assert inner.get("k") == b"v"


def test_drop_response_after_commit_commits_then_reports_transient(
        inner: MemoryStore, faulty: FaultyStore) -> None:
    faulty.inject("put_if_absent", "drop-response-after-commit")
    with pytest.raises(TransientStoreError, match="may or may not have committed"):
        faulty.put_if_absent("k", b"v")
    assert inner.get("k") == b"v"
    # The classic ambiguity: the retry of the winner now sees False.
    assert faulty.put_if_absent("k", b"v") is False


def test_transient_once_fails_once_without_touching_the_store(
        inner: MemoryStore, faulty: FaultyStore) -> None:
    faulty.inject("get", "transient-once")
    inner.put("k", b"v")
    with pytest.raises(TransientStoreError):
        faulty.get("k")
    assert faulty.get("k") == b"v"


def test_conflict_409_once_is_transient_and_lands_nothing(inner: MemoryStore,
                                                          faulty: FaultyStore) -> None:
    faulty.inject("put_if_absent", "conflict-409-once")
    with pytest.raises(TransientStoreError, match="409"):
        faulty.put_if_absent("k", b"v")
    assert inner.get("k") is None
    assert faulty.put_if_absent("k", b"v") is True


def test_false_to_winner_waits_for_a_real_winner(inner: MemoryStore,
                                                 faulty: FaultyStore) -> None:
    inner.put("taken", b"old")
    fault = faulty.inject("put_if_absent", "false-to-winner")
    assert faulty.put_if_absent("taken", b"new") is False   # a loser: the fault stays queued
    assert not fault.hit
    assert faulty.put_if_absent("fresh", b"mine") is False  # the winner is told False
    assert inner.get("fresh") == b"mine"
    assert fault.hit and fault.hit_key == "fresh"
    assert faulty.put_if_absent("again", b"x") is True


def test_false_to_winner_under_a_race_hides_the_only_winner(inner: MemoryStore,
                                                            faulty: FaultyStore) -> None:
    faulty.inject("put_if_absent", "false-to-winner", key="race")
    answers = run_together(
        [lambda n=n: faulty.put_if_absent("race", str(n).encode()) for n in range(8)])
    assert answers == [False] * 8
    assert inner.get("race") is not None
    faulty.assert_all_hit()


def test_faults_queue_first_in_first_out_per_op_and_by_key(inner: MemoryStore,
                                                           faulty: FaultyStore) -> None:
    faulty.inject("put", "transient-once", key="runs/*")
    faulty.inject("put", "raise-before")
    with pytest.raises(StoreError) as first:     # "other" skips the runs/* fault
        faulty.put("other", b"x")
    assert not isinstance(first.value, TransientStoreError)
    with pytest.raises(TransientStoreError):
        faulty.put("runs/r1", b"x")
    faulty.put("runs/r1", b"x")
    faulty.get("runs/r1")                        # another op never takes put's faults
    faulty.assert_all_hit()


def test_put_if_absent_is_offered_only_when_inner_has_it() -> None:
    assert supports_create(FaultyStore(MemoryStore()))
    assert not supports_create(FaultyStore(NoCreateStore()))


def test_calls_are_logged_in_order(faulty: FaultyStore) -> None:
    faulty.put("a", b"1")
    faulty.list("")
    faulty.delete("a")
    assert faulty.calls == [StoreCall("put", "a"), StoreCall("list", ""),
                            StoreCall("delete", "a")]
    assert faulty.call_count == 3


# -- loud failures -------------------------------------------------------------------


def test_assert_all_hit_lists_every_fault_never_hit(faulty: FaultyStore) -> None:
    faulty.inject("put_if_absent", "conflict-409-once", key="wait-outcomes/*")
    faulty.inject("delete", "raise-before")
    faulty.put_if_absent("waits/w1", b"x")
    with pytest.raises(AssertionError) as caught:
        faulty.assert_all_hit()
    assert "conflict-409-once on put_if_absent (key='wait-outcomes/*')" in str(caught.value)
    assert "raise-before on delete (any key)" in str(caught.value)


@pytest.mark.parametrize(
    ("op", "fault", "fragment"),
    [
        ("upsert", "raise-before", "unknown operation 'upsert'"),
        ("put", "explode", "unknown fault 'explode'"),
        ("put", "false-to-winner", "only makes sense on put_if_absent"),
        ("get", "conflict-409-once", "only makes sense on put_if_absent"),
    ],
)
def test_inject_refuses_faults_that_cannot_fire(faulty: FaultyStore, op: str, fault: str,
                                                fragment: str) -> None:
    with pytest.raises(FaultMisuse, match=fragment):
        faulty.inject(op, fault)


def test_create_faults_on_a_store_without_create_are_refused() -> None:
    with pytest.raises(FaultMisuse, match="no put_if_absent"):
        FaultyStore(NoCreateStore()).inject("put_if_absent", "transient-once")


# -- crashes -------------------------------------------------------------------------


def test_crash_before_sends_nothing_and_poisons_the_handle(inner: MemoryStore,
                                                           faulty: FaultyStore) -> None:
    faulty.crash("put", point="before", key="runs/*")
    faulty.put("other", b"1")
    with pytest.raises(SimulatedCrash):
        faulty.put("runs/r1", b"x")
    assert inner.get("runs/r1") is None
    assert faulty.crashed and faulty.crashed_at == StoreCall("put", "runs/r1")
    for call in (lambda: faulty.get("other"), lambda: faulty.list(""),
                 lambda: faulty.delete("other"), lambda: faulty.put_if_absent("z", b"")):
        with pytest.raises(SimulatedCrash, match="crashed handle"):
            call()
    assert inner.get("other") == b"1"


def test_crash_after_commit_keeps_the_write_and_hides_the_result(
        inner: MemoryStore, faulty: FaultyStore) -> None:
    faulty.crash("put_if_absent", after_calls=1, point="after_commit")
    assert faulty.put_if_absent("a", b"1") is True
    with pytest.raises(SimulatedCrash):
        faulty.put_if_absent("b", b"2")
    assert inner.get("b") == b"2"


def test_no_finally_or_except_exception_can_write_after_a_crash(
        inner: MemoryStore, faulty: FaultyStore) -> None:
    faulty.crash("put", key="runs/r1")

    def engine_step() -> None:
        try:
            faulty.put("runs/r1", b"state")
        except Exception:              # engine-style catch-all: must not see the crash
            faulty.put("runs/r1-failed", b"")
        finally:
            faulty.put("runs/r1-cleanup", b"")

    with pytest.raises(SimulatedCrash):
        engine_step()
    assert inner.list("") == []


def test_crash_after_call_explores_every_point(inner: MemoryStore) -> None:
    def operation(store: FaultyStore) -> None:
        store.put("a", b"1")
        store.get("a")
        store.put("b", b"2")

    counting = FaultyStore(MemoryStore())
    operation(counting)
    seen: list[list[str]] = []
    for n in range(1, counting.call_count + 1):
        store = MemoryStore()
        faulty = FaultyStore(store)
        faulty.crash_after_call(n)
        with pytest.raises(SimulatedCrash):
            operation(faulty)
        assert faulty.call_count == n
        seen.append(store.list(""))
    assert seen == [["a"], ["a"], ["a", "b"]]


def test_a_crash_that_never_fires_is_reported(faulty: FaultyStore) -> None:
    faulty.crash_after_call(5)
    faulty.put("a", b"1")
    with pytest.raises(AssertionError, match="crash at after_commit of any call #5"):
        faulty.assert_all_hit()


def test_a_second_armed_crash_is_refused(faulty: FaultyStore) -> None:
    faulty.crash("put")
    with pytest.raises(FaultMisuse, match="already armed"):
        faulty.crash("get")


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"op": "upsert"}, "unknown operation"),
        ({"point": "during"}, "unknown point"),
        ({"after_calls": -1}, ">= 0"),
    ],
)
def test_crash_refuses_what_cannot_fire(faulty: FaultyStore, kwargs: dict[str, object],
                                        fragment: str) -> None:
    with pytest.raises(FaultMisuse, match=fragment):
        faulty.crash(**kwargs)  # type: ignore[arg-type]


def test_crash_after_call_counts_from_one(faulty: FaultyStore) -> None:
    with pytest.raises(FaultMisuse, match="counted from 1"):
        faulty.crash_after_call(0)


def test_simulated_crash_escapes_except_exception() -> None:
    assert not issubclass(SimulatedCrash, Exception)
    assert issubclass(SimulatedCrash, BaseException)


def test_close_still_reaches_the_inner_store_after_a_crash() -> None:
    class Closable(MemoryStore):
        closed = False

        def close(self) -> None:
            self.closed = True

    inner = Closable()
    faulty = FaultyStore(inner)
    faulty.crash()
    with pytest.raises(SimulatedCrash):
        faulty.get("k")
    faulty.close()
    assert inner.closed


def test_a_crashed_handle_cannot_be_armed_again(faulty: FaultyStore) -> None:
    faulty.crash()
    with pytest.raises(SimulatedCrash):
        faulty.get("k")
    with pytest.raises(FaultMisuse, match="already crashed"):
        faulty.crash()


def test_create_results_pass_through_untouched() -> None:
    class SloppyStore(MemoryStore):
        def put_if_absent(self, key: str, data: bytes) -> bool:
            return None  # type: ignore[return-value]  # a broken store the suite must see

    assert FaultyStore(SloppyStore()).put_if_absent("k", b"") is None


class FalseToEveryWinner(MemoryStore):
    """A store that answers False to the create that won (C-LOST-1)."""

    def put_if_absent(self, key: str, data: bytes) -> bool:
        super().put_if_absent(key, data)
        return False


def test_false_to_winner_on_a_store_that_already_answers_false_counts_as_hit() -> None:
    inner = FalseToEveryWinner()
    faulty = FaultyStore(inner)
    fault = faulty.inject("put_if_absent", "false-to-winner", key="fresh")
    assert faulty.put_if_absent("fresh", b"mine") is False
    assert fault.hit and fault.hit_by_store and fault.hit_key == "fresh"
    faulty.assert_all_hit()  # the harness blames nothing: the store played the fault


def test_false_to_winner_is_not_taken_by_a_loser_whose_bytes_were_not_stored() -> None:
    inner = FalseToEveryWinner()
    inner.put("taken", b"old")
    faulty = FaultyStore(inner)
    fault = faulty.inject("put_if_absent", "false-to-winner")
    assert faulty.put_if_absent("taken", b"new") is False
    assert not fault.hit
    with pytest.raises(AssertionError, match="never hit"):
        faulty.assert_all_hit()
