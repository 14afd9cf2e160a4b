"""The clause ids of ``docs/contract.md``, which ``@pytest.mark.dw_clause`` cites.

The page ships inside the package (``dw_testing/plugin/contract.md`` links to it in the
source tree), so a test citing a clause that does not exist is refused at collection, in
the suite and in an author's own tests alike.
"""

from __future__ import annotations

import difflib
import importlib.resources
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

MARKER = "dw_clause"
CONTRACT_RESOURCE = "contract.md"
_HEADING = re.compile(r"^### (C-[A-Z]+-\d+)\s*$", re.MULTILINE)
_TITLE = re.compile(r"\*\*(.+?)\*\*", re.DOTALL)


@dataclass(frozen=True)
class Clause:
    """One clause of the page: its id and the bold sentence that opens it."""

    id: str
    title: str

    @property
    def anchor(self) -> str:
        return self.id.lower()


def read_clauses(page: str) -> list[Clause]:
    """The clauses of the page, in order, each titled by its first bold text."""
    found = list(_HEADING.finditer(page))
    clauses = []
    for index, match in enumerate(found):
        end = found[index + 1].start() if index + 1 < len(found) else len(page)
        title = _TITLE.search(page[match.end():end])
        clauses.append(Clause(match.group(1), " ".join(title.group(1).split()) if title else ""))
    return clauses


class ContractMissing(RuntimeError):
    """The shipped contract page is not in the installed package."""


@lru_cache(maxsize=1)
def shipped_clauses() -> tuple[Clause, ...]:
    """The clauses of the contract page shipped in the package."""
    try:
        page = (importlib.resources.files(__package__ or "dw_testing.plugin")
                / CONTRACT_RESOURCE).read_text(encoding="utf-8")
    except OSError:
        raise ContractMissing(
            "the store contract (docs/contract.md) is missing from the installed dw_testing "
            "package, so dw_clause markers cannot be checked; reinstall dw-testing"
        ) from None
    return tuple(read_clauses(page))


def known_clause_ids() -> frozenset[str]:
    return frozenset(clause.id for clause in shipped_clauses())


def clause_titles() -> dict[str, str]:
    """Each clause id with the sentence that opens it (what the contract allows)."""
    return {clause.id: clause.title for clause in shipped_clauses()}


def unknown_citations(cited: Iterable[tuple[str, Iterable[str]]]) -> list[str]:
    """One line per (test, clause id) whose id the contract does not define."""
    known = known_clause_ids()
    problems = []
    for nodeid, ids in cited:
        for clause_id in ids:
            if clause_id not in known:
                close = difflib.get_close_matches(clause_id, sorted(known), n=3, cutoff=0.6)
                problems.append(
                    f"{nodeid}: @pytest.mark.{MARKER}({clause_id!r}) names no clause of "
                    f"docs/contract.md (close matches: {', '.join(close) or 'none'})")
    return problems
