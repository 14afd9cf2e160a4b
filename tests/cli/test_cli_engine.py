"""Engine commands end to end, in-process: exit codes, --json shapes, refusals, next commands."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import PLAIN_FLOW, WAIT_FLOW, Invoke, one_line_error, refusal_of

from dw_testing.kit.clock import FakeClock

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
APPROVE = '{"approved": true}'


@pytest.fixture
def clock(tmp_path: Path) -> FakeClock:
    return FakeClock(mirror_to=tmp_path / "clock")


@pytest.fixture
def dw(invoke: Invoke, mem_uri: str, clock: FakeClock) -> Invoke:
    """``dw(args...)`` on this test's store and fake clock."""
    def run(*args: str, input: str | None = None) -> Any:
        return invoke([*args, "--store", mem_uri], input=input, env=clock.env)
    return run


@pytest.fixture
def flow(tmp_path: Path) -> Path:
    path = tmp_path / "gate.yaml"
    path.write_text(WAIT_FLOW)
    return path


def suspended_run(dw: Invoke, flow: Path) -> tuple[str, str]:
    result = dw("run", str(flow), "--json")
    assert result.exit_code == 3, result.output
    view = json.loads(result.stdout)
    return view["runId"], view["waits"][0]["waitId"]


def test_run_that_suspends_exits_3_with_the_run_shape(dw: Invoke, flow: Path) -> None:
    result = dw("run", str(flow), "--json")
    assert result.exit_code == 3
    view = json.loads(result.stdout)
    assert {"runId", "workflow", "status", "waits"} <= set(view)
    assert (view["workflow"], view["status"]) == ("gate", "suspended")
    [wait] = view["waits"]
    assert {"waitId", "job", "step", "deadline"} <= set(wait)
    assert (wait["job"], wait["step"]) == ("approve", "approval")
    assert ISO.match(wait["deadline"])


def test_suspended_run_prints_the_exact_next_commands(dw: Invoke, flow: Path) -> None:
    result = dw("run", str(flow))
    assert result.exit_code == 3
    wait_id = re.search(r"dw signal (\S+) --payload", result.stdout)
    assert wait_id is not None
    assert f"dw signal {wait_id.group(1)} --payload '{APPROVE}'" in result.stdout
    assert re.search(r"dw resume \S+", result.stdout)


