"""Two hosts, one bucket (docs/how-to/multi-host.md): ``dw`` processes in separate working
directories,
joined only by an ``s3://`` or ``gs://`` URI on a loopback emulator.

Every host action is a ``python -m reference_engine`` process; the test checks what the
bucket holds with its own reads. Orderings across processes are whole CLI calls in sequence
(docs/reference/kit.md); time is a shared FakeClock read through ``DW_CLOCK``, so nothing sleeps.
"""

from __future__ import annotations

import json

import pytest
from hosts import REFUSED, Bucket, Host

from dw_testing.kit.clock import FakeClock

APPROVED = json.dumps({"approved": True})
REJECTED = json.dumps({"approved": False})
# FakeClock's epoch is 2026-01-01T00:00:00Z and the workflow's wait lasts an hour.
DEADLINE_MINUTE = "2026-01-01T01:00"


def _delete_leaves_nothing(host: Host, shared: Bucket, run_id: str) -> None:
    host.dw("delete", run_id)
    assert shared.keys() == [], f"records left under the prefix after delete: {shared.keys()}"


def test_a_run_suspended_on_one_host_resumes_after_a_signal_from_another(
    host_a: Host, host_b: Host, shared: Bucket, clock: FakeClock,
) -> None:
    wait_id = host_a.start_suspended_run("two-hosts")

    [listed] = host_b.dw("waits")["waits"]
    assert (listed["waitId"], listed["runId"]) == (wait_id, "two-hosts")
    assert listed["deadline"].startswith(DEADLINE_MINUTE), listed

    clock.advance(30 * 60)  # half the wait's hour: still open for both hosts
    signalled = host_b.dw("signal", wait_id, "--payload", APPROVED, "--submitted-by", "host-b")
    assert signalled["runId"] == "two-hosts" and signalled["awaitingResume"] is True

    finished = host_a.dw("resume", "two-hosts")
    assert finished["status"] == "succeeded", finished
    step = shared.step("two-hosts")
    assert step["status"] == "succeeded"
    assert step["output"]["payload"] == {"approved": True}
    assert step["output"]["signal"]["id"] == signalled["receipt"]["id"]
    assert step["output"]["signal"]["submittedBy"] == "host-b"

    _delete_leaves_nothing(host_b, shared, "two-hosts")


def test_a_signal_that_won_before_a_cancel_keeps_its_receipt(
    host_a: Host, host_b: Host, shared: Bucket,
) -> None:
    wait_id = host_a.start_suspended_run("signal-first")
    won = host_b.dw("signal", wait_id, "--payload", APPROVED)

    assert host_a.dw("cancel", "signal-first")["status"] == "cancelled"
    # The cancel lost the wait: the step holds the signal's outcome, and no second one.
    step = shared.step("signal-first")
    assert (step["status"], step["error"]) == ("failed", "cancelled")
    assert step["output"]["payload"] == {"approved": True}
    assert step["output"]["signal"]["id"] == won["receipt"]["id"]
    late = host_b.dw("signal", wait_id, "--payload", REJECTED, exit_code=REFUSED)
    assert late["error"]["refusal"] == "closed", late

    _delete_leaves_nothing(host_b, shared, "signal-first")


def test_a_signal_after_a_cancel_is_refused_from_the_cancelled_outcome(
    host_a: Host, host_b: Host, shared: Bucket,
) -> None:
    wait_id = host_a.start_suspended_run("cancel-first")

    assert host_a.dw("cancel", "cancel-first")["status"] == "cancelled"
    lost = host_b.dw("signal", wait_id, "--payload", APPROVED, exit_code=REFUSED)
    assert lost["error"]["refusal"] == "closed", lost
    assert lost["error"]["details"] == {"waitId": wait_id}
    assert "cancelled" in lost["error"]["message"]
    step = shared.step("cancel-first")
    assert (step["status"], step["error"], step["output"]) == ("failed", "cancelled", None)

    _delete_leaves_nothing(host_b, shared, "cancel-first")


@pytest.mark.slow
@pytest.mark.parametrize("first", ["signal", "timeout"])
def test_a_cancel_after_the_deadline_keeps_the_outcome_that_settled_first(
    host_a: Host, host_b: Host, shared: Bucket, clock: FakeClock, first: str,
) -> None:
    """Either a signal settles inside the hour, or the hour passes; the cancel comes last."""
    run_id = f"late-{first}"
    wait_id = host_a.start_suspended_run(run_id)
    if first == "signal":
        host_b.dw("signal", wait_id, "--payload", APPROVED)
    clock.advance(60 * 60 + 1)
    if first == "timeout":
        expired = host_b.dw("signal", wait_id, "--payload", APPROVED, exit_code=REFUSED)
        assert expired["error"]["refusal"] == "expired", expired

    host_a.dw("cancel", run_id)
    step = shared.step(run_id)
    if first == "signal":
        assert (step["error"], step["output"]["payload"]) == ("cancelled", {"approved": True})
    else:
        # the error of a timed-out wait in a cancelled run is the engine's choice; the engine
        # reports the run's end (cancelled). Either way no answer was applied.
        assert step["error"] in ("wait_timeout", "cancelled") and step["output"] is None, step

    _delete_leaves_nothing(host_b, shared, run_id)
