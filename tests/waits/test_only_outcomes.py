"""Nothing but a stored outcome completes a wait (docs/explanation/answers.md; seed 004).

Neither a python step's return value, nor a step writing an outcome-shaped record under
another key, nor a workflow input named like the wait, nor an environment variable can
stand in for a delivered answer; and ``dw resume`` takes no answer argument.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support import answer_steps
from support.answers import YES, MakeEngine, applied, gate_workflow, snapshot

from dw_testing.kit.workflows import gate_flow
from reference_engine.cli.main import dw
from reference_engine.clock import SystemClock
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.refusals import Refusal
from reference_engine.stores.memory import MemoryStore

FLOW = gate_flow(inputs='{approval: "", env: prod}',
                 after_log="approved ${{ inputs.approval }}")


def _still_waiting(engine: Engine, store: MemoryStore, run_id: str) -> str:
    """The run's wait is open: resume refuses, the scheduler passes it by; an answer works."""
    shown = engine.show(run_id)
    assert shown["status"] == "suspended"
    assert shown["steps"]["approval"]["status"] == "waiting_signal"
    wait_id: str = shown["steps"]["approval"]["wait"]["id"]
    with pytest.raises(Refusal) as refused:
        engine.resume(run_id)
    assert refused.value.kind == "open_wait"
    assert f"dw signal {wait_id}" in refused.value.message
    assert engine.ready_runs() == [] and engine.serve_once() == []
    assert [w.wait_id for w in engine.open_waits()] == [wait_id]
    assert store.get(keys.outcome_key(wait_id)) is None
    return wait_id


def _answer_then_finish(engine: Engine, run_id: str, wait_id: str) -> None:
    receipt = engine.answer(run_id, wait_id, YES).receipt.id
    assert engine.resume(run_id).status == "succeeded"
    assert [e["receiptId"] for e in applied(engine.show(run_id))] == [receipt]


def test_a_python_steps_return_value_is_no_answer(engine: Engine, store: MemoryStore) -> None:
    shaped = {"name": "shaped", "python": "support.answer_steps:answer_shaped"}
    flow = gate_workflow(before=[shaped])
    view = engine.run(flow)
    assert engine.show(view.run_id)["steps"]["shaped"]["output"]["type"] == "wait_for_signal"
    wait_id = _still_waiting(engine, store, view.run_id)
    _answer_then_finish(engine, view.run_id, wait_id)


def test_an_outcome_shaped_record_under_another_key_is_no_answer(
    engine: Engine, store: MemoryStore
) -> None:
    answer_steps.STORE[:] = [store]
    forge = {"name": "forge", "python": "support.answer_steps:forge_outcome_elsewhere"}
    flow = gate_workflow(before=[forge])
    view = engine.run(flow)
    forged = engine.show(view.run_id)["steps"]["forge"]["output"]["forged"]
    assert len([k for k in store.list("") if forged in k]) >= 5  # 4 forgeries + registration
    wait_id = _still_waiting(engine, store, view.run_id)
    assert wait_id == forged
    _answer_then_finish(engine, view.run_id, wait_id)


def test_an_input_named_like_the_wait_is_no_answer(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DW_CLOCK", raising=False)
    space = f"inputs-{uuid.uuid4().hex}"
    flow = tmp_path / "gate.yaml"
    flow.write_text(FLOW)
    runner = CliRunner()
    store = ["--store", f"memory://{space}"]
    ran = runner.invoke(dw, ["run", str(flow), "--input", f"approval={YES}", *store, "--json"])
    assert ran.exit_code == 3, ran.output  # suspended all the same
    run_id = json.loads(ran.stdout)["runId"]
    undeclared = runner.invoke(dw, ["run", str(flow), "--input", f"answer={YES}", *store])
    assert undeclared.exit_code == 1
    resumed = runner.invoke(dw, ["resume", run_id, *store, "--json"])
    assert resumed.exit_code == 1
    assert json.loads(resumed.stdout)["error"]["refusal"] == "open_wait"
    memory = MemoryStore(space)
    _still_waiting(Engine(memory, SystemClock()), memory, run_id)


def test_an_environment_variable_is_no_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DW_CLOCK", raising=False)
    space = f"env-{uuid.uuid4().hex}"
    memory = MemoryStore(space)
    engine = Engine(memory, SystemClock())  # the CLI below reads the same real clock
    view = engine.run(gate_workflow())
    wait_id = view.waits[0].wait_id
    names = ["APPROVAL", "approval", "DW_ANSWER", "DW_PAYLOAD", "DW_SIGNAL", "ANSWER",
             f"DW_ANSWER_{wait_id}", wait_id, f"DW_ANSWER_{view.run_id}"]
    for name in names:
        monkeypatch.setenv(name, YES)
    resumed = CliRunner().invoke(dw, ["resume", view.run_id, "--store", f"memory://{space}",
                                      "--json"])
    assert json.loads(resumed.stdout)["error"]["refusal"] == "open_wait"
    _still_waiting(engine, memory, view.run_id)  # in-process, with the variables still set
    _answer_then_finish(engine, view.run_id, wait_id)


@pytest.mark.parametrize("extra", [[YES], ["--answer", YES], ["--payload", YES],
                                   ["--input", f"approval={YES}"], ["-", YES]],
                         ids=["positional", "answer", "payload", "input", "stdin"])
def test_dw_resume_takes_no_answer_argument(make_engine: MakeEngine, extra: list[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DW_CLOCK", raising=False)
    space = f"resume-{uuid.uuid4().hex}"
    memory = MemoryStore(space)
    view = make_engine(memory).run(gate_workflow())
    before = snapshot(memory)
    result: Result = CliRunner().invoke(dw, ["resume", view.run_id, *extra,
                                             "--store", f"memory://{space}"], input=YES)
    assert result.exit_code == 2, result.output  # a usage error, before anything runs
    assert snapshot(memory) == before
    help_text = CliRunner().invoke(dw, ["resume", "--help"]).output
    assert "--answer" not in help_text and "--payload" not in help_text
    _still_waiting(make_engine(memory), memory, view.run_id)
