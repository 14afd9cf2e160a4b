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
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from dw_testing.history import Budget, Operation, check_history
from dw_testing.history.checker import CheckResult, partition_by_key
from dw_testing.history.wire_faults import StampedFault, attribute_faults, judged
from dw_testing.judge.blame import Blame, clause_id
from dw_testing.judge.causes import Causes
from dw_testing.judge.lists import judge_lists
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

    @property
    def _causes(self) -> Causes:
        return Causes(self.store, self.namespace, closed=dict(self.log.closed))

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
            _, blame, detail = _first_cause(wrongs)
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
                # An empty record read as None throws every later answer of the key out of
                # place; when the model allowed only records there, that read is the cause.
                empties = [op for op in answers if self._causes.empty_read_as_none(op, ops)]
                first = min(empties or answers or marked, key=lambda op: op.call)
                if first.op == "get" and not empties:
                    first = _false_create_behind(keyed.key, ops, self.budget) or first
                wrongs.append((first.call, self._causes.blame_call(first, ops),
                               keyed.describe()))
        for op in ops:
            refused = self._causes.missing_key_delete(op, ops)
            if refused is not None:
                wrongs.append((op.call, refused, ""))
        held = list(judged(ops))
        for wrong in judge_lists(lists, held, namespace=self.namespace,
                                 capabilities=self.capabilities):
            wrongs.append((wrong.call.call, self._causes.blame_list(wrong, held), ""))
        return wrongs, undecided

    # -- blame -------------------------------------------------------------------------


# Causes that explain the other wrong answers of a history: a key rewritten turns up as a
# list missing keys, a record gone or a create told False, wherever it shows first.
KEY_CAUSES = frozenset({"C-KEY-2"})


def _first_cause(wrongs: Sequence[tuple[int, Blame, str]]) -> tuple[int, Blame, str]:
    """The first wrong answer in real time; but when a key was rewritten anywhere in the
    history, the first answer that shows it, told as the cause of the first one."""
    first = min(wrongs, key=lambda w: w[0])
    if clause_id(first[1].clause) in KEY_CAUSES:
        return first
    keyed = [w for w in wrongs if clause_id(w[1].clause) in KEY_CAUSES]
    if not keyed:
        return first
    stamp, blame, detail = min(keyed, key=lambda w: w[0])
    return stamp, replace(blame, symptom=blame.symptom or first[1].clause), detail


def _false_create_behind(key: str | None, ops: Sequence[Operation],
                         budget: Budget) -> Operation | None:
    """The first create told ``False`` that no order allows, when the creates told
    ``False`` explain why ``key``'s history has no legal order.

    A wrong ``False`` (the store created the record, or none stood there) can show first
    as a read that no order allows: the read is the symptom. With every ``False`` set
    aside (each may have applied at any moment after its call, or not at all) the history
    must linearize; then they are put back in real-time order, and the first that breaks
    it again is the cause."""
    mine = [op for op in ops if op.key == key]
    falses = sorted((op for op in mine if op.op == "put_if_absent" and op.result is False
                     and op.ret is not None),
                    key=lambda op: op.call)[:_FALSE_CREATES_TRIED]
    if not falses:
        return None

    def linearizes(aside: set[int]) -> bool:
        loosened = [replace(op, result=None, ret=None, error="SetAside") if id(op) in aside
                    else op for op in mine]
        return check_history(loosened, budget=budget).verdict == "ok"

    aside = {id(op) for op in falses}
    if not linearizes(aside):
        return None
    for create in falses:
        aside.discard(id(create))
        if not linearizes(aside):
            return create
    return None


_FALSE_CREATES_TRIED = 16  # a bound on the failure path's extra checks


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
