"""Recording real stores: intervals, indeterminate calls, JSON lines, merging, and
the thread workload catching broken stores."""

from __future__ import annotations

import itertools
import json
import os
import random
import tempfile
import threading
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dw_testing.history.checker import check_history
from dw_testing.history.events import Operation, dump_jsonl, load_jsonl, merge_histories
from dw_testing.history.generate import simulated_history
from dw_testing.history.recorder import HistoryLog, HistoryRecorder
from dw_testing.history.workload import plan, run_threads
from dw_testing.kit.faults import FaultyStore
from reference_engine.errors import TransientStoreError
from reference_engine.stores.memory import MemoryStore


def fresh_name() -> str:
    """A memory space no other test (or rerun) has touched: histories assume empty keys."""
    return f"history-{uuid.uuid4().hex}"


class ExplodingStore(MemoryStore):
    """Applies a put and then loses the response, like a dropped reply."""

    def put(self, key: str, data: bytes) -> None:
        super().put(key, data)
        raise TransientStoreError("reply lost", op="put", key=key)


class CheckThenWriteStore(MemoryStore):
    """Not atomic: reads, yields the CPU, then writes."""

    def put_if_absent(self, key: str, data: bytes) -> bool:
        if self.get(key) is not None:
            return False
        os.sched_yield()  # releases the GIL: another racer may check here too
        self.put(key, data)
        return True


class OverwritingCreateStore(MemoryStore):
    """Writes even when the key exists, and still answers False."""

    def put_if_absent(self, key: str, data: bytes) -> bool:
        existed = self.get(key) is not None
        self.put(key, data)
        return not existed


