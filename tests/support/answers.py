"""Workflows, store snapshots and a recording store shared by the answer tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from support import answer_steps

from dw_testing.kit.doubles import NoCreateStore
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.records.run_store import newest_revision
from reference_engine.workflows.loader import parse_workflow
from reference_engine.workflows.model import Workflow

SCHEMA: dict[str, Any] = {"type": "object", "required": ["approved"],
                          "properties": {"approved": {"type": "boolean"}}}
OPEN_SCHEMA: dict[str, Any] = {"type": "object"}
YES = '{"approved": true}'
NO = '{"approved": false}'
NOBODY = "00000000-0000-4000-8000-000000000000"

MakeEngine = Callable[..., Engine]

__all__ = ["NoCreateStore"]


def gate_workflow(*, after: str = "support.answer_steps:observe",
                  schema: dict[str, Any] | None = None, timeout: int = 3600,
                  before: list[dict[str, Any]] | None = None, name: str = "gate") -> Workflow:
    """build -> approve (one wait, ``approval``) -> after (a python step reading the answer)."""
    return parse_workflow({
        "name": name,
        "inputs": {"env": "prod"},
        "jobs": {
            "build": {"steps": before or [{"name": "compile", "log": "compiling"}]},
            "approve": {"depends_on": ["build"], "steps": [{
                "name": "approval",
                "wait_for_signal": {"timeout": timeout, "schema": schema or SCHEMA}}]},
            "after": {"depends_on": ["approve"],
                      "steps": [{"name": "use", "python": after}]},
        },
    })


def two_wait_workflow() -> Workflow:
    """Two waits in sequence: ``approval`` then ``confirm``."""
    return parse_workflow({
        "name": "twice",
        "jobs": {
            "approve": {"steps": [{"name": "approval",
                                   "wait_for_signal": {"timeout": 3600, "schema": SCHEMA}}]},
            "confirm": {"depends_on": ["approve"], "steps": [{
                "name": "confirmation", "wait_for_signal": {"timeout": 3600, "schema": SCHEMA}}]},
        },
    })


@dataclass(frozen=True)
class AnsweredRun:
    """A suspended gate run whose one wait holds an accepted answer."""

    run_id: str
    wait_id: str
    receipt: str
    suspended_at: int  # the revision the run was suspended at

    @property
    def consume_key(self) -> str:
        """Where its resume saves the consume: the revision after the suspended one."""
        return keys.revision_key(self.run_id, self.suspended_at + 1)


def answered_run(engine: Engine, run_id: str | None = None, *,
                 after: str = "support.answer_steps:observe") -> AnsweredRun:
    """Run the gate workflow (``after`` its python step) and answer its wait yes; the
    python steps of a later resume in this process read the engine's store."""
    answer_steps.STORE[:] = [engine.store]
    view = engine.run(gate_workflow(after=after), run_id=run_id)
    wait_id = view.waits[0].wait_id
    receipt = engine.answer(view.run_id, wait_id, YES).receipt.id
    return AnsweredRun(view.run_id, wait_id, receipt, newest_revision(engine.store, view.run_id).n)


def snapshot(store: Any) -> dict[str, bytes]:
    """Every key of the store and its bytes."""
    found: dict[str, bytes] = {}
    for key in store.list(""):
        data = store.get(key)
        if data is not None:
            found[key] = data
    return found


def applied(shown: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in shown["journal"] if e["type"] == "answer_applied"]


class RecordingStore:
    """Passes every call through and keeps every key and value ever written."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.written: list[tuple[str, bytes]] = []
        self._lock = threading.Lock()

    def _note(self, key: str, data: bytes) -> None:
        with self._lock:
            self.written.append((key, bytes(data)))

    def put(self, key: str, data: bytes) -> None:
        self._note(key, data)
        self.inner.put(key, data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        self._note(key, data)
        created: bool = self.inner.put_if_absent(key, data)
        return created

    def get(self, key: str) -> bytes | None:
        data: bytes | None = self.inner.get(key)
        return data

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def list(self, prefix: str) -> list[str]:
        found: list[str] = self.inner.list(prefix)
        return found

    def every_byte(self) -> bytes:
        with self._lock:
            return b"\n".join(k.encode() + b"\0" + v for k, v in self.written)


# A store the CLI can open by import path (``--store support.answers:recording_memory``),
# so a test sees every byte the ``dw`` commands wrote.
RECORDERS: list[RecordingStore] = []
SPACE: list[str] = ["answers-default"]


def recording_memory() -> RecordingStore:
    from reference_engine.stores.memory import MemoryStore

    recorder = RecordingStore(MemoryStore(SPACE[0]))
    RECORDERS.append(recorder)
    return recorder
