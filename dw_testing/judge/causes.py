"""The cause of a judged wrong answer: the clause, what the model allowed, and the fix.

:class:`Causes` turns the first wrong answer of a test (a call the history checker could
not place, or a list no moment of its interval allows) into a :class:`Blame`, looking at the
whole history for the cause (:mod:`.blame` says which shapes point at which clause).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dw_testing.history import Operation
from dw_testing.history.labels import digest
from dw_testing.judge.blame import Blame, first_difference, fix_for, key_cause
from dw_testing.judge.lists import ListWrong


@dataclass(frozen=True)
class Causes:
    """Blames wrong answers of one test's history; keys shown relative to its namespace."""

    store: str
    namespace: str

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
                if allowed and all(v == b"" for v in allowed):
                    # The record is there, empty: None for b'' is a read that drops it.
                    return self._made("C-GET-1", op.process, call + " for an empty record",
                                      shown)
                return self._made(self._gone_cause(op, mine, others), op.process, call, shown)
        if op.op == "put_if_absent":
            if op.result is False:
                live = [o.key for o in others if o.op in ("put", "put_if_absent")
                        and o.result is not False]
                cause = self.key_cause(key, live)
                if cause is not None:
                    return self._made(cause[0], op.process,
                                      f"{call}, as if {self.rel(cause[1])!r} were the same key",
                                      "no record yet (True)", "C-CREATE-3")
                deleted = any(o.op == "delete" and o.ret is not None and o.ret < op.call
                              for o in mine)
                return self._made("C-CREATE-5" if deleted else "C-CREATE-3", op.process, call,
                                  "no record yet (True)")
            # Completed before this create began (a clock tick can give both one stamp; one
            # process's calls are in order anyway): then no race explains it, C-CREATE-1 does.
            earlier = [o for o in mine if o.op in ("put", "put_if_absent") and o.ret is not None
                       and o is not op and (o.ret <= op.call or (o.process == op.process
                                                                 and o.call < op.call))]
            # A create told True after this one had returned won over a finished record too.
            after = [o for o in mine if o.op == "put_if_absent" and o.result is True
                     and o is not op and op.ret is not None and o.call >= op.ret]
            return self._made("C-CREATE-1" if earlier or after else "C-CREATE-2", op.process,
                              call,
                              "a record already exists (False)")
        return self._made("C-DEL-1" if op.op == "delete" else "C-PUT-1", op.process, call,
                          shown)

    def _gone_cause(self, op: Operation, mine: Sequence[Operation],
                    others: Sequence[Operation]) -> str:
        deletes = [o.key for o in others if o.op == "delete"]
        cause = self.key_cause(op.key, deletes)
        if cause is not None and cause[0] == "C-KEY-2":
            return "C-KEY-2"
        if deletes:
            return "C-DEL-1"
        wrote_elsewhere = any(o.op != "get" and o.process != op.process for o in mine)
        return "C-HANDLE-1" if wrote_elsewhere else "C-LAST-1"

    def blame_list(self, wrong: ListWrong, held: Sequence[Operation]) -> Blame:
        call = wrong.call
        assert call.keys is not None
        rel = self.rel
        head = f"list({rel(call.prefix)!r}) returned {len(call.keys)} keys"
        written = sorted({o.key for o in held if o.op != "get"})
        for extra in wrong.extra:
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
            which = "was deleted before the list began" if gone else "did not exist then"
            return self._made("C-DEL-1" if gone else wrong.clause, call.handle,
                              f"{head}, among them {rel(wrong.extra[0])!r}, which {which}",
                              "only keys that existed while it ran", wrong.clause)
        if wrong.duplicated:
            return self._made("C-LIST-3", call.handle,
                              f"{head}, {rel(wrong.duplicated[0])!r} more than once",
                              "each key once")
        return self._made("C-LIST-5", call.handle, f"{head}, not in code-point order",
                          "the keys sorted by code point (the store declares sorted_list)")


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
