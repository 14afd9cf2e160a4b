"""The one module that knows the control-plane key families (docs/explanation/engine.md).

Every other module builds and parses keys through these functions, so a layout change
touches this file only. A static test greps the package for the prefixes.

Every prefix returned here (``*_root``, ``*_prefix``, ``due_bucket``) ends in ``/``: the
one form of ``list`` every store answers alike (contract C-LIST-3), matched by whole
segments whether or not the store declares ``segment_prefixes``.

The engine's key space (contract C-ENGINE-1): every key built here is inside C-KEY-1's
grammar, and no record key ever lies beneath another, since every family has a fixed
depth under its own first segment. An id given to a builder (a run id, a wait id) must be
one key segment, or the builder raises ``InvalidKey`` before any store call: a store need
not police key shapes (``refuses_bad_keys``) nor hold nested records (``nested_keys``) for
the engine.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from reference_engine.errors import InvalidKey
from reference_engine.stores.keys import key_problem

_RUNS = "runs"
_REV = "rev"
_WAITS = "waits"
_OUTCOMES = "wait-outcomes"
_CLAIMS = "claims"
# The scheduler's index (hints, never truth): a settled wait's run, and every deadline.
_READY = "ready-runs"
_DUE = "wait-deadlines"
# The listing's index (a hint too): each run under its status and workflow.
_RUN_STATES = "run-states"
# The scheduler's cursor (a hint): the wall time up to which deadlines were looked at.
_SCHEDULER = "scheduler"
_DEADLINES_SEEN = "deadlines-seen"
_WIDTH = 10
_MS_WIDTH = 15
_BUCKET_MS = 60_000  # deadlines are listed by the minute
# One segment of an id: C-KEY-1's 200 bytes. The deepest key (a deadline entry) is then
# 15 + 11 + 16 + 2 x 201 bytes, well inside the 1024-byte key.
_MAX_ID_BYTES = 200


def _number(n: int) -> str:
    if n < 0 or n >= 10**_WIDTH:
        raise ValueError(f"record number {n} does not fit {_WIDTH} digits")
    return f"{n:0{_WIDTH}d}"


def _parse_number(text: str) -> int | None:
    if len(text) != _WIDTH or not text.isdigit():
        return None
    return int(text)


def _one_segment(text: str, what: str) -> str:
    """``text`` if it is one key segment C-KEY-1 allows, else ``InvalidKey`` (before I/O).

    The message names the id by its length only: a refused id may hold anything.
    """
    problem = "it contains '/'" if "/" in text else key_problem(text)
    if problem is None and len(text.encode("utf-8")) > _MAX_ID_BYTES:
        problem = f"it is over {_MAX_ID_BYTES} bytes in UTF-8"
    if problem is not None:
        raise InvalidKey(f"a {what} of {len(text)} chars is not usable as one key segment "
                         f"({problem}); use the id as `dw runs` or `dw show` prints it",
                         op=what)
    return text


def _segments_after(family: str, key: str, count: int) -> list[str] | None:
    """The ``count`` segments after ``family`` when ``key`` is a key of that family with
    exactly that many, none of them empty; else ``None``. Parsers unpack ``... or ("",) *
    count``: an empty segment is no number and no id, so a miss falls through to ``None``."""
    parts = key.split("/")
    if len(parts) != count + 1 or parts[0] != family or not all(parts[1:]):
        return None
    return parts[1:]


# --- runs -----------------------------------------------------------------------------

def runs_root() -> str:
    """The prefix under which every run's revisions live."""
    return f"{_RUNS}/"


def run_root(run_id: str) -> str:
    """Everything a run owns in the ``runs`` family."""
    return f"{_RUNS}/{_one_segment(run_id, 'run id')}/"


def revisions_prefix(run_id: str) -> str:
    return f"{_RUNS}/{_one_segment(run_id, 'run id')}/{_REV}/"


def revision_key(run_id: str, n: int) -> str:
    return f"{_RUNS}/{_one_segment(run_id, 'run id')}/{_REV}/{_number(n)}"


def parse_revision_key(key: str) -> tuple[str, int] | None:
    """``(runId, n)`` for a revision key, else ``None``."""
    run_id, rev, number = _segments_after(_RUNS, key, 3) or ("",) * 3
    n = _parse_number(number) if rev == _REV else None
    return None if n is None else (run_id, n)


def run_ids_from_keys(keys: list[str]) -> list[str]:
    """The distinct run ids among revision keys, sorted."""
    ids = {parsed[0] for key in keys if (parsed := parse_revision_key(key)) is not None}
    return sorted(ids)


# --- waits and outcomes ---------------------------------------------------------------

def waits_root() -> str:
    return f"{_WAITS}/"


def wait_key(wait_id: str) -> str:
    return f"{_WAITS}/{_one_segment(wait_id, 'wait id')}"


def outcomes_root() -> str:
    return f"{_OUTCOMES}/"


