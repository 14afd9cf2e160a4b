"""A library's log records never reach a dw user, though dw no longer imports logging itself.

Each check runs in a new interpreter, where ``logging`` is not loaded yet (this test
process loaded it long ago).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUIET = "from reference_engine.cli.logs import quiet_library_logs\nquiet_library_logs()\n"
LIBRARY_LOGS = """\
import logging, sys
try:
    raise ConnectionError("reset by peer")
except ConnectionError:
    logging.getLogger("urllib3.connectionpool").exception("retrying")
logging.getLogger("botocore").warning("slow down")
print(sum(isinstance(h, logging.NullHandler) for h in logging.getLogger().handlers))
print(sys.modules["logging"] is logging)
"""


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {name: value for name, value in os.environ.items() if name != "DW_DEBUG"}
    full_env.update(PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full_env, check=True, timeout=60)


def test_a_library_that_imports_logging_later_logs_nothing_to_stderr() -> None:
    done = _python(QUIET + "import sys\nassert 'logging' not in sys.modules\n" + LIBRARY_LOGS)
    assert done.stderr == ""
    assert done.stdout.split() == ["1", "True"]  # one handler, on the one logging module


def test_logging_loaded_before_gets_the_handler_at_once() -> None:
    done = _python("import logging\n" + QUIET + QUIET + LIBRARY_LOGS)
    assert done.stderr == ""
    assert done.stdout.split() == ["1", "True"]  # asked twice, added once


def test_without_the_handler_the_records_would_show() -> None:
    done = _python(LIBRARY_LOGS)
    assert "retrying" in done.stderr and "ConnectionError" in done.stderr
    assert done.stdout.split() == ["0", "True"]


def test_dw_debug_lets_the_records_through() -> None:
    done = _python(QUIET + LIBRARY_LOGS, DW_DEBUG="1")
    assert "retrying" in done.stderr and "slow down" in done.stderr
    assert done.stdout.split() == ["0", "True"]
