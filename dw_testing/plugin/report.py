"""The conformance report: JSON for machines and a Markdown capability matrix beside it.

Shape (``schema`` 1)::

    {"schema": 1, "store": "memory" | ["memory", "file"], "stores": [...],
     "profile": "ci", "seed": 123,
     "tests": [{"nodeid", "store", "capability", "outcome", "reason"}],
     "capabilities": {name: {"outcome", "failing": [nodeid, ...]}},
     "by_store": {store: {name: {"outcome", "failing": [...]}}},
     "leftovers": {store: count}}

``store`` is the single store's name, or the list of names when several ran; ``stores`` is
always the list. ``capabilities`` folds every store together (worst wins); ``by_store``
keeps them apart. ``failing`` lists the FAIL and UNKNOWN tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Worst first: a capability takes the worst outcome among its tests.
OUTCOME_ORDER = ("FAIL", "UNKNOWN", "PASS", "XFAIL", "SKIP")
SCHEMA_VERSION = 1

REPORT_SCHEMA: Mapping[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["schema", "store", "stores", "profile", "seed", "tests", "capabilities"],
    "properties": {
        "schema": {"const": SCHEMA_VERSION},
        "store": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "stores": {"type": "array", "items": {"type": "string"}},
        "profile": {"type": "string"},
        "seed": {"type": ["integer", "null"]},
        "tests": {"type": "array", "items": {
            "type": "object",
            "required": ["nodeid", "store", "capability", "outcome", "reason"],
            "properties": {
                "nodeid": {"type": "string"}, "store": {"type": "string"},
                "capability": {"type": "string"},
                "outcome": {"enum": list(OUTCOME_ORDER)},
                "reason": {"type": "string"},
            },
        }},
        "capabilities": {"$ref": "#/$defs/matrix"},
        "by_store": {"type": "object", "additionalProperties": {"$ref": "#/$defs/matrix"}},
        "leftovers": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
    "$defs": {"matrix": {"type": "object", "additionalProperties": {
        "type": "object", "required": ["outcome", "failing"],
        "properties": {"outcome": {"enum": list(OUTCOME_ORDER)},
                       "failing": {"type": "array", "items": {"type": "string"}}},
    }}},
}


def worst(outcomes: Iterable[str]) -> str:
    ranked = sorted(outcomes, key=OUTCOME_ORDER.index)
    return ranked[0] if ranked else "SKIP"


@dataclass
class TestResult:
    nodeid: str
    store: str
    capability: str
    outcome: str
    reason: str = ""


class ReportBuilder:
    """Folds pytest's per-phase reports into one outcome per test, worst phase wins."""

    def __init__(self) -> None:
        self._results: dict[str, TestResult] = {}
        self.leftovers: dict[str, int] = {}

    def record(self, nodeid: str, store: str, capability: str, outcome: str,
               reason: str) -> None:
        known = self._results.get(nodeid)
        if known is None:
            self._results[nodeid] = TestResult(nodeid, store, capability, outcome, reason)
        elif OUTCOME_ORDER.index(outcome) < OUTCOME_ORDER.index(known.outcome):
            known.outcome, known.reason = outcome, reason

    def add_leftovers(self, store: str, count: int) -> None:
        """Sum the workers' counts; -1 (the check itself failed) sticks."""
        known = self.leftovers.get(store, 0)
        self.leftovers[store] = -1 if -1 in (known, count) else known + count

    @property
    def results(self) -> list[TestResult]:
        return list(self._results.values())

    def has(self, outcome: str) -> bool:
        return any(r.outcome == outcome for r in self._results.values())

    def build(self, *, stores: list[str], profile: str, seed: int | None) -> dict[str, Any]:
        results = self.results
        by_store = {store: matrix(r for r in results if r.store == store) for store in stores}
        return {
            "schema": SCHEMA_VERSION,
            "store": stores[0] if len(stores) == 1 else list(stores),
            "stores": list(stores),
            "profile": profile,
            "seed": seed,
            "tests": [r.__dict__.copy() for r in results],
            "capabilities": matrix(results),
            "by_store": by_store,
            "leftovers": dict(self.leftovers),
        }


def matrix(results: Iterable[TestResult]) -> dict[str, dict[str, Any]]:
    grouped: dict[str, list[TestResult]] = {}
    for result in results:
        grouped.setdefault(result.capability, []).append(result)
    return {
        name: {
            "outcome": worst(r.outcome for r in members),
            "failing": [r.nodeid for r in members if r.outcome in ("FAIL", "UNKNOWN")],
        }
        for name, members in sorted(grouped.items())
    }


def markdown(report: Mapping[str, Any]) -> str:
    """The capability x store matrix, then the failing tests."""
    stores: list[str] = list(report["stores"])
    by_store: Mapping[str, Mapping[str, Any]] = report.get("by_store", {})
    capabilities = sorted(report["capabilities"])
    lines = [
        "# Conformance report",
        "",
        f"Profile `{report['profile']}`, seed `{report['seed']}`. "
        "Outcome order, worst first: " + " > ".join(OUTCOME_ORDER) + ".",
        "",
        "| capability | " + " | ".join(stores) + " |",
        "|---|" + "---|" * len(stores),
    ]
    for name in capabilities:
        cells = [by_store.get(store, {}).get(name, {}).get("outcome", "-") for store in stores]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    for store in stores:
        counts = [f"{sum(1 for t in report['tests'] if t['store'] == store and t['outcome'] == o)}"
                  f" {o}" for o in OUTCOME_ORDER]
        lines.append(f"- {store}: " + ", ".join(c for c in counts if not c.startswith("0 ")))
    failing = [t for t in report["tests"] if t["outcome"] in ("FAIL", "UNKNOWN")]
    if failing:
        lines += ["", "## Failing tests", ""]
        lines += [f"- {t['outcome']} `{t['nodeid']}`: {t['reason']}" for t in failing]
    leftovers = {k: v for k, v in report.get("leftovers", {}).items() if v}
    if leftovers:
        lines += ["", "## Leftover keys", ""]
        lines += [f"- {store}: {count} `dwc-` key(s) left behind" for store, count in
                  leftovers.items()]
    return "\n".join(lines) + "\n"


def markdown_path(path: Path) -> Path:
    """``out/report.json`` -> ``out/report.md`` (``x.md`` -> ``x.md.md``, never itself)."""
    return path.with_name(path.name + ".md") if path.suffix == ".md" else path.with_suffix(".md")


def write(report: Mapping[str, Any], path: Path) -> Path:
    """Write ``path`` (JSON) and ``path`` with suffix ``.md``; returns the Markdown path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    md_path = markdown_path(path)
    md_path.write_text(markdown(report), encoding="utf-8")
    return md_path
