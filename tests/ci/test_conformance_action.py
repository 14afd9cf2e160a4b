"""The composite action's YAML against the script it runs, and the script's own refusals.
(GitHub Actions cannot run here: the slow test runs the script as the action would.)"""

from __future__ import annotations

import os
import re
import subprocess

from support.gate_repo import ACTION_DIR, GATE, action

_READ = re.compile(r"\$\{(DW_[A-Z_]+)")
_INPUT = re.compile(r"\$\{\{\s*inputs\.([a-z-]+)\s*\}\}")


def _steps() -> list[dict[str, object]]:
    runs = action()["runs"]
    assert isinstance(runs, dict) and runs["using"] == "composite"
    steps = runs["steps"]
    assert isinstance(steps, list)
    return steps


def _gate_step() -> dict[str, object]:
    [step] = [s for s in _steps() if "run" in s]
    return step


def test_the_action_takes_the_store_profile_packages_and_deno() -> None:
    inputs = action()["inputs"]
    assert isinstance(inputs, dict)
    assert {"store", "profile", "packages", "deno"} <= set(inputs)
    assert inputs["store"]["required"] is True
    assert inputs["profile"]["default"] == "ci" and inputs["deno"]["default"] == "false"
    for name, spec in inputs.items():
        assert spec.get("description"), f"input {name} needs a description"


def test_every_input_reaches_a_step_and_every_step_input_exists() -> None:
    declared = set(action()["inputs"])  # type: ignore[arg-type]
    used = set(_INPUT.findall(ACTION_DIR.joinpath("action.yml").read_text(encoding="utf-8")))
    assert used == declared


def test_the_gate_step_runs_the_script_with_the_variables_it_reads() -> None:
    step = _gate_step()
    assert step["shell"] == "bash"
    assert step["run"] == "${{ github.action_path }}/gate.sh"
    script = GATE.read_text(encoding="utf-8")
    env = step["env"]
    assert isinstance(env, dict)
    read = set(_READ.findall(script))
    assert set(env) <= read, f"the action sets {set(env) - read}, which gate.sh never reads"
    header = script.split("set -euo pipefail")[0]
    for name in read:
        assert f"#   {name}" in header, f"gate.sh reads {name} without documenting it"
    assert env["DW_STORE"] == "${{ inputs.store }}"


def test_the_report_the_script_writes_is_the_one_uploaded() -> None:
    env = _gate_step()["env"]
    assert isinstance(env, dict)
    [upload] = [s for s in _steps() if str(s.get("uses", "")).startswith(
        "actions/upload-artifact@")]
    assert upload["if"] == "always()"
    assert upload["with"]["path"].rstrip("/") == env["DW_OUT"]  # type: ignore[index]
    [python] = [s for s in _steps() if str(s.get("uses", "")).startswith(
        "actions/setup-python@")]
    assert _steps().index(python) < _steps().index(_gate_step())


def test_the_script_parses_and_refuses_to_run_without_a_store() -> None:
    subprocess.run(["bash", "-n", str(GATE)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "DW_STORE"}
    result = subprocess.run(["bash", str(GATE)], env=env, capture_output=True, text=True)
    assert result.returncode == 2
    assert "set DW_STORE to the store to test" in result.stderr