def outcome_key(wait_id: str) -> str:
    return f"{_OUTCOMES}/{_one_segment(wait_id, 'wait id')}"


def wait_id_from_key(key: str) -> str | None:
    """The wait id of a registration or outcome key, else ``None``."""
    found = _segments_after(_WAITS, key, 1) or _segments_after(_OUTCOMES, key, 1)
    return None if found is None else found[0]


# --- claims ---------------------------------------------------------------------------

def claims_root() -> str:
    """Every run's claims: ``claims/<runId>/<generation>``."""
    return f"{_CLAIMS}/"


def claims_prefix(run_id: str) -> str:
    return f"{_CLAIMS}/{_one_segment(run_id, 'run id')}/"


def claim_key(run_id: str, generation: int) -> str:
    return f"{_CLAIMS}/{_one_segment(run_id, 'run id')}/{_number(generation)}"


def parse_claim_key(key: str) -> tuple[str, int] | None:
    """``(runId, generation)`` for a claim key, else ``None``."""
    run_id, number = _segments_after(_CLAIMS, key, 2) or ("",) * 2
    generation = _parse_number(number)
    return None if generation is None else (run_id, generation)


# --- the scheduler's index: hints that a run may be ready or a deadline due -------------

def ready_root() -> str:
    """Every ready hint: ``ready-runs/<runId>/<waitId>``."""
    return f"{_READY}/"


def ready_prefix(run_id: str) -> str:
    return f"{_READY}/{_one_segment(run_id, 'run id')}/"


def ready_key(run_id: str, wait_id: str) -> str:
    return (f"{_READY}/{_one_segment(run_id, 'run id')}/"
            f"{_one_segment(wait_id, 'wait id')}")


def parse_ready_key(key: str) -> tuple[str, str] | None:
    """``(runId, waitId)`` for a ready hint key, else ``None``."""
    found = _segments_after(_READY, key, 2)
    return None if found is None else (found[0], found[1])


def deadline_ms(deadline: float) -> int:
    """A deadline in whole milliseconds, rounded down: due once ``now_ms`` passes it."""
    if deadline != deadline or deadline <= 0:  # NaN or before 1970: due at once
        return 0
    return int(min(deadline, 1e15) * 1000)


def due_root() -> str:
    return f"{_DUE}/"


def due_bucket(minute: int) -> str:
    """The deadlines of one minute (``deadline_ms // 60000``), listable on their own."""
    return f"{_DUE}/{_number(minute)}/"


def due_minute(ms: int) -> int:
    return ms // _BUCKET_MS


def due_key(run_id: str, wait_id: str, deadline: float) -> str:
    # A deadline past the year 20000 is as good as never: it is filed at the last minute.
    ms = min(deadline_ms(deadline), _BUCKET_MS * 10**_WIDTH - 1)
    return (f"{_DUE}/{_number(due_minute(ms))}/{ms:0{_MS_WIDTH}d}/"
            f"{_one_segment(run_id, 'run id')}/{_one_segment(wait_id, 'wait id')}")


def deadlines_seen_key() -> str:
    """The scheduler's cursor: deadlines before it were looked at by some pass."""
    return f"{_SCHEDULER}/{_DEADLINES_SEEN}"


def parse_due_key(key: str) -> tuple[int, str, str] | None:
    """``(deadline_ms, runId, waitId)`` for a deadline entry key, else ``None``."""
    minute, ms, run_id, wait_id = _segments_after(_DUE, key, 4) or ("",) * 4
    if _parse_number(minute) is None or len(ms) != _MS_WIDTH or not ms.isdigit():
        return None
    return int(ms), run_id, wait_id


# --- the listing's index: runs by status and workflow -----------------------------------

def _segment(text: str) -> str:
    """A workflow name as one key segment (names are key-safe; legacy ones are quoted)."""
    if text in ("", ".", ".."):  # no store takes these as a segment
        return text.replace(".", "%2E") or "%"
    return _one_segment(quote(text, safe="-_."), "workflow name")


def run_states_root() -> str:
    return f"{_RUN_STATES}/"


def run_state_prefix(status: str, workflow: str | None = None) -> str:
    """Runs of one status, or of one status and workflow: ``run-states/<status>/[<wf>/]``."""
    if workflow is None:
        return f"{_RUN_STATES}/{_one_segment(status, 'status')}/"
    return f"{_RUN_STATES}/{_one_segment(status, 'status')}/{_segment(workflow)}/"


def run_state_key(status: str, workflow: str, run_id: str) -> str:
    return (f"{_RUN_STATES}/{_one_segment(status, 'status')}/{_segment(workflow)}/"
            f"{_one_segment(run_id, 'run id')}")


def parse_run_state_key(key: str) -> tuple[str, str, str] | None:
    """``(status, workflow, runId)`` for a run-state key, else ``None``."""
    found = _segments_after(_RUN_STATES, key, 3)
    if found is None:
        return None
    status, workflow, run_id = found
    return status, "" if workflow == "%" else unquote(workflow), run_id
