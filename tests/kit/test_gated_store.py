"""GatedStore parks calls where a test says, and fails loudly when the script is wrong."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dw_testing.kit.doubles import NoCreateStore
from dw_testing.kit.gates import CallEvent, GatedStore, GateMisuse, GateTimeout
from reference_engine.errors import InvalidKey
from reference_engine.stores.contract import supports_create
from reference_engine.stores.memory import MemoryStore

# Timeouts here only bound failure detection; no test waits on them to order events.
SHORT = 0.3


@pytest.fixture
def inner() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def gated(inner: MemoryStore) -> GatedStore:
    return GatedStore(inner, timeout=5.0)


def test_after_commit_gate_holds_a_committed_create_from_its_caller(
        inner: MemoryStore, gated: GatedStore) -> None:
    gate = gated.pause("put_if_absent", point="after_commit", key="wait-outcomes/*")
    creator = gated.spawn(lambda: gated.put_if_absent("wait-outcomes/w1", b"first"))

    arrival = gate.wait_reached()

    assert arrival == CallEvent("put_if_absent", "wait-outcomes/w1", "after_commit")
    assert inner.get("wait-outcomes/w1") == b"first"   # committed...
    assert not creator.done                              # ...but the caller has not seen it
    assert gated.put_if_absent("wait-outcomes/w1", b"second") is False
    gate.release()
    assert creator.result() is True
    gated.assert_all_gates_used()


def test_before_gate_lets_a_competitor_win_first(inner: MemoryStore, gated: GatedStore) -> None:
    gate = gated.pause("put_if_absent", point="before", key="k")
    late = gated.spawn(lambda: gated.put_if_absent("k", b"late"))
    gate.wait_reached()
    assert inner.get("k") is None                        # nothing sent yet

    assert gated.put_if_absent("k", b"early") is True    # the competitor, on this thread
    gate.release()

    assert late.result() is False
    assert inner.get("k") == b"early"


def test_nth_parks_only_the_nth_matching_call(gated: GatedStore) -> None:
    gate = gated.pause("put", key="runs/*", nth=2)
    gated.put("other", b"x")       # does not match: not counted
    gated.put("runs/a", b"1")      # first match: passes
    second = gated.spawn(lambda: gated.put("runs/b", b"2"))
    assert gate.wait_reached().key == "runs/b"
    gated.put("runs/c", b"3")      # third match: times=1 is used up, passes
    gate.release()
    second.result()
    assert gate.matched == 3


def test_times_none_parks_every_match_and_release_count_picks_the_first(
        inner: MemoryStore, gated: GatedStore) -> None:
    gate = gated.pause("put", point="before", times=None)
    first = gated.spawn(lambda: gated.put("k", b"first"), name="first")
    gate.wait_reached(1)
    second = gated.spawn(lambda: gated.put("k", b"second"), name="second")
    gate.wait_reached(2)
    assert gate.parked == 2

    gate.release(count=1)          # "first" goes alone
    first.result()
    assert inner.get("k") == b"first"
    gate.release()
    second.result()
    assert inner.get("k") == b"second"


def test_list_has_a_before_point_keyed_on_the_prefix(inner: MemoryStore,
                                                     gated: GatedStore) -> None:
    gate = gated.pause("list", key="runs")
    lister = gated.spawn(lambda: gated.list("runs"))
    gate.wait_reached()
    inner.put("runs/r1", b"")       # lands before the list runs
    gate.release()
    assert lister.result() == ["runs/r1"]


def test_key_pattern_is_case_sensitive_and_other_ops_pass(gated: GatedStore) -> None:
    gate = gated.pause("get", key="Runs/*")
    gated.put("runs/a", b"1")
    assert gated.get("runs/a") == b"1"      # different case: not parked
    assert not gate.reached


def test_calls_log_records_the_interleaving(gated: GatedStore) -> None:
    gate = gated.pause("put", point="after_commit", key="a")
    writer = gated.spawn(lambda: gated.put("a", b"1"))
    gate.wait_reached()
    gated.get("a")
    gate.release()
    writer.result()
    assert gated.calls == [
        CallEvent("put", "a", "before"),
        CallEvent("put", "a", "after_commit"),
        CallEvent("get", "a", "before"),
        CallEvent("get", "a", "after_commit"),
    ]


def test_a_raising_inner_call_is_logged_and_never_reaches_after_commit(
        gated: GatedStore) -> None:
    gate = gated.pause("put", point="after_commit")
    with pytest.raises(InvalidKey):
        gated.put("../escape", b"x")
    assert gated.calls[-1] == CallEvent("put", "../escape", "raised")
    assert not gate.reached


def test_two_gates_on_one_call_are_passed_in_order(gated: GatedStore) -> None:
    outer = gated.pause("delete", key="k")
    inner_gate = gated.pause("delete", key="k")
    deleter = gated.spawn(lambda: gated.delete("k"))
    outer.wait_reached()
    assert not inner_gate.reached
    outer.release()
    inner_gate.wait_reached()
    inner_gate.release()
    deleter.result()


def test_put_if_absent_is_offered_only_when_inner_has_it() -> None:
    assert supports_create(GatedStore(MemoryStore()))
    assert not supports_create(GatedStore(NoCreateStore()))


def test_spawned_result_reraises_what_the_call_raised(gated: GatedStore) -> None:
    failing = gated.spawn(lambda: gated.get("/absolute"))
    with pytest.raises(InvalidKey):
        failing.result()
    assert isinstance(failing.exception(), InvalidKey)


def test_context_manager_releases_everything_and_checks_the_gates(inner: MemoryStore) -> None:
    with (pytest.raises(AssertionError, match="never reached"),
          GatedStore(inner, timeout=5.0) as gated):
        gated.pause("get", key="nobody-reads-this")


def test_context_manager_frees_a_parked_call_when_the_body_fails(inner: MemoryStore) -> None:
    with (pytest.raises(RuntimeError, match="test body failed"),
          GatedStore(inner, timeout=5.0) as gated):
        gate = gated.pause("put")
        writer = gated.spawn(lambda: gated.put("k", b"v"))
        gate.wait_reached()
        raise RuntimeError("test body failed")
    assert writer.done and writer.exception() is None


# -- loud failures -------------------------------------------------------------------


def test_a_gate_never_reached_times_out_naming_the_gate_and_what_did_arrive(
        gated: GatedStore) -> None:
    gate = gated.pause("put_if_absent", point="after_commit", key="wait-outcomes/*")
    gated.put_if_absent("waits/w1", b"x")   # a typo'd prefix in the script, say
    with pytest.raises(GateTimeout) as caught:
        gate.wait_reached(timeout=SHORT)
    message = str(caught.value)
    assert "put_if_absent after_commit key='wait-outcomes/*'" in message
    assert "not reached" in message and "'waits/w1'" in message


def test_wait_reached_reports_a_spawned_call_that_already_failed(gated: GatedStore) -> None:
    gate = gated.pause("put")
    broken = gated.spawn(lambda: gated.get("/bad"), name="signal")
    broken.join()
    with pytest.raises(GateTimeout, match="'signal' already raised InvalidKey"):
        gate.wait_reached(timeout=SHORT)


def test_a_parked_call_nobody_releases_raises_in_its_own_thread(inner: MemoryStore) -> None:
    gated = GatedStore(inner, timeout=SHORT)
    gate = gated.pause("put", key="k")
    writer = gated.spawn(lambda: gated.put("k", b"v"))
    gate.wait_reached(timeout=5.0)
    with pytest.raises(GateTimeout, match=r"put\('k'\) parked at <gate put before key='k'>"):
        writer.result(timeout=5.0)
    assert inner.get("k") is None
    with pytest.raises(AssertionError, match="nobody released it"):
        gated.assert_all_gates_used()


def test_result_times_out_naming_the_gate_that_holds_the_call(gated: GatedStore) -> None:
    gate = gated.pause("delete")
    deleter = gated.spawn(lambda: gated.delete("k"), name="cancel")
    gate.wait_reached()
    with pytest.raises(GateTimeout, match=r"'cancel' did not finish.*parked at <gate delete"):
        deleter.result(timeout=SHORT)
    gate.release()
    deleter.result()


def test_assert_all_gates_used_names_unreached_and_unreleased_gates(gated: GatedStore) -> None:
    gated.pause("get", key="never")
    held = gated.pause("put", key="held")
    writer = gated.spawn(lambda: gated.put("held", b"v"))
    held.wait_reached()
    with pytest.raises(AssertionError) as caught:
        gated.assert_all_gates_used()
    assert "<gate get before key='never'> was never reached" in str(caught.value)
    assert "<gate put before key='held'> still holds 1 parked call" in str(caught.value)
    held.release()
    writer.result()


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"op": "upsert"}, "unknown operation 'upsert'"),
        ({"op": "put", "point": "after"}, "unknown point 'after'"),
        ({"op": "put", "nth": 0}, "counted from 1"),
        ({"op": "put", "times": 0}, "times=0"),
    ],
)
def test_pause_refuses_what_no_call_can_match(gated: GatedStore, kwargs: dict[str, object],
                                              fragment: str) -> None:
    op = kwargs.pop("op")
    with pytest.raises(GateMisuse, match=fragment):
        gated.pause(str(op), **kwargs)  # type: ignore[arg-type]


def test_pausing_a_create_on_a_store_without_one_is_refused() -> None:
    with pytest.raises(GateMisuse, match="no put_if_absent"):
        GatedStore(NoCreateStore()).pause("put_if_absent")


def test_release_before_any_arrival_teaches_wait_reached(gated: GatedStore) -> None:
    gate = gated.pause("put")
    with pytest.raises(GateMisuse, match=r"call gate.wait_reached\(\) first"):
        gate.release()


def test_releasing_twice_is_refused(gated: GatedStore) -> None:
    gate = gated.pause("put")
    writer = gated.spawn(lambda: gated.put("k", b"v"))
    gate.wait_reached()
    gate.release()
    writer.result()
    with pytest.raises(GateMisuse, match="already released"):
        gate.release()


def test_release_count_beyond_parked_calls_is_refused(gated: GatedStore) -> None:
    gate = gated.pause("put")
    writer = gated.spawn(lambda: gated.put("k", b"v"))
    gate.wait_reached()
    with pytest.raises(GateMisuse, match="only 1 call"):
        gate.release(count=2)
    gate.release()
    writer.result()


def test_open_lets_later_calls_through(gated: GatedStore) -> None:
    gate = gated.pause("put", times=None)
    gate.open()
    writer = gated.spawn(lambda: gated.get("k"))
    assert writer.result() is None
    assert gate.matched == 0 and not gate.reached
    gated.put("k", b"v")            # on this thread: would park without open()
    assert gate.matched == 1 and not gate.reached


def test_a_call_that_would_park_the_scripting_thread_is_refused_at_once(
        gated: GatedStore) -> None:
    gate = gated.pause("put", times=None)
    writer = gated.spawn(lambda: gated.put("k", b"spawned"))
    gate.wait_reached()
    with pytest.raises(GateMisuse, match="certain deadlock"):
        gated.put("k", b"main")          # the competitor on this thread matches too
    gate.release()
    writer.result()
    with pytest.raises(AssertionError, match="certain deadlock"):
        gated.assert_all_gates_used()   # reported even if engine code swallowed it


def test_wait_reached_counts_from_one(gated: GatedStore) -> None:
    with pytest.raises(GateMisuse, match="count from 1"):
        gated.pause("put").wait_reached(0)


def test_context_manager_reports_a_spawned_failure_nobody_read(inner: MemoryStore) -> None:
    with (pytest.raises(AssertionError, match="'reader' raised InvalidKey"),
          GatedStore(inner, timeout=5.0) as gated):
        gated.spawn(lambda: gated.get("/bad"), name="reader")


def test_context_manager_passes_a_clean_script(inner: MemoryStore) -> None:
    with GatedStore(inner, timeout=5.0) as gated:
        gate = gated.pause("put")
        writer = gated.spawn(lambda: gated.put("k", b"v"))
        gate.wait_reached()
        gate.release()
        writer.result()
    assert inner.get("k") == b"v"


# -- hooks ---------------------------------------------------------------------------


def test_hook_runs_a_competitor_between_commit_and_return(inner: MemoryStore,
                                                          gated: GatedStore) -> None:
    rival = GatedStore(inner)       # another handle on the same records
    hook = gated.at("put_if_absent", point="after_commit", key="wait-outcomes/*",
                    do=lambda: rival.put_if_absent("wait-outcomes/w1", b"rival"))
    assert gated.put_if_absent("wait-outcomes/w1", b"mine") is True
    assert hook.fired_by == CallEvent("put_if_absent", "wait-outcomes/w1", "after_commit")
    assert hook.result() is False                    # the rival lost: the create had landed
    assert gated.calls == [CallEvent("put_if_absent", "wait-outcomes/w1", "before"),
                           CallEvent("put_if_absent", "wait-outcomes/w1", "after_commit")]
    gated.assert_all_gates_used()


def test_hook_before_the_call_lets_the_competitor_land_first(inner: MemoryStore,
                                                             gated: GatedStore) -> None:
    gated.at("put_if_absent", key="k", do=lambda: inner.put("k", b"first"))
    assert gated.put_if_absent("k", b"second") is False
    assert inner.get("k") == b"first"


def test_hook_fires_once_on_the_nth_match_and_its_own_calls_pass(gated: GatedStore) -> None:
    seen: list[int] = []

    def side_write() -> None:
        gated.put("side", b"")
        seen.append(1)

    hook = gated.at("put", nth=2, do=side_write)
    gated.put("a", b"")
    gated.put("b", b"")
    gated.put("c", b"")
    assert seen == [1] and hook.fired_by is not None and hook.fired_by.key == "b"
    assert [c.key for c in gated.calls if c.point == "before"] == ["a", "b", "side", "c"]


def test_a_hook_action_that_raises_does_not_break_the_call_but_is_reported(
        inner: MemoryStore, gated: GatedStore) -> None:
    hook = gated.at("put", do=lambda: inner.get("/bad"))
    gated.put("k", b"v")
    assert inner.get("k") == b"v"
    with pytest.raises(AssertionError, match="action raised InvalidKey"):
        gated.assert_all_gates_used()
    with pytest.raises(InvalidKey):
        hook.result()
    gated.assert_all_gates_used()                    # read now: no longer a problem


def test_a_hook_that_never_fires_is_reported(gated: GatedStore) -> None:
    hook = gated.at("delete", key="never", do=lambda: None)
    with pytest.raises(GateMisuse, match="never fired"):
        hook.result()
    with pytest.raises(AssertionError, match="<hook delete before key='never'> never fired"):
        gated.assert_all_gates_used()


def test_at_refuses_what_cannot_fire(gated: GatedStore) -> None:
    with pytest.raises(GateMisuse, match="unknown operation"):
        gated.at("upsert", do=lambda: None)
    with pytest.raises(GateMisuse, match="unknown point"):
        gated.at("put", point="later", do=lambda: None)
    with pytest.raises(GateMisuse, match="callable"):
        gated.at("put", do=None)  # type: ignore[arg-type]


def test_create_results_pass_through_untouched() -> None:
    class SloppyStore(MemoryStore):
        def put_if_absent(self, key: str, data: bytes) -> bool:
            return None  # type: ignore[return-value]  # a broken store the suite must see

    assert GatedStore(SloppyStore()).put_if_absent("k", b"") is None


def test_eight_creates_parked_together_then_released_at_once_have_one_winner(
        inner: MemoryStore, gated: GatedStore) -> None:
    gate = gated.pause("put_if_absent", key="race", times=None)

    def create(n: int) -> Callable[[], bool]:
        return lambda: gated.put_if_absent("race", bytes([n]))

    racers = [gated.spawn(create(n)) for n in range(8)]
    gate.wait_reached(8)
    assert inner.get("race") is None
    gate.release()
    assert sorted(r.result() for r in racers) == [False] * 7 + [True]


def test_gates_compose_with_faults(inner: MemoryStore) -> None:
    from dw_testing.kit.faults import FaultyStore
    from reference_engine.errors import TransientStoreError

    gated = GatedStore(inner, timeout=5.0)
    faulty = FaultyStore(gated)
    faulty.inject("put_if_absent", "drop-response-after-commit")
    gate = gated.pause("put_if_absent", point="after_commit")
    creator = gated.spawn(lambda: faulty.put_if_absent("k", b"v"))
    gate.wait_reached()
    assert inner.get("k") == b"v"
    gate.release()
    with pytest.raises(TransientStoreError):
        creator.result()
    faulty.assert_all_hit()
