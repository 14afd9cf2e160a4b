"""The engine facade: one object per store and clock, one method per ``dw`` command."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reference_engine.clock import Clock
from reference_engine.records.views import Delivery, OpenWait, ReceiptView, RunView, WaitView
from reference_engine.stores.contract import ControlPlaneStore
from reference_engine.workflows.model import Workflow

__all__ = ["Delivery", "Engine", "OpenWait", "ReceiptView", "RunView", "WaitView"]


class Engine:
    """Runs, resumes, signals, answers, cancels and sweeps workflow runs on one store."""

    def __init__(self, store: ControlPlaneStore, clock: Clock, *, host: str | None = None,
                 lease_ttl_ms: int = 30_000, progress: Callable[[str], None] | None = None
                 ) -> None:
        self.store = store
        self.clock = clock
        self.host = host
        self.lease_ttl_ms = lease_ttl_ms
        self.progress = progress

    def run(self, workflow: Workflow, *, run_id: str | None = None,
            inputs: Mapping[str, str] | None = None) -> RunView:
        raise NotImplementedError

    def resume(self, run_id: str) -> RunView:
        raise NotImplementedError

    def signal(self, wait_id: str, payload: str, *, submitted_by: str | None = None,
               secret_detection: bool = True) -> Delivery:
        raise NotImplementedError

    def answer(self, run_id: str, wait_id: str, payload: str, *,
               submitted_by: str | None = None, secret_detection: bool = True) -> Delivery:
        raise NotImplementedError

    def cancel(self, run_id: str) -> RunView:
        raise NotImplementedError

    def delete(self, run_id: str) -> None:
        raise NotImplementedError

    def open_waits(self) -> list[OpenWait]:
        raise NotImplementedError

    def runs(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def show(self, run_id: str) -> dict[str, Any]:
        raise NotImplementedError

    def sweep(self) -> dict[str, int]:
        raise NotImplementedError

    def serve_once(self) -> list[str]:
        raise NotImplementedError