class BarrierCreateStore(MemoryStore):
    """Check-then-write whose two racers are forced to check before either writes."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.both_checked = threading.Barrier(2)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        if self.get(key) is not None:
            return False
        self.both_checked.wait(10)
        self.put(key, data)
        return True


def test_recorder_keeps_call_before_return_and_results() -> None:
    store = HistoryRecorder(MemoryStore(), process_id="p")
    assert store.put_if_absent("k", b"v") is True
    assert store.put_if_absent("k", b"w") is False
    assert store.get("k") == b"v"
    store.delete("k")
    assert store.get("k") is None
    history = store.history
    assert [(op.op, op.result) for op in history] == [
        ("put_if_absent", True), ("put_if_absent", False), ("get", b"v"), ("delete", None),
        ("get", None)]
    assert all(op.ret is not None and op.call <= op.ret for op in history)
    assert all(a.ret is not None and a.ret <= b.call for a, b in itertools.pairwise(history))


def test_a_call_that_raised_is_indeterminate_and_reraised() -> None:
    store = HistoryRecorder(ExplodingStore(), process_id="p")
    with pytest.raises(TransientStoreError):
        store.put("k", b"v")
    store.get("k")
    put_op, get_op = store.history
    assert put_op.indeterminate and put_op.error == "TransientStoreError"
    assert get_op.result == b"v"
    assert check_history(store.history).verdict == "ok"


def test_recorder_hides_put_if_absent_when_the_store_lacks_it() -> None:
    class NoCreate:
        def put(self, key: str, data: bytes) -> None: ...

    assert not hasattr(HistoryRecorder(NoCreate(), process_id="p"), "put_if_absent")


def test_jsonl_round_trip_and_merge(tmp_path: Path) -> None:
    log_a, log_b = HistoryLog(), HistoryLog()
    shared = MemoryStore()
    a = HistoryRecorder(shared, process_id="a", log=log_a)
    b = HistoryRecorder(shared, process_id="b", log=log_b)
    a.put_if_absent("k", b"")
    b.get("k")
    b.put_if_absent("k", b"\x00\xff")
    a.delete("k")
    with pytest.raises(TransientStoreError):
        HistoryRecorder(ExplodingStore(), process_id="c", log=log_b).put("k", b"x")
    log_a.dump(tmp_path / "a.jsonl")
    dump_jsonl(log_b.operations(), tmp_path / "b.jsonl")
    merged = load_jsonl(tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    assert merged == merge_histories(log_a.operations(), log_b.operations())
    assert [op.process for op in merged] == ["a", "b", "b", "a", "c"]
    assert merged[1].result == b""
    assert merged[4].indeterminate


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.floats(0.0, 0.3), st.booleans())
def test_files_in_the_earlier_format_load_as_dumped_ones_do(
        seed: int, raised: float, faults: bool) -> None:
    """Earlier files were ``json.dumps(op.to_json())`` a line (no ``fault`` key when none);
    they load to the calls a fresh ``dump_jsonl`` gives back."""
    history = simulated_history(random.Random(seed), operations=40, keys=("a", "b"),
                                indeterminate_rate=raised)
    if faults:
        history = [replace(op, fault="lost-reply") if n % 3 == 0 else op
                   for n, op in enumerate(history)]
    with tempfile.TemporaryDirectory() as folder:
        old, new = Path(folder) / "old.jsonl", Path(folder) / "new.jsonl"
        old.write_text("".join(json.dumps(op.to_json(), separators=(",", ":")) + "\n"
                               for op in history), encoding="utf-8")
        dump_jsonl(history, new)
        expected = merge_histories(history)
        assert load_jsonl(old) == expected
        assert load_jsonl(new) == expected
        assert [Operation.from_json(json.loads(line))
                for line in new.read_text(encoding="utf-8").splitlines()] == history


def test_a_damaged_jsonl_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"op": "put"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"h\.jsonl:1"):
        load_jsonl(path)


def test_unknown_op_is_refused() -> None:
    with pytest.raises(ValueError, match="expected one of"):
        Operation.from_json({"process": "p", "op": "cas", "key": "k", "call": 0, "ret": 1})


def test_forced_double_create_is_caught() -> None:
    backing = BarrierCreateStore(fresh_name())
    log = HistoryLog()
    racers = [HistoryRecorder(backing, process_id=f"t{i}", log=log) for i in range(2)]
    threads = [threading.Thread(target=r.put_if_absent, args=("k", f"v{i}".encode()))
               for i, r in enumerate(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    racers[0].get("k")
    result = check_history(log.operations())
    assert result.verdict == "violation"
    assert "put_if_absent" in result.describe()


def test_thread_workload_passes_on_a_correct_store() -> None:
    name = fresh_name()
    history = run_threads(lambda: MemoryStore(name), racers=4, calls=60, seed=1)
    assert len(history) == 240
    assert check_history(history).verdict == "ok"


def test_thread_workload_catches_an_overwriting_create() -> None:
    name = fresh_name()
    history = run_threads(lambda: OverwritingCreateStore(name), racers=3, calls=60, seed=2)
    assert check_history(history).verdict == "violation"


def test_thread_workload_catches_check_then_write() -> None:
    name = fresh_name()
    history = run_threads(lambda: CheckThenWriteStore(name), racers=4, calls=60, seed=3)
    assert check_history(history).verdict == "violation"


def test_plan_is_reproducible_and_values_unique() -> None:
    steps = plan(7, "t0", 200, ("a", "b"))
    assert steps == plan(7, "t0", 200, ("a", "b"))
    values = [v for _, _, v in steps if v]
    assert len(values) == len(set(values))


def test_a_lost_response_then_false_on_retry_is_linearizable() -> None:
    """C-LOST-1: the create landed, its reply was lost, the retry answers False."""
    faulty = FaultyStore(MemoryStore())
    faulty.inject("put_if_absent", "drop-response-after-commit", key="k")
    store = HistoryRecorder(faulty, process_id="writer")
    with pytest.raises(TransientStoreError):
        store.put_if_absent("k", b"mine")
    assert store.put_if_absent("k", b"mine") is False
    assert store.get("k") == b"mine"
    faulty.assert_all_hit()
    assert check_history(store.history).verdict == "ok"


def test_false_to_the_winner_without_a_fault_is_a_violation() -> None:
    faulty = FaultyStore(MemoryStore())
    faulty.inject("put_if_absent", "false-to-winner", key="k")
    store = HistoryRecorder(faulty, process_id="writer")
    assert store.put_if_absent("k", b"mine") is False
    assert store.get("k") == b"mine"
    faulty.assert_all_hit()
    assert check_history(store.history).verdict == "violation"
