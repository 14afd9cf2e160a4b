"""``MutantInfo`` and the registry of known-broken targets the suites must catch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MutantLevel = Literal["store", "engine"]


@dataclass(frozen=True)
class MutantInfo:
    """One deliberately broken target.

    ``target`` is what ``--dw-store`` (level ``"store"``) or the engine-variant option
    (level ``"engine"``, added with the engine variants) accepts; ``section`` is the
    SPEC §6.6 heading the defect belongs to.
    """

    name: str
    defect_doc: str
    target: str
    section: str
    level: MutantLevel = "store"
