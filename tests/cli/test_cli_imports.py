"""`dw` starts fast: what a fresh interpreter imports to start the command line.

Each check runs in a new Python process, since this test process has imported
everything already. The heavy libraries load only when a command needs them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import WAIT_FLOW

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("rich", "jsonschema", "yaml", "boto3", "gcsfs")
# Slow to import, and no use to a command that does not log, hash, take a claim or make
# temporary files. Only the ones a bare interpreter has not loaded already are checked
# (a site hook may import some of them before any dw code runs).
STARTUP_COSTS = ("logging", "traceback", "socket", "hashlib", "tempfile", "asyncio",
                 "importlib.metadata")
# Engine modules that `dw signal` (delivery only: no step runs, no claim is taken) and
# `dw resume` (no timeline, no scheduler, no workflow file) leave alone.
NOT_FOR_SIGNAL = ("reference_engine.runs.executor", "reference_engine.runs.lifecycle",
                  "reference_engine.runs.claims", "reference_engine.runs.claim_looks",
                  "reference_engine.serving.scheduler", "reference_engine.runs.timeline",
                  "reference_engine.serving.backoff", "reference_engine.workflows.model",
                  "reference_engine.workflows.loader", "reference_engine.workflows.cel",
                  "reference_engine.workflows.legacy", "cel_expr_python",
                  "reference_engine.runs.consume", "reference_engine.serving.passes")
NOT_FOR_RESUME = ("reference_engine.serving.scheduler", "reference_engine.runs.timeline",
                  "reference_engine.serving.backoff", "reference_engine.workflows.yaml_text",
                  "reference_engine.serving.passes",
                  "logging", "traceback", "socket")
DW_MAIN = "from reference_engine.cli.main import dw\n"


def _modules_after(code: str) -> set[str]:
    """Every module a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=env, check=True, timeout=60)
    return set(json.loads(done.stdout.splitlines()[-1]))


def _heavy(modules: set[str]) -> list[str]:
    return sorted({name.split(".")[0] for name in modules} & set(HEAVY))


def _dw_code(argv: list[str]) -> str:
    return DW_MAIN + (f"try:\n    dw.main({argv!r}, prog_name='dw')\n"
                      "except SystemExit:\n    pass")


@pytest.fixture(scope="module")
def preloaded() -> set[str]:
    """What a bare interpreter here has imported before any dw code runs."""
    return _modules_after("pass")


def _costly(loaded: set[str], preloaded: set[str], names: tuple[str, ...] = STARTUP_COSTS,
            ) -> list[str]:
    return sorted(name for name in names if name in loaded and name not in preloaded)


@pytest.fixture
def suspended(tmp_path: Path) -> tuple[str, str, str]:
    """``(store URI, run id, wait id)`` of a run suspended on one wait, in a file store."""
    flow = tmp_path / "gate.yaml"
    flow.write_text(WAIT_FLOW, encoding="utf-8")
    uri = (tmp_path / "store").as_uri()
    probe = _dw_code(["run", str(flow), "--store", uri, "--json"])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=env, check=True, timeout=60)
    view = json.loads(done.stdout)
    assert view["status"] == "suspended", view
    return uri, view["runId"], view["waits"][0]["waitId"]


def test_importing_the_command_line_imports_no_heavy_library(preloaded: set[str]) -> None:
    loaded = _modules_after("import reference_engine.cli.main")
    assert "reference_engine.cli.main" in loaded  # the probe imported what it says
    assert _heavy(loaded) == [], (f"import reference_engine.cli.main imports {_heavy(loaded)}; "
                                  "import them inside the function that needs them")
    assert _costly(loaded, preloaded) == [], (
        f"import reference_engine.cli.main imports {_costly(loaded, preloaded)}; import them "
        "inside the function that needs them")


def test_the_probe_sees_a_startup_cost() -> None:
    loaded = _modules_after("import reference_engine.stores.gcs")  # it speaks HTTP itself
    assert _costly(loaded, set(), ("socket", "logging")) == ["socket"]


def test_the_probe_sees_a_heavy_import() -> None:
    assert _heavy(_modules_after("import reference_engine.workflows.yaml_text")) == ["yaml"]


@pytest.mark.parametrize("argv", [
    ["--help"], ["signal", "--help"], ["store", "ls", "--store", "memory://"],
])
def test_a_command_that_needs_no_heavy_library_imports_none(argv: list[str]) -> None:
    loaded = _modules_after(_dw_code(argv))
    assert _heavy(loaded) == [], f"dw {' '.join(argv)} imported {_heavy(loaded)}"
    assert "importlib.metadata" not in loaded, "plugins are found without importlib.metadata"
    assert "asyncio" not in loaded, "only an async store needs asyncio"


def test_dw_signal_imports_no_executor_claim_or_startup_cost(
        suspended: tuple[str, str, str], preloaded: set[str]) -> None:
    uri, _run_id, wait_id = suspended
    loaded = _modules_after(_dw_code(["signal", wait_id, "--payload", '{"approved": true}',
                                      "--store", uri]))
    assert "reference_engine.waits.delivery" in loaded  # the signal was delivered
    assert _heavy(loaded) == [], f"dw signal imported {_heavy(loaded)}"
    # hashlib stays: a registration's fingerprint is its sha256.
    costs = tuple(name for name in STARTUP_COSTS if name != "hashlib")
    extra = _costly(loaded, preloaded, costs + NOT_FOR_SIGNAL)
    assert extra == [], (f"dw signal imported {extra}; a delivery runs no step and takes no "
                         "claim: import them inside the engine method that needs them")


def test_dw_resume_imports_no_timeline_scheduler_or_logging(
        suspended: tuple[str, str, str], preloaded: set[str]) -> None:
    uri, run_id, wait_id = suspended
    answer = _dw_code(["signal", wait_id, "--payload", '{"approved": true}', "--store", uri])
    _modules_after(answer)
    loaded = _modules_after(_dw_code(["resume", run_id, "--store", uri]))
    assert "reference_engine.runs.executor" in loaded  # the run was resumed
    assert _heavy(loaded) == [], f"dw resume imported {_heavy(loaded)}"
    extra = _costly(loaded, preloaded, NOT_FOR_RESUME)
    assert extra == [], (f"dw resume imported {extra}; import them inside the function "
                         "that needs them")


def test_the_engine_and_dw_serve_default_to_the_schedulers_full_scan_interval() -> None:
    # Both write the number out so that starting dw need not import the scheduler.
    import inspect

    from reference_engine.cli import serve_cmd
    from reference_engine.engine import Engine
    from reference_engine.serving.scheduler import FULL_SCAN_EVERY_S

    default = inspect.signature(Engine).parameters["full_scan_every"].default
    assert default == serve_cmd.FULL_SCAN_EVERY_S == FULL_SCAN_EVERY_S


def test_dw_leaves_its_objects_out_of_the_interpreters_last_collection() -> None:
    # The console script's main() freezes what the command made as it exits, so the
    # interpreter's final full garbage collection has nothing to scan.
    code = ("import gc, sys\nfrom reference_engine.cli.main import main\n"
            "sys.argv = ['dw', '--help']\nfrozen = gc.get_freeze_count()\n"
            "try:\n    main()\nexcept SystemExit:\n"
            "    print(frozen, gc.get_freeze_count())\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True, timeout=60)
    before, after = map(int, done.stdout.split()[-2:])
    assert before == 0 and after > 10_000, (before, after)
