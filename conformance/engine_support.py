"""Shared fixtures and builders for the engine-level suites (``-m dw_engine``).

Import the fixtures into a test module (the suite has no conftest); they are registered
under the names ``engine_variant`` and ``make_engine``::

    from conformance.engine_support import engine_variant_fixture, make_engine_fixture

``make_engine(store)`` builds the engine under test on any handle of the store under
test: the reference engine, or the broken variant that ``DW_ENGINE_VARIANT`` names
(:mod:`dw_testing.engine_variants`). Its clock is the test's ``dw_clock``, and its
sleeper advances that clock, so a ``sleep:`` step or a wait for a dead claim holder
costs no wall time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dw_testing.clock import FakeClock
from dw_testing.engine_variants import EngineVariant, selected_variant
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.records.decoding import Found
from reference_engine.records.outcome import decode_outcome
from reference_engine.workflows.loader import parse_workflow
from reference_engine.workflows.model import Workflow

SCHEMA = {"type": "object", "required": ["approved"],
          "properties": {"approved": {"type": "boolean"}}}
YES = '{"approved": true}'
NO = '{"approved": false}'
LEASE_TTL_MS = 30_000
OUTCOMES = f"{keys.outcomes_root()}/*"
WAITS = f"{keys.waits_root()}/*"
REVISIONS = f"{keys.runs_root()}/*/rev/*"

MakeEngine = Callable[..., Engine]


@pytest.fixture(name="engine_variant")
def engine_variant_fixture() -> Iterator[EngineVariant | None]:
    """The engine variant selected by ``DW_ENGINE_VARIANT``, installed for this test."""
    variant = selected_variant()
    if variant is None:
        yield None
        return
    with variant.installed():
        yield variant


@pytest.fixture(name="make_engine")
def make_engine_fixture(dw_clock: FakeClock, engine_variant: EngineVariant | None) -> MakeEngine:
    """``make_engine(store, **kwargs)``: the engine under test on ``store``."""
    return engine_factory(dw_clock, engine_variant)


def engine_factory(clock: FakeClock, variant: EngineVariant | None) -> MakeEngine:
    def make(store: Any, **kwargs: Any) -> Engine:
        kwargs.setdefault("sleeper", clock.advance)
        kwargs.setdefault("lease_ttl_ms", LEASE_TTL_MS)
        if variant is not None:
            return variant.engine(store, clock, **kwargs)
        return Engine(store, clock, **kwargs)

    return make


def engine_builder(variant: EngineVariant | None) -> Callable[..., Engine]:
    """``build(store, clock, **kwargs)``: the engine under test, for the state machines."""
    if variant is not None:
        return variant.engine
    return Engine


def approval_workflow(*, timeout: int = 3600, sibling: dict[str, Any] | None = None,
                      name: str = "approval") -> Workflow:
    """build -> (approve: a wait | checks: a sibling step) -> ship / rollback (SPEC §4.1)."""
    wait_step = {"name": "approval", "wait_for_signal": {"timeout": timeout, "schema": SCHEMA}}
    return parse_workflow({
        "name": name,
        "jobs": {
            "build": {"steps": [{"name": "compile", "log": "compiling"}]},
            "approve": {"depends_on": ["build"], "steps": [wait_step]},
            "checks": {"depends_on": ["build"],
                       "steps": [sibling or {"name": "soak", "log": "soaking"}]},
            "ship": {"depends_on": ["approve", "checks"],
                     "when": "steps.approval.outputs.payload.approved",
                     "steps": [{"name": "deploy", "log": "deploying"}]},
            "rollback": {"depends_on": ["approve"], "when": "failed('approve')",
                         "steps": [{"name": "notify", "log": "no approval"}]},
        },
    })


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
