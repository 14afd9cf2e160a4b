"""The judge's verdicts on recorded histories: correct answers pass (concurrency, faults,
reopen and unshared handles allowed for), wrong ones are blamed on their cause."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dw_testing.history import Budget, Operation
from dw_testing.judge import Trial
from dw_testing.judge.blame import twins
from reference_engine.stores.memory import MemoryStore

NS = "dwc-t-main/1/"
CAPS = {"cross_handle": True, "durable_reopen": True, "sorted_list": True,
        "segment_prefixes": True}


def _ticks() -> Iterator[int]:
    return itertools.count(1)


def _trial(**caps: bool) -> Trial:
    trial = Trial("under-test", NS, {**CAPS, **caps})
    ticks = _ticks()
    trial.log.clock = lambda: next(ticks)
    return trial


@given(st.lists(st.tuples(st.sampled_from(["put", "pif", "get", "delete", "list"]),
                          st.sampled_from(["a", "a/b", "B", "b"]),
                          st.binary(max_size=3)), max_size=30))
@settings(max_examples=60, deadline=None)
def test_a_correct_store_is_never_accused(calls: list[tuple[str, str, bytes]]) -> None:
    trial = _trial()
    backing = MemoryStore()
    first, second = trial.wrap(backing), trial.wrap(backing)
    for n, (op, key, value) in enumerate(calls):
        handle = first if n % 2 else second
        full = NS + key
        if op == "put":
            handle.put(full, value)
        elif op == "pif":
            handle.put_if_absent(full, value)
        elif op == "get":
            handle.get(full)
        elif op == "delete":
            handle.delete(full)
        else:
            handle.list(NS)
    assert trial.verdict().verdict == "ok"


def test_a_read_of_another_keys_record_is_blamed_on_the_key() -> None:
    trial = _trial()
    store = trial.wrap(MemoryStore())
    store.put(NS + "Run", b"one")
    store.put(NS + "run", b"two")
    # A store that folded case would answer this read with the second record.
    store.log.add(store.log.ops[-1].__class__(store.name, "get", NS + "Run", None, b"two",
                                              store.log.clock(), store.log.clock()))
    judgement = trial.verdict()
    assert judgement.wrong and judgement.blame is not None
    assert judgement.blame.clause == "C-KEY-2", judgement.message()
    assert "'run'" in judgement.blame.call and NS not in judgement.blame.call


def test_a_value_that_differs_in_one_byte_is_blamed_on_the_value() -> None:
    trial = _trial()
    store = trial.wrap(MemoryStore())
    store.put(NS + "v", b"abc\n")
    op = store.log.ops[-1]
    store.log.add(op.__class__(store.name, "get", NS + "v", None, b"abc",
                               store.log.clock(), store.log.clock()))
    judgement = trial.verdict()
    assert judgement.blame is not None and judgement.blame.clause == "C-VAL-1"
    assert "first difference at byte 3" in judgement.blame.call


def test_a_list_that_stops_at_its_first_page_is_told_to_follow_every_page() -> None:
    trial = _trial()
    store = trial.wrap(MemoryStore())
    for n in range(5):
        store.put(f"{NS}many/{n}", b"x")
    store.log.add(_list(store, f"{NS}many/", (f"{NS}many/0", f"{NS}many/1")))
    judgement = trial.verdict()
    assert judgement.blame is not None and judgement.blame.clause == "C-LIST-3/pages"
    assert "missing 3 of them" in judgement.blame.call
    assert "continuation token" in judgement.blame.fix


def _list(store: Any, prefix: str, keys: tuple[str, ...]) -> Any:
    from dw_testing.judge import ListCall

    return ListCall(store.name, prefix, keys, store.log.clock(), store.log.clock())


def test_a_list_running_beside_writes_and_deletes_may_hold_either() -> None:
    trial = _trial()
    store = trial.wrap(MemoryStore())
    store.put(NS + "l/a", b"1")
    start = store.log.clock()
    store.put(NS + "l/b", b"2")       # written while the list ran: may be listed or not
    store.delete(NS + "l/a")          # deleted while the list ran: may be listed or not
    from dw_testing.judge import ListCall

    store.log.add(ListCall(store.name, NS + "l/", (NS + "l/a",), start, store.log.clock()))
    assert trial.verdict().verdict == "ok"


def test_a_key_listed_that_never_existed_is_wrong() -> None:
    trial = _trial()
    store = trial.wrap(MemoryStore())
    store.put(NS + "l/a", b"1")
    store.log.add(_list(store, NS + "l/", (NS + "l/a", NS + "l/ghost")))
    judgement = trial.verdict()
    assert judgement.wrong and judgement.blame is not None
    assert judgement.blame.symptom == "C-LIST-3" and "ghost" in judgement.blame.call


def test_a_read_on_another_handle_that_misses_a_write_is_blamed_on_handles() -> None:
    trial = _trial()
    backing = MemoryStore()
    writer, reader = trial.wrap(backing), trial.wrap(MemoryStore())
    writer.put(NS + "k", b"v")
    assert reader.get(NS + "k") is None
    judgement = trial.verdict()
    assert judgement.blame is not None and judgement.blame.clause == "C-HANDLE-1"
    assert judgement.blame.handle == reader.name


def test_unshared_handles_are_judged_one_at_a_time() -> None:
    trial = _trial(cross_handle=False)
    writer, reader = trial.wrap(MemoryStore()), trial.wrap(MemoryStore())
    writer.put(NS + "k", b"v")
    assert reader.get(NS + "k") is None
    assert trial.verdict().verdict == "ok"


def test_a_record_lost_across_a_reopen_is_allowed_without_durable_reopen() -> None:
    for durable, expected in ((False, "ok"), (True, "wrong")):
        trial = _trial(durable_reopen=durable)
        first = trial.wrap(MemoryStore())
        first.put(NS + "k", b"v")
        first.close()
        second = trial.wrap(MemoryStore())
        assert second.get(NS + "k") is None
        assert trial.verdict().verdict == expected


def test_a_call_that_raised_may_or_may_not_have_happened() -> None:
    trial = _trial()
    backing = MemoryStore()
    store = trial.wrap(backing)

    class Lost(Exception):
        pass

    def lost_reply(key: str, data: bytes) -> None:
        backing.put(key, data)
        raise Lost

    store.inner = type("Wire", (), {"put": staticmethod(lost_reply), "get": backing.get})()
    with pytest.raises(Lost):
        store.put(NS + "k", b"v")
    assert store.get(NS + "k") == b"v"
    assert trial.verdict().verdict == "ok"


def test_a_search_out_of_budget_decides_nothing() -> None:
    trial = _trial()
    trial.budget = Budget(max_steps=0, max_seconds=None)
    store = trial.wrap(MemoryStore())
    for n in range(6):
        store.put(NS + "k", bytes([n]))
    # A wrong read that only a search (not the quick pass) could place.
    store.log.add(store.log.ops[-1].__class__(store.name, "get", NS + "k", None, b"\x01",
                                              store.log.clock(), store.log.clock()))
    assert trial.verdict().verdict == "undecided"


def test_twins_are_keys_a_rewriting_store_confuses() -> None:
    assert twins("Run", "run")
    assert twins("caf\u00e9", "cafe\u0301")
    assert twins("a%2Fb", "a/b")
    assert not twins("run-1", "run-2")


def test_calls_outside_the_test_namespace_are_not_judged() -> None:
    trial = _trial()
    store = trial.wrap(MemoryStore())
    store.log.add(_list(store, "", ("someone-else/k",)))
    assert trial.verdict().verdict == "ok"


def test_calls_beyond_the_contract_leave_the_history_unjudged() -> None:
    class WithExtras(MemoryStore):
        def bulk_put(self, key: str, data: bytes) -> None:
            self.put(key, data)

    trial = _trial()
    store = trial.wrap(WithExtras())
    store.bulk_put(NS + "k", b"written around the record")  # a method beyond the contract
    assert store.get(NS + "k") == b"written around the record"
    assert trial.verdict().verdict == "not-judged"


def test_a_create_that_overwrote_a_record_is_blamed_on_the_create() -> None:
    from dw_testing.selftest.mutants import PROVIDERS

    with PROVIDERS["overwriting_create"]() as spec:
        trial = _trial()
        store = trial.wrap(spec.factory())
        store.put(NS + "c", b"first")
        store.put_if_absent(NS + "c", b"second")
        store.get(NS + "c")
        judgement = trial.verdict()
    assert judgement.blame is not None and judgement.blame.clause == "C-CREATE-1", (
        judgement.message())


def _history(*calls: tuple[str, str, bytes | None, object, int, int]) -> Trial:
    """A trial holding exactly ``calls``: (op, key, value, result, call, ret), one handle."""
    trial = _trial()
    store = trial.wrap(MemoryStore())
    for op, key, value, result, call, ret in calls:
        row = Operation(store.name, op, NS + key, value, result, call, ret)  # type: ignore[arg-type]
        store.log.add(row)
    return trial


def test_a_wrong_false_that_shows_first_as_a_read_is_blamed_on_the_create() -> None:
    # The read began first and returned the create's bytes; only a create told False wrote
    # them. The read is the symptom, the False the cause (the creator is told True).
    judgement = _history(("get", "k", None, b"c", 1, 3),
                         ("put_if_absent", "k", b"c", False, 2, 4)).verdict()
    assert judgement.wrong and judgement.blame is not None
    assert judgement.blame.call.startswith("put_if_absent('k') answered False"), \
        judgement.message()
    assert judgement.blame.clause == "C-CREATE-3", judgement.message()


def test_a_false_beside_a_create_in_flight_after_a_delete_is_a_conflict() -> None:
    # Deleted, then two creates race; the later-begun one is told False with no record
    # there, and the racer is told False too once a put lands: a conflict, not a blocked
    # re-create (no create after the delete was told False alone).
    judgement = _history(("put", "k", b"x", None, 1, 2), ("delete", "k", None, None, 3, 4),
                         ("put_if_absent", "k", b"a", False, 5, 12),
                         ("put_if_absent", "k", b"b", False, 6, 7),
                         ("put", "k", b"y", None, 8, 9)).verdict()
    assert judgement.blame is not None and judgement.blame.clause == "C-CREATE-6", \
        judgement.message()


def test_a_lone_false_after_a_delete_is_a_blocked_re_create() -> None:
    judgement = _history(("put", "k", b"x", None, 1, 2), ("delete", "k", None, None, 3, 4),
                         ("put_if_absent", "k", b"a", False, 5, 6)).verdict()
    assert judgement.blame is not None and judgement.blame.clause == "C-CREATE-5", \
        judgement.message()


def test_a_false_after_a_delete_beside_a_key_the_store_kept_apart_is_no_nesting() -> None:
    # 'nest/a' was created beside 'nest/a/b' before, so the key beneath does not explain
    # the False after the delete: the delete does (C-CREATE-5), not C-KEY-3.
    judgement = _history(("put", "nest/a/b", b"child", None, 1, 2),
                         ("put_if_absent", "nest/a", b"beside", True, 3, 4),
                         ("delete", "nest/a", None, None, 5, 6),
                         ("put_if_absent", "nest/a", b"again", False, 7, 8)).verdict()
    assert judgement.blame is not None and judgement.blame.clause == "C-CREATE-5", \
        judgement.message()


def test_a_false_beside_a_key_beneath_is_nesting_when_nothing_else_explains_it() -> None:
    judgement = _history(("put", "nest/a/b", b"child", None, 1, 2),
                         ("put_if_absent", "nest/a", b"beside", False, 3, 4)).verdict()
    assert judgement.blame is not None and judgement.blame.clause == "C-KEY-3", \
        judgement.message()


def test_a_raced_false_is_a_blocked_re_create_when_the_key_also_shows_a_lone_one() -> None:
    # The first wrong answer is raced, but later a create after a delete is told False with
    # nobody racing it: a store that blocks re-creating a deleted key, raced or not.
    judgement = _history(("put", "k", b"x", None, 1, 2), ("delete", "k", None, None, 3, 4),
                         ("put_if_absent", "k", b"a", False, 5, 12),
                         ("put_if_absent", "k", b"b", False, 6, 7),
                         ("put", "k", b"y", None, 8, 9), ("delete", "k", None, None, 13, 14),
                         ("put_if_absent", "k", b"z", False, 15, 16)).verdict()
    assert judgement.blame is not None and judgement.blame.clause == "C-CREATE-5", \
        judgement.message()


def test_a_key_beneath_deleted_before_explains_no_false() -> None:
    judgement = _history(("put", "nest/a/b", b"child", None, 1, 2),
                         ("delete", "nest/a/b", None, None, 3, 4),
                         ("put_if_absent", "nest/a", b"after", False, 5, 6)).verdict()
    assert judgement.blame is not None and judgement.blame.clause != "C-KEY-3", \
        judgement.message()
