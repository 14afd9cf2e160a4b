"""Reading runs from the store: revision numbers, the newest revision, every run id."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reference_engine.records import keys
from reference_engine.records.decoding import ABSENT, Decoded
from reference_engine.records.run import RunRecord, decode_run


@dataclass(frozen=True)
class Newest:
    """The newest revision number of a run (0: no revision), its decoding and its size."""

    n: int
    decoded: Decoded[RunRecord]
    size: int = 0


def run_key_numbers(store: Any, prefix: str, parse: Callable[[str], tuple[str, int] | None],
                    run_id: str) -> list[int]:
    """The numbers of ``run_id``'s keys under ``prefix`` (revisions, claim generations),
    sorted. Each listed key is parsed, so another run whose id merely starts the same is
    left out, whatever the store's list returns for the prefix."""
    found = []
    for key in sorted(store.list(prefix)):
        parsed = parse(key)
        if parsed is not None and parsed[0] == run_id:
            found.append(parsed[1])
    return sorted(found)


def revision_numbers(store: Any, run_id: str) -> list[int]:
    return run_key_numbers(store, keys.revisions_prefix(run_id), keys.parse_revision_key,
                           run_id)


def newest_revision(store: Any, run_id: str) -> Newest:
    numbers = revision_numbers(store, run_id)
    if not numbers:
        return Newest(0, ABSENT)
    n = numbers[-1]
    data = store.get(keys.revision_key(run_id, n))
    return Newest(n, decode_run(data, run_id, n), len(data) if data is not None else 0)


def run_ids(store: Any) -> list[str]:
    return keys.run_ids_from_keys(store.list(keys.runs_root()))
