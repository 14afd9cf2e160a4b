"""A "host" for the two-host tests: ``python -m reference_engine`` in its own directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.flows import GATE_FLOW

from dw_testing.kit.clock import FakeClock
from reference_engine.stores.contract import close_store
from reference_engine.stores.registry import open_store

SUSPENDED = 3
REFUSED = 1
# The variables a developer's shell might carry into a dw process; each host sets its own.
_HOST_LOCAL = ("DW_STORE", "DW_CLOCK", "DW_DEBUG", "DW_CLAIM_LOOKS_DIR")

APPROVAL_FLOW = GATE_FLOW


class Bucket:
    """The test's own eyes on the shared bucket: reads in this process, no host involved."""

    def __init__(self, store_uri: str, clock: FakeClock) -> None:
        self.store_uri = store_uri
        self.clock = clock

    def run(self, run_id: str) -> dict[str, Any]:
        from reference_engine.engine import Engine

        store = open_store(self.store_uri)
        try:
            return Engine(store, self.clock).show(run_id)
        finally:
            close_store(store)

    def step(self, run_id: str) -> dict[str, Any]:
        step: dict[str, Any] = self.run(run_id)["steps"]["approval"]
        return step

    def keys(self) -> list[str]:
        store = open_store(self.store_uri)
        try:
            return store.list("")
        finally:
            close_store(store)


@dataclass(frozen=True)
class Host:
    """One machine: a working directory, host-local claim looks, and the shared store URI."""

    name: str
    cwd: Path
    store_uri: str
    clock: FakeClock

    @classmethod
    def at(cls, cwd: Path, store_uri: str, clock: FakeClock) -> Host:
        cwd.mkdir(parents=True)
        return cls(cwd.name, cwd, store_uri, clock)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _HOST_LOCAL}
        env.update(self.clock.env)
        env["DW_CLAIM_LOOKS_DIR"] = str(self.cwd / "claim-looks")
        return env

    def dw(self, *args: str, exit_code: int = 0) -> Any:
        """Run ``dw ARGS --store URI --json`` here; check the exit code, return the JSON."""
        command = [sys.executable, "-m", "reference_engine", *args,
                   "--store", self.store_uri, "--json"]
        done = subprocess.run(command, cwd=self.cwd, env=self.env(), capture_output=True,
                              text=True, timeout=120, check=False)
        shown = f"{self.name}: dw {' '.join(args)}"
        assert "Traceback" not in done.stderr, f"{shown} crashed:\n{done.stderr}"
        assert done.returncode == exit_code, (
            f"{shown} exited {done.returncode}, expected {exit_code}:\n"
            f"{done.stdout}\n{done.stderr}")
        return json.loads(done.stdout)

    def write_workflow(self) -> str:
        """The workflow file, on this host only (the run keeps its own snapshot)."""
        (self.cwd / "approval.yaml").write_text(APPROVAL_FLOW, encoding="utf-8")
        return "approval.yaml"

    def start_suspended_run(self, run_id: str) -> str:
        """``dw run`` here until the run suspends; returns its wait id."""
        started = self.dw("run", self.write_workflow(), "--run-id", run_id,
                          exit_code=SUSPENDED)
        assert started["status"] == "suspended", started
        [wait] = started["waits"]
        return str(wait["waitId"])
