"""The run's input-coverage table: calls per cell, per store, summed over every test.

Each test's counts (:func:`dw_testing.judge.coverage.count`) travel with its report (under
xdist from the worker that ran it); this table adds them up on the controller and gives the
report's ``coverage`` section and the terminal's lines under ``-v``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from dw_testing.judge.coverage import CELLS, NEEDS, Cell, cell_id, cell_of, wanted

HEADING = "input coverage"
NEEDED_CAPABILITIES = tuple(sorted(set(NEEDS.values())))


def row_of(counts: Counter[Cell], capabilities: Mapping[str, bool]) -> dict[str, Any]:
    """One test's part, as it travels in the test report's user properties."""
    return {"cells": {cell_id(cell): n for cell, n in counts.items()},
            "capabilities": {name: bool(capabilities.get(name, False))
                             for name in NEEDED_CAPABILITIES}}


class InputCoverage:
    """Calls per cell for each store of the run."""

    def __init__(self) -> None:
        self.counts: dict[str, Counter[Cell]] = {}
        self.capabilities: dict[str, dict[str, bool]] = {}

    def add(self, store: str, row: Mapping[str, Any]) -> None:
        counts = self.counts.setdefault(store, Counter())
        for text, calls in (row.get("cells") or {}).items():
            counts[cell_of(text)] += int(calls)
        known = self.capabilities.setdefault(store, {})
        for name, declared in (row.get("capabilities") or {}).items():
            known[name] = known.get(name, False) or bool(declared)

    def empty(self, store: str) -> list[Cell]:
        """The cells ``store`` was asked to fill and no call reached."""
        counts = self.counts.get(store, Counter())
        return [c for c in wanted(self.capabilities.get(store, {})) if not counts[c]]

    def to_json(self) -> dict[str, Any]:
        """The report's ``coverage``: per store, every cell asked of it with its calls, and
        the cells not asked (a capability the store does not declare)."""
        section: dict[str, Any] = {}
        for store in sorted(self.counts):
            asked = wanted(self.capabilities.get(store, {}))
            counts = self.counts[store]
            section[store] = {
                "cells": {cell_id(c): counts[c] for c in asked},
                "not_asked": [cell_id(c) for c in CELLS if c not in asked],
                "empty": [cell_id(c) for c in self.empty(store)],
            }
        return section

    def lines(self) -> list[str]:
        return lines(self.to_json())


def summary(section: Mapping[str, Any]) -> list[str]:
    """One line per store: the cells reached, and the first empty ones (``dw conformance``)."""
    return [f"{HEADING}: {line}" for line in lines(section) if not line.startswith(" ")]


def lines(section: Mapping[str, Any]) -> list[str]:
    """The table as text, one line per dimension and class, from a report's ``coverage``."""
    found: list[str] = []
    for store, table in sorted(section.items()):
        cells: Mapping[str, int] = table.get("cells", {})
        empty = table.get("empty", [])
        found.append(f"{store}: {len(cells) - len(empty)} of {len(cells)} cells reached"
                     + (f"; empty: {', '.join(empty[:6])}" + ("..." if len(empty) > 6 else "")
                        if empty else ""))
        rows: dict[tuple[str, str], list[str]] = {}
        for text, calls in cells.items():
            dimension, name, position = cell_of(text)
            rows.setdefault((dimension, name), []).append(f"{position} {calls}")
        for (dimension, name), counts in rows.items():
            found.append(f"  {dimension:<14} {name:<24} {', '.join(counts)}")
    return found
