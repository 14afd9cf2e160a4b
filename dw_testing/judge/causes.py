"""The cause of a judged wrong answer: the clause, what the model allowed, and the fix.

:class:`Causes` turns the first wrong answer of a test (a call the history checker could
not place, or a list no moment of its interval allows) into a :class:`Blame`, looking at the
whole history for the cause (:mod:`.blame` says which shapes point at which clause).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dw_testing.history import Operation
from dw_testing.history.labels import digest
from dw_testing.judge.blame import (
    Blame,
    first_difference,
    fix_for,
    key_cause,
    torn_between,
    twins,
)
from dw_testing.judge.lists import ListWrong

# Errors a store raises when told to delete a key it does not have: not a transient error,
# which the contract lets any call raise, but the store refusing a missing key.
MISSING_KEY_ERRORS = frozenset({"StoreError", "KeyError", "FileNotFoundError", "NoSuchKey"})


@dataclass(frozen=True)
class Causes:
    """Blames wrong answers of one test's history; keys shown relative to its namespace."""

    store: str
    namespace: str
    # When each handle was closed (monotonic ns), for a record lost over a reopen.
    closed: Mapping[str, int] = field(default_factory=dict)

    def rel(self, key: str) -> str:
        return key.removeprefix(self.namespace)

    def key_cause(self, got: str, candidates: Sequence[str], *,
                  listed: bool = False) -> tuple[str, str] | None:
        """:func:`key_cause` on the keys as the test wrote them (the namespace would make
        every two keys of the test look alike)."""
        found = key_cause(self.rel(got), [self.rel(k) for k in candidates], listed=listed)
        return None if found is None else (found[0], self.namespace + found[1])

    def _made(self, clause: str, handle: str, call: str, allowed: str,
              symptom: str = "") -> Blame:
        return Blame(self.store, handle, call, allowed, clause, fix_for(clause), symptom)

    def blame_call(self, op: Operation, ops: Sequence[Operation]) -> Blame:
        key = op.key
        mine = [o for o in ops if o.key == key]
        others = [o for o in ops if o.key != key and o.call < (op.ret or op.call)]
        allowed = _allowed(op, mine)
        shown = ", ".join(sorted({_show(v) for v in allowed})) or "nothing"
        call = f"{op.op}({self.rel(key)!r}) answered {_answer(op)}"
        if op.op == "get":
            if isinstance(op.result, bytes):
                partial = self._partial_write(op, mine)
                if partial is not None:
                    return self._made(partial[0], op.process, f"{call} {partial[1]}", shown,
                                      "C-GET-1")
                if not any(o.value == op.result for o in mine if o.value is not None):
                    elsewhere = [o.key for o in others if o.value == op.result]
                    if elsewhere:
                        clause, twin = self.key_cause(key, elsewhere) or ("C-KEY-2", elsewhere[0])
                        return self._made(clause, op.process,
                                          f"{call}, the record written under "
                                          f"{self.rel(twin)!r}", shown, "C-GET-1")
                    wanted = [v for v in allowed if v is not None] or [
                        o.value for o in mine if o.value is not None]
                    detail = f" ({first_difference(op.result, wanted[0])})" if wanted else ""
                    return self._made("C-VAL-1", op.process, call + detail, shown, "C-GET-1")
                creates = [w for w in mine if w.op == "put_if_absent" and w.value == op.result]
                if any(w.result is False for w in creates) and not any(
                        w.value == op.result for w in mine if w.op == "put"):
                    if allowed == [None]:
                        # No record could be there: the create told False wrote it.
                        return self._made("C-CREATE-3", op.process,
                                          f"{call}, the bytes of a create that answered "
                                          "False on a key with no record: it created the "
                                          "record", shown, "C-GET-1")
                    return self._made("C-CREATE-1", op.process,
                                      f"{call}, the bytes of a create that answered False "
                                      "(a False create must leave the record as it was)",
                                      shown, "C-GET-1")
                if any(_created_over_a_record(w, mine) for w in creates):
                    return self._made("C-CREATE-1", op.process,
                                      f"{call}, the record of a create that answered True "
                                      "over an existing record", shown, "C-GET-1")
                newer = [o for o in mine if o.op != "get" and o.ret is not None
                         and o.ret < op.call and o.process != op.process]
                return self._made("C-HANDLE-1" if newer else "C-PUT-1", op.process,
                                  call + " (an older record)", shown)
            if op.result is None:
                if self.empty_read_as_none(op, ops):
                    # The record is there, empty: None for b'' is a read that drops it.
                    return self._made("C-GET-1", op.process, call + " for an empty record",
                                      shown)
                return self._made(self._gone_cause(op, mine, others), op.process, call, shown)
        if op.op == "put_if_absent":
            if op.result is False:
                live = _live_during(op, others)
                cause = self.key_cause(key, live)
                told = self._false_create_cause(op, mine)
                # A twin is a key rewritten; a key beneath this one explains a False unless a
                # delete or a racing create in the key's own history does.
                if cause is not None and (cause[0] == "C-KEY-2" or told == "C-CREATE-3"
                                          or (told == "C-CREATE-5"
                                              and not _during(op, mine, "delete")
                                              and not _created_beside(op, mine, others,
                                                                      cause[1]))):
                    return self._made(cause[0], op.process,
                                      f"{call}, as if {self.rel(cause[1])!r} were the same key",
                                      "no record yet (True)", "C-CREATE-3")
                return self._made(told, op.process, call, "no record yet (True)")
            # Completed before this create began (a clock tick can give both one stamp), with no
            # delete since: then no race explains it, C-CREATE-1 does. Calls of one handle may
            # run at once (threads, coroutines), so they are ordered by their stamps too.
            earlier = [o for o in mine if o.op in ("put", "put_if_absent") and o.ret is not None
                       and o.result is not False and o is not op
                       and o.ret <= op.call
                       and not _deleted_between(mine, o.ret, op.call)]
            # A create told True after this one had returned won over a finished record too.
            after = [o for o in mine if o.op == "put_if_absent" and o.result is True
                     and o is not op and op.ret is not None and o.call >= op.ret
                     and not _deleted_between(mine, op.ret, o.call)]
            return self._made("C-CREATE-1" if earlier or after else "C-CREATE-2", op.process,
                              call,
                              "a record already exists (False)")
        return self._made("C-DEL-1" if op.op == "delete" else "C-PUT-1", op.process, call,
                          shown)

    def missing_key_delete(self, op: Operation, ops: Sequence[Operation]) -> Blame | None:
        """A delete that raised a permanent error (not a transient one) on a key with no
        record: a missing key is no error (C-DEL-1)."""
        if op.op != "delete" or op.error not in MISSING_KEY_ERRORS:
            return None
        mine = [o for o in ops if o.key == op.key and o.call < op.call]
        writes = [o for o in mine if o.op in ("put", "put_if_absent") and o.result is not False]
        if any(w.ret is None for w in writes):
            return None
        last_write = max((w.ret for w in writes if w.ret is not None), default=None)
        cleared = last_write is None or any(
            d.op == "delete" and d.ret is not None and d.call > last_write for d in mine)
        if not cleared:
            return None
        return self._made("C-DEL-1", op.process,
                          f"delete({self.rel(op.key)!r}) raised {op.error} on a key with no "
                          "record", "no error: deleting a missing key is done at once")

    def empty_read_as_none(self, op: Operation, ops: Sequence[Operation]) -> bool:
        """A read of None where the model allowed only records, an empty one among them: a
        store that drops empty records (C-GET-1), whatever else its history shows."""
        if op.op != "get" or op.result is not None:
            return False
        allowed = _allowed(op, [o for o in ops if o.key == op.key])
        return b"" in allowed and None not in allowed

    def _partial_write(self, op: Operation, mine: Sequence[Operation]
                       ) -> tuple[str, str] | None:
        """A read of bytes no write gave whole, while a write of the key was running: a
        create's record seen before it was whole (C-CREATE-4), or a put seen half done
        (C-PUT-1), when the bytes are the start of the new record or a mix of old and new."""
        got = op.result
        assert isinstance(got, bytes)
        end = float("inf") if op.ret is None else op.ret
        running = [w for w in mine if w.op in ("put", "put_if_absent") and w.value is not None
                   and w.value != got and w.call < end
                   and (w.ret is None or w.ret > op.call)]
        values = [o.value for o in mine if o.value is not None and o.op != "get"]
        for write in running:
            assert write.value is not None
            started = write.value.startswith(got) and len(got) < len(write.value)
            mixed = any(torn_between(got, write.value, old) for old in [*values, b""])
            if started or mixed:
                how = ("the first bytes of" if started else "a mix of the old record and")
                clause = "C-CREATE-4" if write.op == "put_if_absent" else "C-PUT-1"
                return clause, (f"({how} the {'create' if clause == 'C-CREATE-4' else 'put'} "
                                f"still running, not a whole record)")
        return None

    def _false_create_cause(self, op: Operation, mine: Sequence[Operation]) -> str:
        """A create told False with no record there: its own bytes read later (it created
        the record: C-CREATE-3); a delete of the key during it, or the key's last change
        before it a delete and no other create in flight that won (C-CREATE-5); another
        create in flight that won, or that was in flight when it began (a conflict told as
        an existing record, C-CREATE-6); else the creator was told False (C-CREATE-3)."""
        read_back = any(o.op == "get" and o.result == op.value and o.call > op.call
                        for o in mine)
        shared = any(w is not op and w.value == op.value for w in mine if w.op != "get")
        if read_back and not shared:
            return "C-CREATE-3"
        if _during(op, mine, "delete"):
            return "C-CREATE-5"
        racing = _during(op, mine, "put_if_absent")
        # A winner in flight explains a False better than a delete that came and went
        # before: the key was created again, by the racer.
        if any(o.result is True for o in racing):
            return "C-CREATE-6"
        # A create already in flight when this one began, whatever it was told (a put may
        # have landed before it checked): a conflict told as an existing record, unless
        # the key shows creates told False after a delete with no racer at all.
        conflict = any(o.call < op.call for o in racing)
        if self._after_a_delete(op, mine):
            return ("C-CREATE-6" if conflict and not self._lone_false_after_delete(mine)
                    else "C-CREATE-5")
        return "C-CREATE-6" if conflict else "C-CREATE-3"

    def _lone_false_after_delete(self, mine: Sequence[Operation]) -> bool:
        """Some create of the key was told False right after a delete with no other create
        in flight: what a store that blocks re-creating a deleted key does, raced or not."""
        for op in mine:
            if op.op != "put_if_absent" or op.result is not False or op.ret is None:
                continue
            if not _during(op, mine, "put_if_absent") and self._after_a_delete(op, mine):
                return True
        return False

    @staticmethod
    def _after_a_delete(op: Operation, mine: Sequence[Operation]) -> bool:
        """A delete of the key ran during ``op``, or was the last change before it."""
        if _during(op, mine, "delete"):
            return True
        before = [o for o in mine if o.op != "get" and o.ret is not None and o.ret < op.call
                  and not (o.op == "put_if_absent" and o.result is False)]
        return bool(before) and max(before, key=lambda o: o.ret or 0).op == "delete"

    def _gone_cause(self, op: Operation, mine: Sequence[Operation],
                    others: Sequence[Operation]) -> str:
        deletes = [o.key for o in others if o.op == "delete"]
        cause = self.key_cause(op.key, deletes)
        if cause is not None and cause[0] == "C-KEY-2":
            return "C-KEY-2"
        # Only a delete that could have reached this key: a prefix or pattern of it, a key
        # it nests under, or a key it folds to.
        key = self.rel(op.key)
        if any(_reaches(self.rel(d), key) for d in deletes):
            return "C-DEL-1"
        writes = [o for o in mine if o.op != "get" and o.ret is not None and o.ret < op.call]
        # Every handle that wrote it was closed before the read: lost over a reopen.
        if writes and all(self.closed.get(w.process, op.call) < op.call for w in writes):
            return "C-HANDLE-3"
        wrote_elsewhere = any(o.op != "get" and o.process != op.process for o in mine)
        return "C-HANDLE-1" if wrote_elsewhere else "C-LAST-1"

    def blame_list(self, wrong: ListWrong, held: Sequence[Operation]) -> Blame:
        call = wrong.call
        assert call.keys is not None
        rel = self.rel
        head = f"list({rel(call.prefix)!r}) returned {len(call.keys)} keys"
        written = sorted({o.key for o in held if o.op != "get"})
        # A key the test wrote is a real key: listed where it does not belong, it says the
        # list matched wrongly, not that a key was rewritten.
        for extra in (e for e in wrong.extra if e not in written):
            cause = (self.key_cause(extra, wrong.missing or written, listed=True)
                     or _same_shape(extra, wrong.missing))
            if cause is not None:
                return self._made(cause[0], call.handle,
                                  f"{head}, among them {rel(extra)!r} for the key "
                                  f"{rel(cause[1])!r}", f"{rel(cause[1])!r}", wrong.clause)
        expect = f"every one of the {wrong.expected} keys written under it before the list began"
        if wrong.missing:
            deletes = [o.key for o in held if o.op == "delete"]
            touched = next((m for m in wrong.missing
                            for d in deletes if d != m and (m.startswith(d) or d.startswith(m))),
                           None)
            missing = (f"{head}, missing {len(wrong.missing)} of them, first "
                       f"{rel(wrong.missing[0])!r}")
            if touched is not None:
                return self._made("C-DEL-1", call.handle, missing + " (a delete of another "
                                  "key reached it)", expect, wrong.clause)
            clause = "C-LIST-3/pages" if len(wrong.missing) > 1 else "C-LIST-3"
            return self._made(clause, call.handle, missing, expect, wrong.clause)
        if wrong.extra:
            deleted = {o.key for o in held if o.op == "delete" and o.ret is not None
                       and o.ret < call.call}
            gone = all(e in deleted for e in wrong.extra)
            outside = not wrong.extra[0].startswith(_under(call.prefix))
            which = ("was deleted before the list began" if gone
                     else "is not under the prefix" if outside else "did not exist then")
            return self._made("C-DEL-1" if gone else wrong.clause, call.handle,
                              f"{head}, among them {rel(wrong.extra[0])!r}, which {which}",
                              "only keys that existed while it ran", wrong.clause)
        if wrong.duplicated:
            return self._made("C-LIST-3", call.handle,
                              f"{head}, {rel(wrong.duplicated[0])!r} more than once",
                              "each key once")
        return self._made("C-LIST-5", call.handle, f"{head}, not in code-point order",
                          "the keys sorted by code point (the store declares sorted_list)")


