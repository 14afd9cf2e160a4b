"""The differential model: a store under test, driven call by call beside a plain dict.

:class:`DifferentialStoreMachine` runs sequences of ``put``, ``put_if_absent``, ``get``,
``delete`` and ``list`` over two handles, closes and reopens handles, and compares every
answer with its model: exact bytes of type ``bytes`` for ``get``, a real ``bool`` for the
create, and for ``list`` the keys under the prefix (no duplicates, nothing missing, nothing
extra; the exact order when the store declares ``sorted_list``). Keys, prefixes and values
come from :mod:`dw_testing.models.strategies`, over the whole space the contract allows;
keys are grown from each other (children, siblings, name extensions, parents and lossy
twins) so that keys sharing prefixes meet in one listing. The model computes every answer
itself: it shares no code with the stores it judges::

    Machine = DifferentialStoreMachine.for_store(spec.factory, capabilities=caps,
                                                 namespace="my-tests/1")
    run_state_machine_as_test(Machine)

A failure names the clause, what was expected and what came back; Hypothesis prints the
shrunk program of calls beneath it, and the seed to replay it.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    multiple,
    precondition,
    rule,
)

from dw_testing.models import strategies as grammar
from dw_testing.models.verdicts import (
    created_problem,
    list_problem,
    value_problem,
    value_type_problem,
)
from reference_engine.stores.contract import close_store, supports_create

HANDLES = ("h1", "h2")
SMALL_VALUES_BYTES = 64 << 10
OBJECT_ROOT_ALLOWANCE = 64


class ModelMismatch(AssertionError):
    """The store answered differently from the model; the message names the clause."""


class DifferentialStoreMachine(RuleBasedStateMachine):
    """The store against a dict, call by call; see the module docstring.

    Give it handles with :meth:`for_store` (or subclass it and define :meth:`open_handle`).
    ``namespace`` is a key prefix of this run's own: each example works under
    ``<namespace>/<n>``, so examples never meet, and nothing of another run is seen.
    """

    keys = Bundle("keys")
    capabilities: ClassVar[Mapping[str, bool]] = {}
    namespace: ClassVar[str] = "dwm"
    seed_note: ClassVar[str] = ""
    _examples: ClassVar[itertools.count[int]] = itertools.count()

    def open_handle(self) -> Any:
        """A new handle on the store under test; define it, or use :meth:`for_store`."""
        raise NotImplementedError(
            f"{type(self).__name__} has no store: use "
            "DifferentialStoreMachine.for_store(open_handle, capabilities=...)")

    @classmethod
    def for_store(cls, open_handle: Callable[[], Any], *,
                  capabilities: Mapping[str, bool] | None = None,
                  namespace: str = "dwm", seed_note: str = "",
                  ) -> type[DifferentialStoreMachine]:
        """A subclass whose handles come from ``open_handle`` (a zero-argument factory)."""
        def open_from_factory(self: DifferentialStoreMachine) -> Any:
            return open_handle()

        return type(cls.__name__, (cls,), {
            "open_handle": open_from_factory, "capabilities": dict(capabilities or {}),
            "namespace": namespace, "seed_note": seed_note, "_examples": itertools.count()})

    def __init__(self) -> None:
        super().__init__()
        self.space = f"{self.namespace}/{next(self._examples)}"
        # Room for a key under the namespace: C-KEY-1's 1024 bytes, less "<space>/" and
        # what an object store's own root takes of its 1024-byte names (S3, GCS); keys at
        # the exact limit are the limit tests' (conformance/test_store_limits.py).
        self.room = (grammar.MAX_KEY_BYTES - len(self.space.encode("utf-8")) - 1
                     - OBJECT_ROOT_ALLOWANCE)
        self.shared = self._cap("cross_handle", True)
        self.opened: dict[str, Any] = {}
        for name in HANDLES:
            self.opened[name] = (self.open_handle() if self.shared or not self.opened
                                 else self.opened[HANDLES[0]])
        self.model: dict[str, bytes] = {}
        self.deleted: set[str] = set()
        self.written_by: dict[str, str] = {}
        self.opened_after: dict[str, set[str]] = {name: set() for name in HANDLES}
        self.touched: set[str] = set()
        # Without nested_keys the machine never draws a key beneath another it ever drew
        # (C-KEY-3 is then a promise the store did not make, and the engine never needs).
        self.nests = self._cap("nested_keys", True)
        self.names: set[str] = set()
        large = self._cap("large_values", True)
        self.value_strategy = grammar.values(
            max_size=grammar.LARGE_VALUE_BYTES if large else SMALL_VALUES_BYTES)

    def _cap(self, name: str, default: bool = False) -> bool:
        return bool(self.capabilities.get(name, default))

    def teardown(self) -> None:
        handle = self.opened[HANDLES[0]]
        for key in sorted(self.touched):
            # Cleanup only: a broken delete is judged by the rules, never here.
            with contextlib.suppress(Exception):
                handle.delete(self._full(key))
        for handle in {id(h): h for h in self.opened.values()}.values():
            close_store(handle)

    # -- bookkeeping ---------------------------------------------------------------------

    def _full(self, key: str) -> str:
        return f"{self.space}/{key}"

    def _fail(self, problem: str | None) -> None:
        if problem is not None:
            note = f"\n{self.seed_note}" if self.seed_note else ""
            raise ModelMismatch(f"{problem}{note}")

    def _fits(self, key: str) -> bool:
        return grammar.is_valid_key(key) and len(key.encode("utf-8")) <= self.room

    def _nests_with_a_name(self, key: str) -> bool:
        return any(name.startswith(key + "/") or key.startswith(name + "/")
                   for name in self.names)

    def _kept(self, *found: str) -> Any:
        """``found`` for the key bundle, less any key that would nest with one already
        drawn when the store does not declare ``nested_keys``."""
        kept = []
        for key in found:
            if self.nests or not self._nests_with_a_name(key):
                self.names.add(key)
                kept.append(key)
        return multiple(*kept)

    # -- keys: drawn, then grown from each other -----------------------------------------

    @initialize(target=keys, drawn=st.data())
    def spectrum(self, drawn: st.DataObject) -> Any:
        """Every character class at every position, each key with every special byte run
        in its value, written, read back and listed before the drawn calls begin."""
        found = drawn.draw(grammar.spectrum_keys(max_bytes=self.room), label="spectrum")
        found = list(self._kept(*found).values)
        for index, key in enumerate(found):
            value = drawn.draw(grammar.spectrum_values(), label=f"value {index}")
            self._write(HANDLES[index % 2], key, value)
        self._check_list(HANDLES[1], "")
        for index, key in enumerate(found):
            name = HANDLES[index % 2]
            self._check_get(name, key, f"get({self._full(key)!r}) on {name}")
        return multiple(*found)

    @initialize(target=keys, key=st.data())
    def first_key(self, key: st.DataObject) -> Any:
        drawn: str = key.draw(grammar.keys(max_bytes=self.room, max_depth=3), label="key")
        return self._kept(drawn)

    @rule(target=keys, key=st.data())
    def new_key(self, key: st.DataObject) -> Any:
        drawn: str = key.draw(grammar.keys(max_bytes=self.room, max_depth=4), label="key")
        return self._kept(drawn)

    @rule(target=keys, parent=keys, segment=grammar.segments(max_bytes=24))
    def child_of(self, parent: str, segment: str) -> Any:
        child = f"{parent}/{segment}"
        return self._kept(child) if self._fits(child) else multiple()

    @rule(target=keys, key=keys, tail=st.text(grammar.key_characters(), min_size=1,
                                               max_size=3))
    def name_extended(self, key: str, tail: str) -> Any:
        longer = key + tail.replace("/", "")  # "ab" beside "a": a sibling, not a child
        return self._kept(longer) if longer != key and self._fits(longer) else multiple()

    @rule(target=keys, key=keys)
    def parent_of(self, key: str) -> Any:
        parent = key.rpartition("/")[0]
        return self._kept(parent) if parent and self._fits(parent) else multiple()

    @rule(target=keys, key=keys, treatment=st.sampled_from(sorted(grammar.LOSSY_TREATMENTS)))
    def lossy_twin(self, key: str, treatment: str) -> Any:
        twin = grammar.lossy_twin(key, treatment)
        return self._kept(twin) if twin is not None and self._fits(twin) else multiple()

    # -- the calls -----------------------------------------------------------------------

    @rule(handle=st.sampled_from(HANDLES), key=keys, value=st.data())
    def put(self, handle: str, key: str, value: st.DataObject) -> None:
        self._write(handle, key, value.draw(self.value_strategy, label="value"))

    def _write(self, handle: str, key: str, data: bytes) -> None:
        self.touched.add(key)
        self.opened[handle].put(self._full(key), bytes(data))  # plain bytes, as an engine sends
        self.model[key] = data
        self.deleted.discard(key)
        self.written_by[key] = handle
        self.opened_after[handle].discard(key)

    @precondition(lambda self: supports_create(self.opened[HANDLES[0]]))
    @rule(handle=st.sampled_from(HANDLES), key=keys, value=st.data())
    def put_if_absent(self, handle: str, key: str, value: st.DataObject) -> None:
        data: bytes = value.draw(self.value_strategy, label="value")
        self.touched.add(key)
        created = self.opened[handle].put_if_absent(self._full(key), bytes(data))
        call = f"put_if_absent({self._full(key)!r}) on {handle}"
        self._fail(created_problem(created, key not in self.model, call))
        if created:
            self.model[key] = data
            self.deleted.discard(key)
            self.written_by[key] = handle
            self.opened_after[handle].discard(key)
        # A losing create leaves the record as it was: read it back at once.
        self._check_get(handle, key, f"get({self._full(key)!r}) on {handle} right after {call}")

    @rule(handle=st.sampled_from(HANDLES), key=keys)
    def get(self, handle: str, key: str) -> None:
        self._check_get(handle, key, f"get({self._full(key)!r}) on {handle}")

    def _check_get(self, handle: str, key: str, call: str) -> None:
        result = self.opened[handle].get(self._full(key))
        self._fail(value_type_problem(result, call))
        others = {k: v for k, v in self.model.items() if k != key}
        writer = self.written_by.get(key)
        self._fail(value_problem(
            result, self.model.get(key), call, others=others, deleted=key in self.deleted,
            other_handle=writer is not None and writer != handle,
            reopened=key in self.opened_after[handle]))

    @rule(handle=st.sampled_from(HANDLES), key=keys)
    def delete(self, handle: str, key: str) -> None:
        self.opened[handle].delete(self._full(key))
        if key in self.model:
            self.deleted.add(key)
        self.model.pop(key, None)
        self.written_by[key] = handle

    @rule(handle=st.sampled_from(HANDLES), key=keys, cut=st.integers(0, 1024),
          slash=st.booleans())
    def list_under(self, handle: str, key: str, cut: int, slash: bool) -> None:
        """``list`` of a prefix of ``key`` cut at any character (only at segment ends,
        with a trailing ``/``, unless the store declares ``segment_prefixes``)."""
        prefix = grammar.cut_prefix(key, cut, slash=slash,
                                    bare=self._cap("segment_prefixes"))
        self._check_list(handle, prefix)

    @rule(handle=st.sampled_from(HANDLES))
    def list_everything(self, handle: str) -> None:
        self._check_list(handle, "")

    def _check_list(self, handle: str, prefix: str) -> None:
        # The call as the store received it; the keys in the verdict are below the prefix.
        call = f"list({self.space + '/' + prefix!r}) on {handle}"
        # the prefix is bare only where the store declares segment_prefixes (list_under)
        result = self.opened[handle].list(f"{self.space}/{prefix}")
        if isinstance(result, list | tuple):
            cut = len(self.space) + 1
            result = [k[cut:] if isinstance(k, str) and k.startswith(f"{self.space}/")
                      else k for k in result]
        self._fail(list_problem(result, self.expected_list(prefix), call,
                                ordered=self._cap("sorted_list")))

    def expected_list(self, prefix: str) -> list[str]:
        """The model's answer: keys strictly under ``prefix`` by whole segments."""
        base = prefix[:-1] if prefix.endswith("/") else prefix
        return sorted(k for k in self.model if base == "" or k.startswith(base + "/"))

    # -- handle lifecycle (C-HANDLE-1, C-HANDLE-3) ---------------------------------------

    @precondition(lambda self: self.shared)
    @rule(handle=st.sampled_from(HANDLES))
    def reopen_one(self, handle: str) -> None:
        """Close one handle and open a new one in its place: the other handle must go on
        seeing and doing everything, and the new one must see every record."""
        close_store(self.opened[handle])
        self.opened[handle] = self.open_handle()
        self.opened_after[handle] = set(self.model)
        for key in sorted(self.model)[:4]:
            self._check_get(handle, key, f"get({self._full(key)!r}) on {handle}, reopened")
        for name in HANDLES:
            self._check_list(name, "")

    @precondition(lambda self: self.shared and bool(self.capabilities.get("durable_reopen")))
    @rule()
    def reopen_all(self) -> None:
        """Close every handle, then open new ones: a durable store keeps every record."""
        for handle in self.opened.values():
            close_store(handle)
        for name in HANDLES:
            self.opened[name] = self.open_handle()
            self.opened_after[name] = set(self.model)
        for key in sorted(self.model)[:4]:
            self._check_get(HANDLES[0], key,
                            f"get({self._full(key)!r}) on {HANDLES[0]}, all reopened")
        self._check_list(HANDLES[0], "")
