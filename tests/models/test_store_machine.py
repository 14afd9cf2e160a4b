"""The store state machine passes on a correct store and shrinks to a readable program on
broken ones."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.stateful import rule, run_state_machine_as_test

from dw_testing.kit.prefixed import PrefixedStore
from dw_testing.models.store_machine import StoreStateMachine, model_list
from dw_testing.selftest.mutants.base import MEMORY_CAPABILITIES, Backing, CorrectStore
from dw_testing.selftest.mutants.create import OverwritingCreate
from dw_testing.selftest.mutants.listing import NamePrefixList
from dw_testing.selftest.mutants.readwrite import UnsharedHandles
from reference_engine.stores.memory import MemoryStore

SETTINGS = settings(max_examples=100, stateful_step_count=10, deadline=None, database=None,
                    derandomize=True)
# A broken store must be caught whatever seed the machine's class name yields, so the
# hunt gets a wider budget than the clean run; it stops at the first failure anyway.
HUNT = settings(SETTINGS, max_examples=1000, stateful_step_count=15)
_names = itertools.count()


def handles_of(kind: type[CorrectStore]) -> Callable[[], Any]:
    backing = Backing()
    return lambda: kind(backing)


def failing_program(open_handle: Callable[[], Any]) -> str:
    # As the suite does: the mutants declare what the built-in stores do of list.
    machine = StoreStateMachine.for_store(open_handle, capabilities=MEMORY_CAPABILITIES)
    with pytest.raises(AssertionError) as caught:
        run_state_machine_as_test(machine, settings=HUNT)
    return "\n".join([str(caught.value), *getattr(caught.value, "__notes__", [])])


def test_a_correct_store_matches_the_model() -> None:
    name = f"models-{next(_names)}"
    run_state_machine_as_test(
        StoreStateMachine.for_store(lambda: PrefixedStore(MemoryStore(name), "t/1")),
        settings=SETTINGS)


def test_a_name_prefix_list_is_caught_with_a_readable_program() -> None:
    text = failing_program(handles_of(NamePrefixList))
    assert "list(" in text
    assert "state.choose_key(key=" in text
    assert "state.list_keys(handle=" in text


def test_a_name_prefix_list_passes_when_it_promises_no_segments_or_order() -> None:
    # Swamp's own list matches the raw prefix; for "" and "/"-ending prefixes it is right.
    run_state_machine_as_test(StoreStateMachine.for_store(handles_of(NamePrefixList)),
                              settings=SETTINGS)


def test_an_overwriting_create_is_caught() -> None:
    text = failing_program(handles_of(OverwritingCreate))
    assert "state.put_if_absent(" in text


def test_handles_that_do_not_share_records_are_caught() -> None:
    text = failing_program(lambda: UnsharedHandles(Backing()))
    assert "h2" in text


def test_one_handle_mode_uses_the_same_handle() -> None:
    opened: list[object] = []

    def open_handle() -> object:
        opened.append(MemoryStore())
        return opened[-1]

    machine: Any = StoreStateMachine.for_store(open_handle, two_handles=False)()
    assert machine.handles["h1"] is machine.handles["h2"]
    assert len(opened) == 1
    machine.teardown()


def test_model_list_matches_whole_segments() -> None:
    model = {"a": b"", "a/b": b"", "ab": b"", "a/b/c": b"", "b": b""}
    assert model_list(model, "a") == ["a/b", "a/b/c"]
    assert model_list(model, "a/") == ["a/b", "a/b/c"]
    assert model_list(model, "") == sorted(model)


class DeleteThatKeepsTheRecord(CorrectStore):
    """A broken delete: under the old machine every example cleaned up through it."""

    def delete(self, key: str) -> None:
        return None


def test_a_broken_delete_shrinks_to_a_program_not_a_flaky_run() -> None:
    text = failing_program(handles_of(DeleteThatKeepsTheRecord))
    assert "state.delete(" in text
    assert "Flaky" not in text


def test_a_machine_without_a_store_says_how_to_give_it_one() -> None:
    with pytest.raises(NotImplementedError, match=r"StoreStateMachine.for_store\(open_handle\)"):
        StoreStateMachine()


def test_a_subclass_adds_rules_and_keeps_the_checks() -> None:
    backing = Backing()
    reads: list[str] = []

    class WithReread(StoreStateMachine):
        def open_handle(self) -> Any:
            return CorrectStore(backing)

        @rule(key=StoreStateMachine.keys)
        def read_twice(self, key: str) -> None:
            reads.append(key)
            assert self.handles["h1"].get(key) == self.handles["h2"].get(key)

    run_state_machine_as_test(WithReread, settings=SETTINGS)
    assert reads, "the subclass's own rule never ran"


def test_every_example_starts_on_an_empty_corner_of_the_store() -> None:
    backing = Backing()
    first: Any = StoreStateMachine.for_store(lambda: CorrectStore(backing))()
    first.handles["h1"].put("a", b"left behind")
    second: Any = StoreStateMachine.for_store(lambda: CorrectStore(backing))()
    assert second.handles["h1"].list("") == []
    first.teardown()
    second.teardown()
