"""The engine's key space (C-ENGINE-1): inside C-KEY-1's grammar, and never nested.

That is why a store need not refuse bad key shapes (``refuses_bad_keys``) nor hold a record
beside records beneath its name (``nested_keys``) to serve the engine. Three proofs: every
key family's builder, over every id the engine accepts, gives a key the grammar allows
(judged by the kit's own grammar, which shares no code with the engine) and no record key
lies beneath another; an id that would leave the grammar is refused by the builder itself,
so no caller can hand it to a store; and the engine's flows, on a store that checks
nothing and records every call, ask only for such keys and prefixes.
"""

from __future__ import annotations

import inspect
import itertools
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.engine_flows import YES, MakeEngine, approval_workflow

from dw_testing.kit.key_grammar import is_valid_key, is_valid_prefix
from dw_testing.strategies import segments
from reference_engine.errors import InvalidKey
from reference_engine.records import keys
from reference_engine.refusals import Refusal
from reference_engine.workflows.loader import WORKFLOW_NAME_RE

RECORD_BUILDERS = ("revision_key", "claim_key", "wait_key", "outcome_key", "ready_key",
                   "due_key", "deadlines_seen_key", "run_state_key")
STATUSES = ("running", "suspended", "succeeded", "failed", "cancelled")


def _builders() -> dict[str, Any]:
    return {name: fn for name, fn in vars(keys).items()
            if inspect.isfunction(fn) and fn.__module__ == keys.__name__
            and (name.endswith(("_key", "_root", "_prefix")) or name == "due_bucket")}


def test_every_key_family_of_the_keys_module_is_covered_here() -> None:
    records = {name for name in _builders() if name.endswith("_key")
               and not name.startswith("parse_") and "_from_" not in name}
    assert records == set(RECORD_BUILDERS), (
        f"the keys module builds record keys {sorted(records)}; add each new family to "
        "RECORD_BUILDERS and to every_record_key so its keys are proven inside the grammar")


# Ids as the engine accepts them: a run id is any one segment the grammar allows; a wait id
# is a UUID the engine makes; a workflow name is what the loader accepts, or a short legacy
# name of any text (quoted into one segment).
run_ids = segments(max_bytes=200).filter(lambda s: "/" not in s)
wait_ids = st.uuids().map(str)
numbers = st.integers(0, 10**10 - 1)
deadlines = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                      st.integers(-(10**16), 10**16).map(float))
workflows = st.from_regex(WORKFLOW_NAME_RE, fullmatch=True) | st.text(max_size=16)


@st.composite
def every_record_key(draw: st.DrawFn) -> list[str]:
    """One key of every family, from drawn ids (two runs and two waits, so keys of one
    family for different ids meet too)."""
    runs = [draw(run_ids), draw(run_ids)]
    waits = [draw(wait_ids), draw(wait_ids)]
    found = [keys.deadlines_seen_key()]
    for run, wait in itertools.product(runs, waits):
        found += [keys.revision_key(run, draw(numbers)), keys.claim_key(run, draw(numbers)),
                  keys.wait_key(wait), keys.outcome_key(wait), keys.ready_key(run, wait),
                  keys.due_key(run, wait, draw(deadlines)),
                  keys.run_state_key(draw(st.sampled_from(STATUSES)), draw(workflows), run)]
    return found


@st.composite
def every_prefix(draw: st.DrawFn) -> list[str]:
    run = draw(run_ids)
    status = draw(st.sampled_from(STATUSES))
    return [keys.runs_root(), keys.run_root(run), keys.revisions_prefix(run),
            keys.waits_root(), keys.outcomes_root(), keys.claims_root(),
            keys.claims_prefix(run), keys.ready_root(), keys.ready_prefix(run), keys.due_root(),
            keys.due_bucket(draw(numbers)), keys.run_states_root(),
            keys.run_state_prefix(status), keys.run_state_prefix(status, draw(workflows))]


def _nested_pairs(found: list[str]) -> list[tuple[str, str]]:
    return [(a, b) for a in found for b in found if b.startswith(a + "/")]


@given(every_record_key())
def test_every_record_key_is_in_the_grammar_and_none_lies_beneath_another(
    found: list[str],
) -> None:
    outside = [key for key in found if not is_valid_key(key)]
    assert not outside, f"the engine builds keys C-KEY-1 refuses: {outside}"
    nested = _nested_pairs(found)
    assert not nested, f"a record key lies beneath another (needs nested_keys): {nested[:3]}"


@given(every_prefix())
def test_every_prefix_the_engine_lists_is_in_the_grammar_and_ends_in_a_slash(
    found: list[str],
) -> None:
    bad = [p for p in found if not (is_valid_prefix(p) and p.endswith("/"))]
    assert not bad, f"the engine lists prefixes outside the grammar: {bad}"