def test_run_without_waits_exits_0(dw: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text(PLAIN_FLOW)
    result = dw("run", str(path), "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["status"] == "succeeded"


def test_signal_then_resume_finishes_the_run(dw: Invoke, flow: Path) -> None:
    run_id, wait_id = suspended_run(dw, flow)
    delivered = dw("signal", wait_id, "--payload", APPROVE, "--submitted-by", "ann", "--json")
    assert delivered.exit_code == 0, delivered.output
    body = json.loads(delivered.stdout)
    assert {"waitId", "runId", "receipt", "awaitingResume", "resumeCommand"} <= set(body)
    assert (body["waitId"], body["runId"]) == (wait_id, run_id)
    assert body["receipt"]["submittedBy"] == "ann"
    assert {"id", "receivedAt", "submittedBy"} <= set(body["receipt"])
    resumed = dw("resume", run_id, "--json")
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout)["status"] == "succeeded"
    record = json.loads(dw("show", run_id, "--json").stdout)
    assert {"runId", "workflow", "status", "steps", "journal"} <= set(record)
    assert record["steps"]["approval"]["status"] == "succeeded"
    assert record["steps"]["approval"]["output"]["payload"] == {"approved": True}
    assert [e["type"] for e in record["journal"]].count("answer_applied") == 1


def test_a_second_signal_is_refused_as_json_on_stdout(dw: Invoke, flow: Path) -> None:
    _, wait_id = suspended_run(dw, flow)
    assert dw("signal", wait_id, "--payload", APPROVE).exit_code == 0
    again = dw("signal", wait_id, "--payload", APPROVE, "--json")
    assert refusal_of(again) == "already_settled"


def test_resume_before_any_signal_is_open_wait(dw: Invoke, flow: Path) -> None:
    run_id, _ = suspended_run(dw, flow)
    result = dw("resume", run_id, "--json")
    assert refusal_of(result) == "open_wait"


def test_invalid_payload_names_the_path_never_the_value(dw: Invoke, flow: Path) -> None:
    _, wait_id = suspended_run(dw, flow)
    result = dw("signal", wait_id, "--payload", '{"approved": "zebra-value"}')
    assert result.exit_code == 1
    assert "zebra-value" not in result.output
    assert "invalid_payload" in result.stderr and "approved" in result.stderr


BAD_PAYLOADS = ['{"approved": NaN}', '{"approved": true, "approved": false}', "{not json",
                '{"__proto__": {}, "approved": true}', "[" * 40 + "]" * 40,
                '{"approved": true, "x": "' + "a" * 17000 + '"}']


@pytest.mark.parametrize("text", BAD_PAYLOADS)
def test_bad_payloads_are_refused_and_the_wait_stays_open(dw: Invoke, flow: Path,
                                                         text: str) -> None:
    _, wait_id = suspended_run(dw, flow)
    result = dw("signal", wait_id, "--payload", text, "--json")
    assert refusal_of(result) == "invalid_payload"
    assert dw("signal", wait_id, "--payload", APPROVE).exit_code == 0


def test_secrets_are_refused_without_echo_unless_bypassed(dw: Invoke, flow: Path) -> None:
    _, wait_id = suspended_run(dw, flow)
    secret = '{"approved": true, "note": "AKIAIOSFODNN7EXAMPLE"}'
    refused = dw("signal", wait_id, "--payload", secret, "--json")
    assert refusal_of(refused) == "secret_detected"
    assert "AKIAIOSFODNN7EXAMPLE" not in refused.output
    bypassed = dw("signal", wait_id, "--payload", secret, "--no-secret-detection")
    assert bypassed.exit_code == 0


def test_payload_can_come_from_stdin(dw: Invoke, flow: Path) -> None:
    _, wait_id = suspended_run(dw, flow)
    assert dw("signal", wait_id, "--payload", "-", input=APPROVE).exit_code == 0


def test_answer_names_the_run_and_refuses_the_wrong_one(dw: Invoke, flow: Path) -> None:
    run_a, wait_a = suspended_run(dw, flow)
    run_b, _ = suspended_run(dw, flow)
    wrong = dw("answer", run_b, wait_a, APPROVE, "--json")
    assert refusal_of(wrong) in {"wrong_run", "not_waiting_here"}
    right = dw("answer", run_a, wait_a, APPROVE, "--json")
    assert right.exit_code == 0
    assert json.loads(right.stdout)["runId"] == run_a
    missing = dw("answer", "00000000-0000-0000-0000-000000000000", wait_a, APPROVE, "--json")
    assert refusal_of(missing) == "run_not_found"


def test_an_expired_wait_says_so_and_resume_takes_the_failure_branch(
        dw: Invoke, flow: Path, clock: FakeClock) -> None:
    run_id, wait_id = suspended_run(dw, flow)
    clock.advance(3601)
    result = dw("signal", wait_id, "--payload", APPROVE, "--json")
    assert refusal_of(result) == "expired"
    assert json.loads(dw("resume", run_id, "--json").stdout)["status"] == "failed"


def test_waits_lists_open_waits_with_their_next_command(dw: Invoke, flow: Path) -> None:
    run_id, wait_id = suspended_run(dw, flow)
    result = dw("waits", "--json")
    assert result.exit_code == 0
    [wait] = json.loads(result.stdout)["waits"]
    assert {"waitId", "runId", "workflow", "job", "step", "deadline", "expired",
            "nextCommand"} <= set(wait)
    assert (wait["waitId"], wait["runId"], wait["expired"]) == (wait_id, run_id, False)
    assert wait_id in dw("waits").stdout


def test_waits_shows_each_run_id_whole(dw: Invoke, flow: Path) -> None:
    for run_id in ("release-42", "a-much-longer-run-id-than-eight-characters"):
        assert dw("run", str(flow), "--run-id", run_id).exit_code == 3
    table = dw("waits").stdout
    for run_id in ("release-42", "a-much-longer-run-id-than-eight-characters"):
        assert f" {run_id} " in table, table


def test_runs_lists_every_run(dw: Invoke, flow: Path) -> None:
    run_id, _ = suspended_run(dw, flow)
    result = dw("runs", "--json")
    assert result.exit_code == 0
    [run] = json.loads(result.stdout)["runs"]
    assert (run["runId"], run["status"]) == (run_id, "suspended")
    assert run_id in dw("runs").stdout


def test_runs_filters_by_status_and_workflow(dw: Invoke, flow: Path) -> None:
    waiting, _ = suspended_run(dw, flow)
    ended, _ = suspended_run(dw, flow)
    assert dw("cancel", ended).exit_code == 0

    def listed(*args: str) -> list[str]:
        result = dw("runs", *args, "--json")
        assert result.exit_code == 0, result.output
        return [run["runId"] for run in json.loads(result.stdout)["runs"]]

    assert listed("--status", "suspended") == [waiting]
    assert listed("--status", "cancelled") == [ended]
    assert sorted(listed("--status", "cancelled", "--status", "suspended")) == sorted(
        [waiting, ended])
    assert sorted(listed("--workflow", "gate")) == sorted([waiting, ended])
    assert listed("--workflow", "gate", "--status", "succeeded") == []
    assert listed("--workflow", "other") == []
    refused = dw("runs", "--status", "sleeping")
    assert refused.exit_code == 2 and "sleeping" in refused.output


def test_a_reused_run_id_is_refused(dw: Invoke, flow: Path) -> None:
    assert dw("run", str(flow), "--run-id", "fixed-id").exit_code == 3
    again = dw("run", str(flow), "--run-id", "fixed-id", "--json")
    assert refusal_of(again) == "run_exists"


def test_cancel_then_delete(dw: Invoke, flow: Path) -> None:
    run_id, wait_id = suspended_run(dw, flow)
    cancelled = dw("cancel", run_id, "--json")
    assert cancelled.exit_code == 0
    assert json.loads(cancelled.stdout)["status"] == "cancelled"
    late = dw("signal", wait_id, "--payload", APPROVE, "--json")
    assert refusal_of(late) == "closed"
    assert dw("delete", run_id).exit_code == 0
    gone = dw("show", run_id, "--json")
    assert refusal_of(gone) == "run_not_found"


def test_a_late_signal_after_cancel_says_whether_a_signal_came_first(
        dw: Invoke, flow: Path) -> None:
    """Cancelled before any signal: "closed before a signal arrived"; after one: names it."""
    messages = {}
    for signalled_first in (False, True):
        run_id, wait_id = suspended_run(dw, flow)
        receipt = None
        if signalled_first:
            first = dw("signal", wait_id, "--payload", APPROVE, "--json")
            receipt = json.loads(first.stdout)["receipt"]["id"]
        assert dw("cancel", run_id).exit_code == 0
        late = dw("signal", wait_id, "--payload", APPROVE, "--json")
        assert refusal_of(late) == "closed"
        error = json.loads(late.stdout)["error"]
        messages[signalled_first] = error["message"]
        assert error["details"].get("receiptId") == receipt
    assert "before a signal arrived" in messages[False]
    assert "before a signal arrived" not in messages[True], messages[True]
    assert "already took signal" in messages[True]


def test_unknown_wait_id_is_refused(dw: Invoke) -> None:
    result = dw("signal", "not-a-wait", "--payload", APPROVE, "--json")
    assert refusal_of(result) == "unknown"


def test_serve_once_resumes_runs_whose_waits_are_settled(dw: Invoke, flow: Path) -> None:
    run_id, wait_id = suspended_run(dw, flow)
    idle = dw("serve", "--once", "--json")
    assert (idle.exit_code, json.loads(idle.stdout)) == (0, {"resumed": []})
    assert dw("signal", wait_id, "--payload", APPROVE).exit_code == 0
    busy = dw("serve", "--once", "--json")
    assert json.loads(busy.stdout) == {"resumed": [run_id]}
    assert json.loads(dw("show", run_id, "--json").stdout)["status"] == "succeeded"


def test_sweep_reports_counts(dw: Invoke) -> None:
    result = dw("sweep", "--json")
    assert result.exit_code == 0
    assert all(isinstance(v, int) for v in json.loads(result.stdout).values())


def test_a_store_without_create_refuses_waiting_workflows(invoke: Invoke, flow: Path) -> None:
    result = invoke(["run", str(flow), "--store", "cli_helpers:no_create_store", "--json"])
    assert refusal_of(result) == "unsupported"


BAD_FLOWS = [
    "jobs: [",
    "name: x\njobs:\n  a:\n    steps:\n      - {name: s, sleep: 1}\n      - {name: s, log: hi}\n",
    "name: x\njobs:\n  a: {depends_on: [b], steps: [{name: s, log: x}]}\n"
    "  b: {depends_on: [a], steps: [{name: t, log: y}]}\n",
    "\x00\xff",
]


@pytest.mark.parametrize("text", BAD_FLOWS)
def test_bad_workflow_files_are_one_line(dw: Invoke, tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    result = dw("run", str(path))
    assert "invalid workflow" in one_line_error(result)


def test_an_unreadable_workflow_path_is_one_line(dw: Invoke, tmp_path: Path) -> None:
    folder = tmp_path / "dir.yaml"
    folder.mkdir()
    assert dw("run", str(folder)).exit_code == 2


TWO_WAITS = WAIT_FLOW.replace("""      - name: done
        log: "approved"
""", """      - name: second
        wait_for_signal: {timeout: 60, schema: {type: object, required: [who],
                                                 properties: {who: {enum: [ann, bob]}}}}
""")


def test_resume_that_reaches_another_wait_exits_3_again(dw: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text(TWO_WAITS)
    run_id, first = suspended_run(dw, path)
    assert dw("signal", first, "--payload", APPROVE).exit_code == 0
    again = dw("resume", run_id)
    assert again.exit_code == 3
    assert """--payload '{"who": "ann"}'""" in again.stdout
    view = json.loads(dw("show", run_id, "--json").stdout)
    assert view["status"] == "suspended"
    assert view["steps"]["second"]["status"] == "waiting_signal"


def test_human_output_carries_the_store_the_user_typed(dw: Invoke, flow: Path,
                                                       mem_uri: str) -> None:
    run_id, _ = suspended_run(dw, flow)
    for args in (("waits",), ("show", run_id)):
        text = dw(*args).stdout
        assert f"""--payload '{APPROVE}' --store {mem_uri}""" in text, args
    assert run_id in dw("show", run_id).stdout


def test_human_output_leaves_out_the_default_store(invoke: Invoke, flow: Path,
                                                   tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke(["run", str(flow)])
    assert result.exit_code == 3
    assert "--store" not in result.stdout
    assert (tmp_path / ".dw").is_dir()
