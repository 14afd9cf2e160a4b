"""``MutantInfo`` and the registry of known-broken targets the suites must catch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MutantLevel = Literal["store", "engine"]


@dataclass(frozen=True)
class MutantInfo:
    """One deliberately broken target.

    ``target`` is what ``--dw-store`` (level ``"store"``) or the engine-variant option
    (level ``"engine"``) accepts; ``section`` groups the defects (Create, Read and write,
    Delete, List, Keys, Engine variants); ``clauses`` are the ids of the clauses of
    ``docs/contract.md`` the defect breaks, which the tests that kill it check; ``family``
    names the generated family of a generated mutant (``""`` for a hand-written one);
    ``cause_clause`` is the clause of the defect's *cause*, which the first line of a red run
    on the mutant must name (``tests/selftest/test_kill_matrix.py`` asserts it).
    """

    name: str
    defect_doc: str
    target: str
    section: str
    level: MutantLevel = "store"
    clauses: tuple[str, ...] = ()
    # A generated family this mutant belongs to (dw_testing.selftest.mutants.generated).
    family: str = ""
    # The clause of the cause: the first line of the run's diagnosis names it.
    cause_clause: str = ""
    # Other clauses the same one mechanism breaks as often (which one a run shows more of
    # depends on its seed): the first line may name one of these instead.
    also_causes: tuple[str, ...] = ()
