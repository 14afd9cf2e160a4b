"""Two hosts, one bucket (SPEC §1, §7): ``dw`` processes in separate working directories,
joined only by an ``s3://`` or ``gs://`` URI on a loopback emulator.

Orderings across processes are whole CLI calls in sequence (SPEC §6.3); time is a shared
FakeClock read through ``DW_CLOCK``, so deadlines are exact and nothing sleeps.
"""

from __future__ import annotations

import json

import pytest
from hosts import REFUSED, Host

from dw_testing.clock import FakeClock

APPROVED = json.dumps({"approved": True})
REJECTED = json.dumps({"approved": False})
# FakeClock's epoch is 2026-01-01T00:00:00Z and the workflow's wait lasts an hour.
DEADLINE = "2026-01-01T01:00:00Z"


def _step(shown: dict[str, object]) -> dict[str, object]:
    steps = shown["steps"]
    assert isinstance(steps, dict)
    step = steps["approval"]
    assert isinstance(step, dict)
    return step


def _assert_bucket_left_empty(host: Host) -> None:
    listed = host.dw("store", "ls")
    assert listed["keys"] == [], f"records left in the bucket after delete: {listed['keys']}"


def test_a_run_suspended_on_one_host_resumes_after_a_signal_from_another(
    host_a: Host, host_b: Host, clock: FakeClock,
) -> None:
    wait_id = host_a.start_suspended_run("two-hosts")

    [listed] = host_b.dw("waits")["waits"]
    assert (listed["waitId"], listed["runId"]) == (wait_id, "two-hosts")
    assert listed["deadline"].startswith(DEADLINE[:16]), listed

    clock.advance(30 * 60)  # half the wait's hour: still open on both hosts
    signalled = host_b.dw("signal", wait_id, "--payload", APPROVED, "--submitted-by", "host-b")
    assert signalled["runId"] == "two-hosts" and signalled["awaitingResume"] is True

    finished = host_a.dw("resume", "two-hosts")
    assert finished["status"] == "succeeded", finished
    step = _step(host_b.dw("show", "two-hosts"))
    assert step["status"] == "succeeded"
    assert step["output"] == {
        "type": "wait_for_signal",
        "payload": {"approved": True},
        "signal": {**step["output"]["signal"],  # type: ignore[index]
                   "id": signalled["receipt"]["id"], "submittedBy": "host-b"},
    }

    host_b.dw("delete", "two-hosts")
    _assert_bucket_left_empty(host_a)


def test_a_signal_that_won_before_a_cancel_keeps_its_receipt(
    host_a: Host, host_b: Host,
) -> None:
    wait_id = host_a.start_suspended_run("signal-first")
    won = host_b.dw("signal", wait_id, "--payload", APPROVED, "--submitted-by", "host-b")

    cancelled = host_a.dw("cancel", "signal-first")
    assert cancelled["status"] == "cancelled"
    # The cancel lost the wait: the run's step holds the signal's outcome, not a second one.
    step = _step(host_b.dw("show", "signal-first"))
    assert (step["status"], step["error"]) == ("failed", "cancelled")
    output = step["output"]
    assert isinstance(output, dict)
    assert output["payload"] == {"approved": True}
    assert output["signal"]["id"] == won["receipt"]["id"]

    late = host_b.dw("signal", wait_id, "--payload", REJECTED, exit_code=REFUSED)
    assert late["error"]["refusal"] == "closed", late
    assert host_a.dw("waits")["waits"] == []

    host_b.dw("delete", "signal-first")
    _assert_bucket_left_empty(host_a)


def test_a_signal_after_a_cancel_is_refused_from_the_cancelled_outcome(
    host_a: Host, host_b: Host,
) -> None:
    wait_id = host_a.start_suspended_run("cancel-first")

    cancelled = host_a.dw("cancel", "cancel-first")
    assert cancelled["status"] == "cancelled"
    lost = host_b.dw("signal", wait_id, "--payload", APPROVED, exit_code=REFUSED)
    assert lost["error"]["refusal"] == "closed", lost
    assert lost["error"]["details"] == {"waitId": wait_id}
    assert "cancelled" in lost["error"]["message"]

    step = _step(host_b.dw("show", "cancel-first"))
    assert (step["status"], step["error"], step["output"]) == ("failed", "cancelled", None)
    again = host_b.dw("resume", "cancel-first", exit_code=REFUSED)
    assert again["error"]["refusal"] == "not_suspended", again

    host_a.dw("delete", "cancel-first")
    _assert_bucket_left_empty(host_b)


@pytest.mark.parametrize("first", ["signal", "timeout"])
def test_a_cancel_after_the_deadline_keeps_the_outcome_that_settled_first(
    host_a: Host, host_b: Host, clock: FakeClock, first: str,
) -> None:
    """Either the signal settles inside the hour, or the hour passes; the cancel comes last."""
    wait_id = host_a.start_suspended_run(f"late-{first}")
    if first == "signal":
        host_b.dw("signal", wait_id, "--payload", APPROVED)
    clock.advance(60 * 60 + 1)
    if first == "timeout":
        expired = host_b.dw("signal", wait_id, "--payload", APPROVED, exit_code=REFUSED)
        assert expired["error"]["refusal"] == "expired", expired

    host_a.dw("cancel", f"late-{first}")
    step = _step(host_b.dw("show", f"late-{first}"))
    assert step["status"] == "failed"
    if first == "signal":
        assert step["error"] == "cancelled" and step["output"]["payload"] == {  # type: ignore[index]
            "approved": True}
    else:
        assert step["error"] in ("wait_timeout", "cancelled") and step["output"] is None

    host_b.dw("delete", f"late-{first}")
    _assert_bucket_left_empty(host_a)
