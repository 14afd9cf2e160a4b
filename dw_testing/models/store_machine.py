"""The store-level state machine: put / put_if_absent / get / delete / list on two handles,
checked step by step against a dict.

Build it with :func:`store_machine` from a handle factory (``dw_open_handle`` in the suite)
and run it with ``run_state_machine_as_test``. A failure shrinks to a short program such as::

    state = StoreMachine()
    keys_0 = state.choose_key(key='ab')
    state.put(handle='h1', key=keys_0, value=b'')
    state.list_keys(handle='h2', prefix='a')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, precondition, rule

from reference_engine.stores.contract import close_store, supports_create

# Nested keys (a, a/b, a/b/c) must coexist; "ab" and "a-b" catch a list that matches names
# rather than whole segments; "%" and "_" catch a wildcard-matching list; "A" catches case folding.
KEYS: tuple[str, ...] = ("a", "A", "a/b", "a/b/c", "ab", "a-b", "b", "b/a", "%", "_/x")
PREFIXES: tuple[str, ...] = ("", "a", "a/", "a/b", "ab", "b", "_", "%", "zz")
HANDLES: tuple[str, ...] = ("h1", "h2")
VALUES = st.one_of(st.just(b""), st.binary(min_size=1, max_size=6))


def model_list(model: dict[str, bytes], prefix: str) -> list[str]:
    """What ``list(prefix)`` must return: whole-segment matches, sorted by code point."""
    base = prefix[:-1] if prefix.endswith("/") else prefix
    return sorted(key for key in model if base == "" or key.startswith(base + "/"))


def store_machine(open_handle: Callable[[], Any], *, two_handles: bool = True,
                  keys: Sequence[str] = KEYS) -> type[RuleBasedStateMachine]:
    """A state machine class whose every run opens fresh handles from ``open_handle``.

    Runs share the backing store, so each run starts by deleting every key it may use.
    With ``two_handles=False`` (a store without ``cross_handle``) both names are one handle.
    """
    key_choices = tuple(keys)

    class StoreMachine(RuleBasedStateMachine):
        keys = Bundle("keys")

        def __init__(self) -> None:
            super().__init__()
            first = open_handle()
            self.handles = {"h1": first, "h2": open_handle() if two_handles else first}
            for key in key_choices:
                first.delete(key)
            self.model: dict[str, bytes] = {}

        def teardown(self) -> None:
            for handle in {id(h): h for h in self.handles.values()}.values():
                close_store(handle)

        def _expect(self, what: str, got: object, wanted: object) -> None:
            assert got == wanted, f"{what}: the store gave {got!r}, the model expects {wanted!r}"

        @rule(target=keys, key=st.sampled_from(key_choices))
        def choose_key(self, key: str) -> str:
            return key

        @rule(handle=st.sampled_from(HANDLES), key=keys, value=VALUES)
        def put(self, handle: str, key: str, value: bytes) -> None:
            self.handles[handle].put(key, value)
            self.model[key] = value

        @precondition(lambda self: supports_create(self.handles["h1"]))
        @rule(handle=st.sampled_from(HANDLES), key=keys, value=VALUES)
        def put_if_absent(self, handle: str, key: str, value: bytes) -> None:
            created = self.handles[handle].put_if_absent(key, value)
            self._expect(f"put_if_absent({key!r}) on {handle}", created, key not in self.model)
            self.model.setdefault(key, value)
            # SPEC §2.1 clause 2: a losing create leaves the record byte-for-byte unchanged,
            # so read it back at once rather than hope a later get lands on this key.
            self._expect(f"get({key!r}) right after put_if_absent on {handle}",
                         self.handles[handle].get(key), self.model[key])

        @rule(handle=st.sampled_from(HANDLES), key=keys)
        def get(self, handle: str, key: str) -> None:
            self._expect(f"get({key!r}) on {handle}", self.handles[handle].get(key),
                         self.model.get(key))

        @rule(handle=st.sampled_from(HANDLES), key=keys)
        def delete(self, handle: str, key: str) -> None:
            self.handles[handle].delete(key)
            self.model.pop(key, None)

        @rule(handle=st.sampled_from(HANDLES), prefix=st.sampled_from(PREFIXES))
        def list_keys(self, handle: str, prefix: str) -> None:
            self._expect(f"list({prefix!r}) on {handle}", self.handles[handle].list(prefix),
                         model_list(self.model, prefix))

    return StoreMachine
