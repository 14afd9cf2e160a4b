"""The store-level state machine: put / put_if_absent / get / delete / list on two handles,
checked step by step against a dict.

Import :class:`StoreStateMachine`, hand it a store, and run it like any Hypothesis machine::

    TestMyStore = StoreStateMachine.for_store(make_store).TestCase

A failure shrinks to a short program such as::

    state = StoreStateMachine()
    keys_0 = state.choose_key(key='ab')
    state.put(handle='h1', key=keys_0, value=b'')
    state.list_keys(handle='h2', prefix='a/')
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, precondition, rule

from dw_testing.kit.listing import listed
from dw_testing.kit.prefixed import PrefixedStore
from dw_testing.models.shown_bytes import describe
from reference_engine.stores.contract import close_store, supports_create

# Nested keys (a, a/b, a/b/c) must coexist; "ab" and "a-b" catch a list that matches names
# rather than whole segments; "%" and "_" catch a wildcard-matching list; "A" catches case folding.
KEYS: tuple[str, ...] = ("a", "A", "a/b", "a/b/c", "ab", "a-b", "b", "b/a", "%", "_/x")
# On a store that does not declare nested_keys, the keys beneath another key move to a parent
# no key names, so no record is ever written beneath another (C-KEY-3 is not asked).
UNNESTED: Mapping[str, str] = {"a/b": "x/b", "a/b/c": "x/c", "b/a": "y/a"}
# Every store is listed with "" or a "/"-ending prefix (C-LIST-3); a bare prefix is tried
# only on a store that declares segment_prefixes (C-LIST-4).
SLASH_PREFIXES: tuple[str, ...] = ("", "a/", "a/b/", "ab/", "b/", "_/", "%/", "zz/")
BARE_PREFIXES: tuple[str, ...] = ("a", "a/b", "ab", "b", "_", "%", "zz")
PREFIXES: tuple[str, ...] = SLASH_PREFIXES + BARE_PREFIXES
HANDLES: tuple[str, ...] = ("h1", "h2")
def _shown(answer: object) -> str:
    """An answer as printed in a failure: a value by length, hash and first bytes only."""
    return describe(answer) if isinstance(answer, bytes) else repr(answer)


VALUES = st.one_of(st.just(b""), st.binary(min_size=1, max_size=6))


def model_list(model: dict[str, bytes], prefix: str) -> list[str]:
    """What ``list(prefix)`` must return: whole-segment matches, sorted by code point."""
    base = prefix[:-1] if prefix.endswith("/") else prefix
    return sorted(key for key in model if base == "" or key.startswith(base + "/"))


class StoreStateMachine(RuleBasedStateMachine):
    """put / put_if_absent / get / delete / list on two handles, checked against a dict.

    Hand it a store with :meth:`for_store` (a handle factory, such as ``dw_open_handle``), or
    subclass it and define :meth:`open_handle`; a subclass may add rules of its own. Every
    example works in a fresh sub-prefix of the handles it opens, so no example depends on
    what an earlier one left behind, nor on the store's own ``delete`` to clean up. With
    ``two_handles = False`` (a store without ``cross_handle``) both names are one handle.
    ``capabilities`` decide the lists it tries: bare prefixes under ``segment_prefixes``,
    the order as given under ``sorted_list`` (else the answer is sorted before comparing).
    """

    keys = Bundle("keys")
    two_handles: ClassVar[bool] = True
    capabilities: ClassVar[Mapping[str, bool]] = {}

    def open_handle(self) -> Any:
        """A new handle on the store under test; define it, or use :meth:`for_store`."""
        raise NotImplementedError(
            f"{type(self).__name__} has no store: use StoreStateMachine.for_store(open_handle) "
            "or subclass StoreStateMachine and define open_handle(self)")

    @classmethod
    def for_store(cls, open_handle: Callable[[], Any], *, two_handles: bool = True,
                  capabilities: Mapping[str, bool] | None = None) -> type[StoreStateMachine]:
        """A subclass whose handles come from ``open_handle``."""
        def open_from_factory(self: StoreStateMachine) -> Any:
            return open_handle()

        return type(cls.__name__, (cls,), {"open_handle": open_from_factory,
                                           "two_handles": two_handles,
                                           "capabilities": dict(capabilities or {})})

    def __init__(self) -> None:
        super().__init__()
        space = f"m-{uuid.uuid4().hex[:12]}"
        self._opened = [self.open_handle()]
        if self.two_handles:
            self._opened.append(self.open_handle())
        first = PrefixedStore(self._opened[0], space)
        second = PrefixedStore(self._opened[-1], space)
        self.handles = {"h1": first, "h2": second if self.two_handles else first}
        self.model: dict[str, bytes] = {}

    def teardown(self) -> None:
        for handle in self._opened:
            close_store(handle)

    def _expect(self, what: str, got: object, wanted: object) -> None:
        assert got == wanted, (f"{what}: the store gave {_shown(got)}, the model expects "
                               f"{_shown(wanted)}")

    @rule(target=keys, key=st.sampled_from(KEYS))
    def choose_key(self, key: str) -> str:
        if not self.capabilities.get("nested_keys", True):
            return UNNESTED.get(key, key)
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
        # A losing create leaves the record byte-for-byte unchanged, so read it back at
        # once rather than hope a later get lands on this key.
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
        if prefix in BARE_PREFIXES and not self.capabilities.get("segment_prefixes", False):
            prefix += "/"  # the store promises nothing for a bare prefix
        self._expect(f"list({prefix!r}) on {handle}",
                     listed(self.handles[handle], prefix, self.capabilities),
                     model_list(self.model, prefix))