def _uses_of_an_id() -> list[tuple[str, Any]]:
    return [("run_root", keys.run_root), ("revisions_prefix", keys.revisions_prefix),
            ("revision_key", lambda i: keys.revision_key(i, 1)),
            ("claims_prefix", keys.claims_prefix), ("claim_key", lambda i: keys.claim_key(i, 1)),
            ("ready_prefix", keys.ready_prefix),
            ("ready_key run", lambda i: keys.ready_key(i, str(uuid.uuid4()))),
            ("ready_key wait", lambda i: keys.ready_key("r1", i)),
            ("due_key run", lambda i: keys.due_key(i, str(uuid.uuid4()), 60.0)),
            ("due_key wait", lambda i: keys.due_key("r1", i, 60.0)),
            ("wait_key", keys.wait_key), ("outcome_key", keys.outcome_key),
            ("run_state_key", lambda i: keys.run_state_key("running", "wf", i))]


@given(st.text(max_size=210) | st.sampled_from(["", ".", "..", "a/b", "../x", "a\\b", "a\x00",
                                                 "\u00e9" * 101, "/x"]))
def test_an_id_outside_one_segment_of_the_grammar_is_refused_by_every_builder(
    text: str,
) -> None:
    inside = "/" not in text and is_valid_key(text) and len(text.encode()) <= 200
    for name, build in _uses_of_an_id():
        if inside:
            assert is_valid_key(build(text).rstrip("/")), name
            continue
        with pytest.raises(InvalidKey) as refused:
            build(text)
        assert f"of {len(text)} chars" in str(refused.value), (
            f"{name}: a refused id is named by its length, never quoted")


class CheckingNothingStore:
    """A store that checks no key (as swamp's do) and records every key and prefix."""

    def __init__(self) -> None:
        self.records: dict[str, bytes] = {}
        self.written: set[str] = set()
        self.asked: list[str] = []
        self.prefixes: list[str] = []

    def put(self, key: str, data: bytes) -> None:
        self.asked.append(key)
        self.written.add(key)
        self.records[key] = bytes(data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        self.asked.append(key)
        self.written.add(key)
        if key in self.records:
            return False
        self.records[key] = bytes(data)
        return True

    def get(self, key: str) -> bytes | None:
        self.asked.append(key)
        return self.records.get(key)

    def delete(self, key: str) -> None:
        self.asked.append(key)
        self.records.pop(key, None)

    def list(self, prefix: str) -> list[str]:
        self.prefixes.append(prefix)
        return [key for key in self.records if key.startswith(prefix)]

    def calls(self) -> int:
        return len(self.asked) + len(self.prefixes)


def test_the_engines_flows_ask_a_store_that_checks_nothing_only_for_grammar_keys(
    make_engine: MakeEngine,
) -> None:
    store = CheckingNothingStore()
    engine = make_engine(store)
    first = engine.run(approval_workflow(timeout=60), run_id="r1")
    second = engine.run(approval_workflow(), run_id="r1.2 é")
    engine.runs()
    engine.open_waits()
    engine.signal(second.waits[0].wait_id, YES)
    engine.serve_once(full_scan=True)
    engine.cancel("r1")
    engine.sweep()
    engine.delete("r1")
    assert first.waits and store.written, "the flows wrote nothing: the test proves nothing"
    outside = sorted({k for k in store.asked if not is_valid_key(k)})
    assert not outside, f"the engine asked for keys outside C-KEY-1: {outside}"
    bad = sorted({p for p in store.prefixes if not (p == "" or is_valid_prefix(p))})
    assert not bad, f"the engine listed prefixes outside C-KEY-1: {bad}"
    nested = _nested_pairs(sorted(store.written))
    assert not nested, f"the engine wrote a record beneath another record's name: {nested[:3]}"


@pytest.mark.parametrize("run_id", ["../x", "a/b", "", "a\\b", "x" * 201])
def test_a_run_id_outside_the_grammar_is_refused_before_any_store_call(
    make_engine: MakeEngine, run_id: str,
) -> None:
    store = CheckingNothingStore()
    engine = make_engine(store)
    for name, call in {"run": lambda: engine.run(approval_workflow(), run_id=run_id),
                       "resume": lambda: engine.resume(run_id),
                       "cancel": lambda: engine.cancel(run_id),
                       "show": lambda: engine.show(run_id),
                       "delete": lambda: engine.delete(run_id),
                       "answer": lambda: engine.answer(run_id, str(uuid.uuid4()), YES)}.items():
        with pytest.raises((InvalidKey, Refusal)):
            call()
        assert store.calls() == 0, f"{name}({run_id!r}) reached the store before refusing"
