"""One test's trial: its recorded calls checked against the contract's model at its end.

Reads and writes are checked per key for linearizability by :mod:`dw_testing.history`
(the history checker), lists by :mod:`.lists`. A call that met a fault on the wire is held
to C-LOST-1 as the checker holds it; faults a test injects above the handle (a
``FaultyStore``, a gate) never reach the record. What the store's capabilities leave open is
not judged: without ``cross_handle`` each handle is judged on its own, and without
``durable_reopen`` a record may vanish once every handle of the test was closed.
A checker out of budget decides nothing: the verdict is ``undecided``, never a failure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dw_testing.history import Budget, Operation, check_history
from dw_testing.history.checker import CheckResult, partition_by_key
from dw_testing.history.labels import digest
from dw_testing.history.wire_faults import StampedFault, attribute_faults, judged
from dw_testing.judge.blame import Blame, clause_id, first_difference, fix_for, key_cause
from dw_testing.judge.lists import ListWrong, judge_lists
from dw_testing.judge.recording import JudgedHandle, ListCall, TrialLog

Verdict = Literal["ok", "wrong", "undecided", "not-judged", "excused"]
JUDGE_BUDGET = Budget(max_steps=300_000, max_seconds=3.0)


@dataclass(frozen=True)
class Judgement:
    """The judge's verdict on one test's history."""

    verdict: Verdict
    calls: int = 0
    blame: Blame | None = None
    detail: str = ""

    @property
    def wrong(self) -> bool:
        return self.verdict == "wrong"

    def message(self) -> str:
        if self.blame is None:
            return self.detail
        return ("judged history: " + self.blame.headline()
                + (f"\n{self.detail}" if self.detail else ""))

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "calls": self.calls, "detail": self.detail,
                "blame": None if self.blame is None else self.blame.to_json()}

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> Judgement:
        blame = row.get("blame")
        return cls(verdict=row["verdict"], calls=int(row.get("calls", 0)),
                   blame=None if blame is None else Blame.from_json(blame),
                   detail=str(row.get("detail", "")))


class JudgeFailure(AssertionError):
    """A test whose own assertions passed, but whose store answered wrong."""


@dataclass
class Trial:
    """The judge of one test: wraps every handle it opens, then gives a :class:`Judgement`."""

    store: str
    namespace: str
    capabilities: Mapping[str, bool]
    excused: frozenset[str] = frozenset()
    open_reason: str = ""
    log: TrialLog = field(default_factory=TrialLog)
    budget: Budget = JUDGE_BUDGET

    def wrap(self, handle: Any) -> Any:
        return JudgedHandle(handle, self.log)

    def verdict(self, fault_events: Sequence[StampedFault] = ()) -> Judgement:
        self.log.seal()
        calls = self.log.calls
        if self.open_reason or self.log.unrecorded:
            return Judgement("not-judged", calls,
                             detail=self.open_reason or self.log.unrecorded)
        ops = [op for op in self.log.ops if op.key.startswith(self.namespace)]
        if fault_events:
            ops = attribute_faults(ops, fault_events)
        ops += self._reopenings(ops)
        groups = ([(ops, self.log.lists)] if self.capabilities.get("cross_handle", True)
                  else _per_handle(ops, self.log.lists))
        wrongs: list[tuple[int, Blame, str]] = []
        undecided: list[str] = []
        for group_ops, group_lists in groups:
            found, unknown = self._judge(group_ops, group_lists)
            wrongs += found
            undecided += unknown
        if wrongs:
            _, blame, detail = min(wrongs, key=lambda w: w[0])
            if clause_id(blame.clause) in self.excused:
                return Judgement("excused", calls, blame, "a known deviation of this store")
            return Judgement("wrong", calls, blame, detail)
        if undecided:
            return Judgement("undecided", calls, detail="; ".join(undecided))
        return Judgement("ok", calls)

    # -- the model's allowances --------------------------------------------------------

    def _reopenings(self, ops: Sequence[Operation]) -> list[Operation]:
        """Without ``durable_reopen``, each moment every handle was closed (and another opened
        after) may drop any record: an indeterminate delete of each key written before."""
        if self.capabilities.get("durable_reopen", False):
            return []
        moments = sorted([(t, 1) for _, t in self.log.opened]
                         + [(t, -1) for _, t in self.log.closed])
        added: list[Operation] = []
        open_now = 0
        for n, (stamp, change) in enumerate(moments):
            open_now += change
            if open_now == 0 and change < 0 and n + 1 < len(moments):
                keys = sorted({op.key for op in ops if op.op != "get" and op.call < stamp})
                added += [Operation("reopen", "delete", key, None, None, stamp, None, "Reopen")
                          for key in keys]
        return added

    def _judge(self, ops: list[Operation],
               lists: Sequence[ListCall]) -> tuple[list[tuple[int, Blame, str]], list[str]]:
        wrongs: list[tuple[int, Blame, str]] = []
        undecided: list[str] = []
        result = check_history(ops, budget=self.budget)
        if result.verdict == "unknown":
            undecided.append(result.detail)
        elif result.verdict == "violation":
            for keyed in _violations(ops, result, self.budget):
                marked = [keyed.violation[i] for i in keyed.marked] or list(keyed.violation)
                # A put or delete answers nothing: the wrong answer is a read's or a create's.
                answers = [op for op in marked if op.op in ("get", "put_if_absent")]
                first = min(answers or marked, key=lambda op: op.call)
                wrongs.append((first.call, self._blame_call(first, ops),
                               keyed.describe()))
        held = list(judged(ops))
        for wrong in judge_lists(lists, held, namespace=self.namespace,
                                 capabilities=self.capabilities):
            wrongs.append((wrong.call.call, self._blame_list(wrong, held), ""))
        return wrongs, undecided

    # -- blame -------------------------------------------------------------------------

    def _rel(self, key: str) -> str:
        return key.removeprefix(self.namespace)

    def _made(self, clause: str, handle: str, call: str, allowed: str,
              symptom: str = "") -> Blame:
        return Blame(self.store, handle, call, allowed, clause, fix_for(clause), symptom)

    def _blame_call(self, op: Operation, ops: Sequence[Operation]) -> Blame:
        key = op.key
        mine = [o for o in ops if o.key == key]
        others = [o for o in ops if o.key != key and o.call < (op.ret or op.call)]
        allowed = _allowed(op, mine)
        shown = ", ".join(sorted({_show(v) for v in allowed})) or "nothing"
        call = f"{op.op}({self._rel(key)!r}) answered {_answer(op)}"
        if op.op == "get":
            if isinstance(op.result, bytes):
                if not any(o.value == op.result for o in mine if o.value is not None):
                    elsewhere = [o.key for o in others if o.value == op.result]
                    if elsewhere:
                        clause, twin = key_cause(key, elsewhere) or ("C-KEY-2", elsewhere[0])
                        return self._made(clause, op.process,
                                          f"{call}, the record written under "
                                          f"{self._rel(twin)!r}", shown, "C-GET-1")
                    wanted = [v for v in allowed if v is not None] or [
                        o.value for o in mine if o.value is not None]
                    detail = f" ({first_difference(op.result, wanted[0])})" if wanted else ""
                    return self._made("C-VAL-1", op.process, call + detail, shown, "C-GET-1")
                newer = [o for o in mine if o.op != "get" and o.ret is not None
                         and o.ret < op.call and o.process != op.process]
                return self._made("C-HANDLE-1" if newer else "C-PUT-1", op.process,
                                  call + " (an older record)", shown)
            if op.result is None:
                return self._made(self._gone_cause(op, mine, others), op.process, call, shown)
        if op.op == "put_if_absent":
            if op.result is False:
                live = [o.key for o in others if o.op in ("put", "put_if_absent")
                        and o.result is not False]
                cause = key_cause(key, live)
                if cause is not None:
                    return self._made(cause[0], op.process,
                                      f"{call}, as if {self._rel(cause[1])!r} were the same key",
                                      "no record yet (True)", "C-CREATE-3")
                deleted = any(o.op == "delete" and o.ret is not None and o.ret < op.call
                              for o in mine)
                return self._made("C-CREATE-5" if deleted else "C-CREATE-3", op.process, call,
                                  "no record yet (True)")
            earlier = [o for o in mine if o.op in ("put", "put_if_absent") and o.ret is not None
                       and o.ret < op.call]
            return self._made("C-CREATE-1" if earlier else "C-CREATE-2", op.process, call,
                              "a record already exists (False)")
        return self._made("C-DEL-1" if op.op == "delete" else "C-PUT-1", op.process, call,
                          shown)

    def _gone_cause(self, op: Operation, mine: Sequence[Operation],
                    others: Sequence[Operation]) -> str:
        deletes = [o.key for o in others if o.op == "delete"]
        cause = key_cause(op.key, deletes)
        if cause is not None and cause[0] == "C-KEY-2":
            return "C-KEY-2"
        if deletes:
            return "C-DEL-1"
        wrote_elsewhere = any(o.op != "get" and o.process != op.process for o in mine)
        return "C-HANDLE-1" if wrote_elsewhere else "C-LAST-1"

    def _blame_list(self, wrong: ListWrong, held: Sequence[Operation]) -> Blame:
        call = wrong.call
        assert call.keys is not None
        rel = self._rel
        head = f"list({rel(call.prefix)!r}) returned {len(call.keys)} keys"
        written = sorted({o.key for o in held if o.op != "get"})
        for extra in wrong.extra:
            cause = key_cause(extra, wrong.missing or written)
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


def _violations(ops: Sequence[Operation], found: CheckResult,
                budget: Budget) -> Iterable[CheckResult]:
    """Every violating key (only on the failure path), so the first in real time is blamed."""
    yield found
    for key, key_ops in sorted(partition_by_key(ops).items()):
        if key == found.key:
            continue
        result = check_history(key_ops, budget=budget)
        if result.verdict == "violation":
            yield result


def _per_handle(ops: Sequence[Operation], lists: Sequence[ListCall]
                ) -> list[tuple[list[Operation], list[ListCall]]]:
    handles = sorted({op.process for op in ops} | {c.handle for c in lists})
    return [([op for op in ops if op.process in (h, "reopen")],
             [c for c in lists if c.handle == h]) for h in handles]


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
