"""``dw`` as real OS processes: the demo end to end, and ``dw serve`` stopping on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from cli_helpers import Invoke

DW = [sys.executable, "-m", "reference_engine"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DW_STORE", "DW_CLOCK", "DW_DEBUG")}
    return env


def test_demo_finishes_in_a_fresh_directory(tmp_path: Path) -> None:
    done = subprocess.run([*DW, "demo", "--json"], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    record = json.loads(done.stdout)
    assert record["status"] == "succeeded"
    assert record["steps"]["approval"]["output"]["payload"] == {"approved": True}
    assert record["steps"]["approval"]["output"]["signal"]["submittedBy"] == "dw-demo"
    assert (tmp_path / ".dw").is_dir()


def test_demo_refuses_a_store_that_a_second_process_cannot_see(invoke: Invoke) -> None:
    result = invoke(["demo", "--store", "memory://", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"]["kind"] == "unsupported"


def test_serve_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    proc = subprocess.Popen([*DW, "serve", "--interval", "60", "--store", str(tmp_path / "s")],
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        # The first stderr line is written after the SIGTERM handler is in place.
        assert "polling" in proc.stderr.readline()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert "Traceback" not in err and "stopped" in err


def test_demo_prints_its_workflow_for_the_manual_flow(invoke: Invoke, tmp_path: Path) -> None:
    text = invoke(["demo", "--print-workflow"]).stdout
    assert "wait_for_signal" in text
    path = tmp_path / "approval.yaml"
    path.write_text(text)
    assert invoke(["run", str(path), "--store", f"memory://demo-{tmp_path.name}"]).exit_code == 3