def _deleted_between(mine: Sequence[Operation], start: int, end: int) -> bool:
    """A delete of the key may have taken effect after ``start`` and before ``end``."""
    return any(d.op == "delete" and d.call < end and (d.ret is None or d.ret > start)
               for d in mine)


def _under(prefix: str) -> str:
    return prefix if prefix == "" or prefix.endswith("/") else prefix + "/"


def _reaches(deleted: str, key: str) -> bool:
    """A delete of ``deleted`` that could, by a wrong match, have removed ``key``."""
    return key.startswith(deleted) or twins(deleted, key) or fnmatch.fnmatchcase(key, deleted)


def _allowed(op: Operation, mine: Sequence[Operation]) -> list[bytes | None]:
    """The records a read could have seen: those of writes not surely overwritten before it."""
    end = float("inf") if op.ret is None else op.ret
    effects = [o for o in mine if o.op != "get" and o.call < end
               and not (o.op == "put_if_absent" and o.result is False)]

    def superseded(o: Operation) -> bool:
        return o.ret is not None and any(
            p is not o and p.ret is not None and o.ret < p.call and p.ret < op.call
            and p.op != "put_if_absent" for p in effects)

    allowed: list[bytes | None] = [None if o.op == "delete" else o.value
                                   for o in effects if not superseded(o)]
    if not any(o.ret is not None and o.ret < op.call for o in effects):
        allowed.append(None)
    return allowed


