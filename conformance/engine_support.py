"""Builders and checks shared by the engine-level suites (``-m dw_engine``).

The engine fixtures themselves (``dw_make_engine``, ``dw_engine_variant``) come from the
plugin: :mod:`dw_testing.plugin.engine_fixtures`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from dw_testing.kit.child_env import child_environment
from dw_testing.kit.gates import Gate, GatedStore, GateTimeout, Spawned
from dw_testing.kit.workflows import APPROVAL_SCHEMA as SCHEMA
from dw_testing.kit.workflows import approval_workflow
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.records.decoding import Found
from reference_engine.records.outcome import decode_outcome

__all__ = ["SCHEMA", "approval_workflow"]

YES = '{"approved": true}'
NO = '{"approved": false}'
OUTCOMES = f"{keys.outcomes_root()}*"
WAITS = f"{keys.waits_root()}*"
REVISIONS = f"{keys.runs_root()}*/rev/*"
REACH_POLL_SECONDS = 0.05
CHILD_EXIT_SECONDS = 30.0
FAST_ROUND_TRIP = 0.0002  # seconds; local stores answer in tens of microseconds

T = TypeVar("T")


def reach(gate: Gate, spawned: Spawned[Any], *, timeout: float = 30.0) -> None:
    """Wait until ``spawned`` parks at ``gate``; fail at once if it ends without parking.

    On a broken store the gated call may be refused before it ever reaches the gate;
    waiting out the gate's whole timeout would only make the failure slow.
    """
    waited = 0.0
    while not gate.reached:
        if spawned.done:
            spawned.result()  # re-raises what the call raised
            raise AssertionError(f"{spawned.name} finished without reaching {gate!r}")
        try:
            gate.wait_reached(timeout=REACH_POLL_SECONDS)
        except GateTimeout:
            waited += REACH_POLL_SECONDS
            if waited >= timeout:
                raise


def parked_at_create(handle: Any, point: str, key: str, call: Callable[[GatedStore], T], *,
                     name: str) -> tuple[Gate, Spawned[T]]:
    """Start ``call`` on a gated ``handle`` in a thread; return once it is parked at ``point``
    (``before`` or ``after_commit``) of its first ``put_if_absent`` under ``key``. The
    call goes on when the returned gate is released."""
    gated = GatedStore(handle)
    gate = gated.pause("put_if_absent", point=point, key=key)
    started = gated.spawn(lambda: call(gated), name=name)
    reach(gate, started)
    return gate, started


def race_signals_in_processes(target: Any, wait_ids: list[str], *, racers: int, now: float,
                              payload: str) -> list[list[list[str]]]:
    """Per racer process, per wait: ``["won", receipt]`` or ``["refused", kind]``.

    Each racer (``python -m conformance.engine_child``) opens its own handle on
    ``target`` (uri and prefix). Every wait id is sent to all racers at once, and the next
    only after all of them answered, so the racers meet at every wait.
    """
    env = child_environment()
    children = [subprocess.Popen([sys.executable, "-m", "conformance.engine_child"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env)
                for _ in range(racers)]
    try:
        for index, child in enumerate(children):
            header = {"uri": target.uri, "prefix": target.prefix, "now": now,
                      "payload": payload, "submitter": f"process-{index}"}
            _send(child, json.dumps(header))
        for child in children:
            _expect(child, "ready")
        answers: list[list[list[str]]] = [[] for _ in children]
        for wait_id in wait_ids:
            for child in children:
                _send(child, wait_id)
            for index, child in enumerate(children):
                answers[index].append(json.loads(_expect(child, None)))
        return answers
    finally:
        for child in children:
            if child.stdin is not None:
                child.stdin.close()
        for child in children:
            try:
                child.wait(timeout=CHILD_EXIT_SECONDS)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def _send(child: subprocess.Popen[str], line: str) -> None:
    assert child.stdin is not None
    child.stdin.write(line + "\n")
    child.stdin.flush()


def _expect(child: subprocess.Popen[str], wanted: str | None) -> str:
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    if not line or (wanted is not None and line != wanted):
        child.kill()
        _, err = child.communicate()
        raise AssertionError(f"a racer process answered {line!r}; its stderr:\n{err[-2000:]}")
    return line


def round_trip_seconds(handle: Any, probes: int = 10) -> float:
    """The mean time of a ``get`` of a missing key: how far away the store is."""
    started = time.perf_counter()
    for _ in range(probes):
        handle.get("probe/round-trip")
    return (time.perf_counter() - started) / probes


def is_slow(handle: Any) -> bool:
    """Whether the store is remote or emulated enough that generated work is scaled down."""
    return round_trip_seconds(handle) > FAST_ROUND_TRIP


def outcome_kind(store: Any, wait_id: str) -> str | None:
    """``accepted``, ``timed_out``, ``cancelled``, or ``None`` when no readable outcome."""
    decoded = decode_outcome(store.get(keys.outcome_key(wait_id)), wait_id)
    return decoded.record.kind if isinstance(decoded, Found) else None


def wait_records(store: Any) -> list[str]:
    """Every registration and outcome key still stored."""
    return [*store.list(keys.waits_root()), *store.list(keys.outcomes_root())]


def answers_applied(shown: dict[str, Any], wait_id: str | None = None) -> list[dict[str, Any]]:
    """The ``answer_applied`` journal events of a ``show()`` result (for one wait)."""
    return [e for e in shown["journal"] if e.get("type") == "answer_applied"
            and (wait_id is None or e.get("waitId") == wait_id)]


def receipt_in_run(shown: dict[str, Any], step: str = "approval") -> str | None:
    output = shown["steps"].get(step, {}).get("output") or {}
    signal = output.get("signal") if isinstance(output, dict) else None
    return signal.get("id") if isinstance(signal, dict) else None


def assert_applied_once(engine: Engine, store: Any, run_id: str, receipt: str) -> None:
    """The run succeeded with exactly this receipt applied, once, and left no wait records."""
    shown = engine.show(run_id)
    assert shown["status"] == "succeeded", f"run {run_id} ended {shown['status']}"
    assert receipt_in_run(shown) == receipt, (
        "the run applied a different signal than the one its sender was told won")
    applied = answers_applied(shown)
    assert len(applied) == 1, f"answer_applied journaled {len(applied)} times, not once"
    assert shown["steps"]["deploy"]["status"] == "succeeded"
    assert wait_records(store) == [], "the ended run left wait records behind"
