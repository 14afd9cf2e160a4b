"""One diagnosis for a red run: "What is wrong with this store", grouped by the clause of
the cause.

Each group starts with the cause (the clause, its first wrong answer and its fix), then the
failed tests whose histories showed it: store-level tests first, then engine-level tests,
"explained by" the cause above. Failures the judge did not explain come last. The text
depends only on the tests' outcomes and judgements, sorted, never on the order they
finished in or on how many workers ran them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from dw_testing.judge.blame import Blame, clause_id
from dw_testing.judge.lasting import lasting_clause

HEADING = "What is wrong with this store"
_PREFIX = re.compile(r"dwc-[0-9a-f]+-[A-Za-z0-9]+(?:-lasting)?/(?:\d+/)?")


@dataclass(frozen=True)
class TestOutcome:
    nodeid: str
    store: str
    outcome: str
    engine: bool
    blame: Blame | None
    reason: str = ""
    judged_only: bool = False
    """The test's own assertions passed: only the judge failed it."""
    capability: str = ""


def diagnosis(outcomes: Iterable[TestOutcome],
              lasting: Mapping[str, Sequence[str]]) -> list[str]:
    """The lines of the diagnosis, or ``[]`` for a green run."""
    failed = sorted((o for o in outcomes if o.outcome == "FAIL"), key=lambda o: o.nodeid)
    stores = sorted({o.store for o in failed} | {s for s, p in lasting.items() if p})
    if not stores:
        return []
    lines = [HEADING]
    for store in stores:
        lines += _store_lines(store, [o for o in failed if o.store == store],
                              list(lasting.get(store, ())))
    return lines


def _store_lines(store: str, failed: list[TestOutcome], lasting: list[str]) -> list[str]:
    lines = [f"store {store}:"]
    groups: dict[str, list[TestOutcome]] = defaultdict(list)
    unexplained: list[TestOutcome] = []
    for outcome in failed:
        if outcome.blame is None:
            unexplained.append(outcome)
        else:
            groups[clause_id(outcome.blame.clause)].append(outcome)
    if lasting:
        clause, fix = lasting_clause(lasting)
        lines.append(f"  {clause}: {_scrub(lasting[0])}")
        lines += [f"    also: {_scrub(p)}" for p in lasting[1:4]]
        lines.append(f"    fix: {fix}")
    for clause in sorted(groups, key=lambda c: (-len(groups[c]), _precedence(c), c)):
        tests = sorted(groups[clause], key=lambda o: (o.engine, o.nodeid))
        first = tests[0].blame
        assert first is not None
        count = len(tests)
        lines.append(f"  {clause}, cause of {count} failure{'s' if count > 1 else ''}: "
                     f"{_scrub(first.call)}; the model allowed {_scrub(first.allowed)}")
        lines.append(f"    fix: {first.fix}")
        for test in tests:
            seen = (f"seen as {test.blame.symptom}" if test.blame and test.blame.symptom
                    and clause_id(test.blame.symptom) != clause else "")
            how = ("engine, explained by " + clause + " above" if test.engine
                   else "store" + (", only the judge caught it" if test.judged_only else ""))
            lines.append(f"    - {test.nodeid} ({how}{'; ' + seen if seen else ''})")
    if unexplained:
        lines.append("  failures with no wrong store answer in their history:")
        lines += [f"    - {o.nodeid}: {_scrub(o.reason)}" for o in unexplained]
    return lines


# Among causes of as many failures, the one that explains the others first: a key rewritten
# or a handle that does not see another's writes shows up as wrong creates, reads and lists.
EXPLAINING = ("C-KEY-2", "C-KEY-3", "C-HANDLE-1", "C-HANDLE-3", "C-LAST-1", "C-VAL-1",
              "C-GET-1", "C-PUT-1", "C-DEL-1", "C-CREATE-4")


def _precedence(clause: str) -> int:
    return EXPLAINING.index(clause) if clause in EXPLAINING else len(EXPLAINING)


def _scrub(text: str) -> str:
    """Keys without the run's prefix: the same text whatever the session or worker."""
    return _PREFIX.sub("", text)