def _show(value: bytes | None) -> str:
    return "no record (None)" if value is None else digest(value)


def _answer(op: Operation) -> str:
    if op.op == "get":
        return _show(op.result if isinstance(op.result, bytes) else None)
    return repr(op.result)


def _created_over_a_record(create: Operation, mine: Sequence[Operation]) -> bool:
    """A create answered True although a write had completed before it and no delete since."""
    if create.result is not True:
        return False
    for write in mine:
        if (write is create or write.op not in ("put", "put_if_absent") or write.ret is None
                or write.result is False or write.ret >= create.call):
            continue
        deleted = any(d.op == "delete" and d.call < create.call and (d.ret is None
                      or d.ret > write.call) for d in mine)
        if not deleted:
            return True
    return False


def _same_shape(extra: str, missing: Sequence[str]) -> tuple[str, str] | None:
    """A listed key that never existed, beside a missing key of as many segments: the store
    gave the written key back with other code points (C-KEY-2)."""
    depth = extra.count("/")
    return next((("C-KEY-2", m) for m in missing if m.count("/") == depth), None)


def _live_during(op: Operation, others: Sequence[Operation]) -> list[str]:
    """Keys of ``others`` whose record may have stood while ``op`` ran: written before it
    returned, and not deleted (a delete that completed after the write) before it began."""
    end = float("inf") if op.ret is None else op.ret
    deletes = [d for d in others if d.op == "delete" and d.ret is not None and d.ret < op.call]
    return [w.key for w in others
            if w.op in ("put", "put_if_absent") and w.result is not False and w.call < end
            and not any(d.key == w.key and w.ret is not None and d.call > w.ret
                        for d in deletes)]


def _created_beside(op: Operation, mine: Sequence[Operation], others: Sequence[Operation],
                    nested: str) -> bool:
    """An earlier create of ``op``'s key won while ``nested`` was written: the store can
    keep the two apart, so what changed since (a delete) explains the False, not them."""
    written = [w.ret for w in others if w.key == nested and w.op in ("put", "put_if_absent")
               and w.result is not False and w.ret is not None]
    return bool(written) and any(
        o.op == "put_if_absent" and o.result is True and o.ret is not None
        and o.ret < op.call and o.call > min(written) for o in mine)


def _during(op: Operation, mine: Sequence[Operation], kind: str) -> list[Operation]:
    """The other calls of ``kind`` whose interval meets ``op``'s (a call that raised runs on
    for ever)."""
    end = float("inf") if op.ret is None else op.ret
    return [o for o in mine if o is not op and o.op == kind and o.call < end
            and (o.ret is None or o.ret > op.call)]
