"""C-LAST-1's records are the harness's own bookkeeping: a call that raises while writing or
reading them (C-ERR-1 lets any call raise) is tried again, never reported as a record gone;
a record that really went is."""

from __future__ import annotations

from typing import Any

from dw_testing.judge.lasting import ATTEMPTS, LASTING_VALUES, LastingRecords
from dw_testing.kit.faults import FaultyStore
from reference_engine.stores.memory import MemoryStore


class Handles:
    """A factory over one shared memory store, each handle faulted as scripted."""

    def __init__(self, *faults: tuple[str, str]) -> None:
        self.shared = MemoryStore()
        self.faults = list(faults)

    def __call__(self) -> Any:
        handle = FaultyStore(self.shared)
        for op, fault in self.faults:
            handle.inject(op, fault)
        self.faults.clear()
        return handle


def test_a_write_that_raised_is_tried_again_at_the_next_test_and_not_reported() -> None:
    handles = Handles(("put", "raise-before"))
    lasting = LastingRecords("lasting")
    lasting.start("s", handles)
    assert "s" not in lasting.keepers and not lasting.problems
    lasting.start("s", handles)
    assert "s" in lasting.keepers
    assert lasting.finish("s", handles, None) == []


def test_a_read_that_raised_at_the_end_is_tried_again_and_not_reported() -> None:
    handles = Handles()
    lasting = LastingRecords("lasting")
    lasting.start("s", handles)
    handles.faults.append(("get", "raise-before"))
    assert lasting.finish("s", handles, None) == []


def test_a_store_that_never_answers_the_end_is_reported_as_that_not_as_a_record_gone() -> None:
    class Broken(Handles):
        down = False

        def __call__(self) -> Any:
            if self.down:
                raise OSError("down")
            return super().__call__()

    handles = Broken()
    lasting = LastingRecords("lasting")
    lasting.start("s", handles)
    handles.down = True
    [problem] = lasting.finish("s", handles, None)
    assert f"could not be opened or read at the session's end, {ATTEMPTS} times" in problem


def test_a_store_that_cannot_write_stops_being_asked_after_its_attempts() -> None:
    calls = 0

    def refusing() -> Any:
        nonlocal calls
        calls += 1
        raise OSError("down")

    lasting = LastingRecords("lasting")
    for _ in range(ATTEMPTS + 2):
        lasting.start("s", refusing)
    assert calls == ATTEMPTS and lasting.finish("s", refusing, None) == []


def test_a_record_gone_is_reported_on_the_handle_kind_that_missed_it() -> None:
    handles = Handles()
    lasting = LastingRecords("lasting")
    lasting.start("s", handles)
    label, _ = LASTING_VALUES[1]
    handles.shared.delete(lasting.key(label))
    problems = lasting.finish("s", handles, None)
    assert problems and all(f"get('{label}')" in p for p in problems)
    assert {p.split(" on ")[1].split(" answered")[0] for p in problems} == {
        "the handle that wrote them", "a new factory handle"}
