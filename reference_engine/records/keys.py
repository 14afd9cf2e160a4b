"""The one module that knows the control-plane key families (SPEC §3).

Every other module builds and parses keys through these functions, so a layout change
touches this file only. A static test greps the package for the prefixes.
"""

from __future__ import annotations

_RUNS = "runs"
_REV = "rev"
_WAITS = "waits"
_OUTCOMES = "wait-outcomes"
_CLAIMS = "claims"
_WIDTH = 10


def _number(n: int) -> str:
    if n < 0 or n >= 10**_WIDTH:
        raise ValueError(f"record number {n} does not fit {_WIDTH} digits")
    return f"{n:0{_WIDTH}d}"


def _parse_number(text: str) -> int | None:
    if len(text) != _WIDTH or not text.isdigit():
        return None
    return int(text)


# --- runs -----------------------------------------------------------------------------

def runs_root() -> str:
    """The prefix under which every run's revisions live."""
    return _RUNS


def run_root(run_id: str) -> str:
    """Everything a run owns in the ``runs`` family."""
    return f"{_RUNS}/{run_id}"


def revisions_prefix(run_id: str) -> str:
    return f"{_RUNS}/{run_id}/{_REV}"


def revision_key(run_id: str, n: int) -> str:
    return f"{_RUNS}/{run_id}/{_REV}/{_number(n)}"


def parse_revision_key(key: str) -> tuple[str, int] | None:
    """``(runId, n)`` for a revision key, else ``None``."""
    parts = key.split("/")
    if len(parts) != 4 or parts[0] != _RUNS or parts[2] != _REV:
        return None
    n = _parse_number(parts[3])
    return None if n is None else (parts[1], n)


def run_ids_from_keys(keys: list[str]) -> list[str]:
    """The distinct run ids among revision keys, sorted."""
    ids = {parsed[0] for key in keys if (parsed := parse_revision_key(key)) is not None}
    return sorted(ids)


# --- waits and outcomes ---------------------------------------------------------------

def waits_root() -> str:
    return _WAITS


def wait_key(wait_id: str) -> str:
    return f"{_WAITS}/{wait_id}"


def outcomes_root() -> str:
    return _OUTCOMES


def outcome_key(wait_id: str) -> str:
    return f"{_OUTCOMES}/{wait_id}"


def wait_id_from_key(key: str) -> str | None:
    """The wait id of a registration or outcome key, else ``None``."""
    parts = key.split("/")
    if len(parts) == 2 and parts[0] in (_WAITS, _OUTCOMES):
        return parts[1]
    return None


# --- claims ---------------------------------------------------------------------------

def claims_prefix(run_id: str) -> str:
    return f"{_CLAIMS}/{run_id}"


def claim_key(run_id: str, generation: int) -> str:
    return f"{_CLAIMS}/{run_id}/{_number(generation)}"


def parse_claim_key(key: str) -> tuple[str, int] | None:
    """``(runId, generation)`` for a claim key, else ``None``."""
    parts = key.split("/")
    if len(parts) != 3 or parts[0] != _CLAIMS:
        return None
    g = _parse_number(parts[2])
    return None if g is None else (parts[1], g)
