"""The one process helper every emulator provider starts its server with."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from dw_testing.emulators.process import free_ports, serve

IDLE_CHILD = [sys.executable, "-c", "import sys; sys.stdin.read()"]


def _launcher(started: list[subprocess.Popen[Any]]) -> Any:
    def launch(attempt: int) -> tuple[subprocess.Popen[Any], str]:
        process = subprocess.Popen(IDLE_CHILD, stdin=subprocess.PIPE)
        started.append(process)
        return process, f"attempt-{attempt}"
    return launch


def test_a_start_that_never_gets_ready_is_retried_and_every_process_stopped() -> None:
    started: list[subprocess.Popen[Any]] = []
    with serve(_launcher(started), lambda url: url == "attempt-1", attempts=3, timeout=0.5,
               poll=0.01, grace=5, failure=lambda: "never") as url:
        assert url == "attempt-1"
        assert started[0].poll() is not None, "the attempt that never got ready still runs"
        assert started[1].poll() is None
    assert len(started) == 2
    assert all(process.poll() is not None for process in started)


def test_after_the_last_attempt_the_failure_explains_itself() -> None:
    started: list[subprocess.Popen[Any]] = []
    with pytest.raises(RuntimeError, match="run it by hand"), \
            serve(_launcher(started), lambda url: False, attempts=2, timeout=0.2, poll=0.01,
                  grace=5, failure=lambda: "the server did not start; run it by hand"):
        pass
    assert len(started) == 2
    assert all(process.poll() is not None for process in started)


def test_free_ports_are_distinct_loopback_ports() -> None:
    ports = free_ports(3)
    assert len(set(ports)) == 3 and all(0 < port < 65536 for port in ports)
