"""A run suspended before CEL resumes with its old meaning; the same text as a new file is refused.

``tests/support/old_language_run.json`` holds every store record of a run of
``tests/support/old_language.yaml`` that the engine before CEL suspended (made with that
code, not by hand). Its workflow leans on each old rule CEL changes: JSON truthiness (the
text ``"false"`` is true), a missing path read as null, ``and``/``not`` words, a missing
path rendered as "" in ``${{ }}``, and a ``for_each`` expression.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dw_testing.kit.clock import FakeClock
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.stores.memory import MemoryStore
from reference_engine.workflows.errors import WorkflowError
from reference_engine.workflows.loader import load_workflow

SUPPORT = Path(__file__).resolve().parent.parent / "support"


def _planted() -> tuple[MemoryStore, str, str]:
    saved = json.loads((SUPPORT / "old_language_run.json").read_text(encoding="utf-8"))
    store = MemoryStore()
    for key, text in saved["records"].items():
        store.put(key, text.encode())
    return store, saved["run_id"], saved["wait_id"]


def test_a_run_suspended_by_the_old_code_resumes_with_the_old_meaning() -> None:
    store, run_id, wait_id = _planted()
    engine = Engine(store, FakeClock(1_800_000_100.0))
    engine.signal(wait_id, '{"ok": true}')
    view = engine.resume(run_id)
    shown = engine.show(run_id)
    assert view.status == "succeeded", shown
    # "false" is JSON-truthy and a missing path was null, so 'after' ran...
    assert shown["jobs"]["after"] == "succeeded"
    assert shown["steps"]["note"]["output"] == {"message": "env=prod missing=[] ok=true"}
    assert [shown["steps"][f"fan[{i}]"]["output"]["message"] for i in (0, 1)] == \
        ["to a", "to b"]
    # ...and a missing path is falsy, so 'unmet' was skipped, not failed.
    assert shown["jobs"]["unmet"] == "skipped"


def test_the_snapshot_keeps_no_marker_and_new_runs_carry_expressions_cel(tmp_path: Path) -> None:
    store, run_id, _ = _planted()
    first = json.loads(store.get(keys.revision_key(run_id, 1)) or b"{}")
    assert first["source"]["name"] == "oldlang" and "expressions" not in first["source"]
    new = tmp_path / "new.yaml"
    new.write_text("name: n\njobs: {a: {steps: [{name: s, log: hi}]}}\n", encoding="utf-8")
    assert load_workflow(new).source["expressions"] == "cel"


def test_the_old_text_as_a_new_file_is_refused_with_its_cel_form_and_line(
        tmp_path: Path) -> None:
    path = tmp_path / "old.yaml"
    path.write_text((SUPPORT / "old_language.yaml").read_text(encoding="utf-8"),
                    encoding="utf-8")
    with pytest.raises(WorkflowError) as info:
        load_workflow(path)
    message = str(info.value)
    assert str(path) in message and "line 12, column 12" in message
    assert "is the old expression form; write it in CEL: " \
        "inputs.flag && !steps.approval.outputs.payload.missing" in message
