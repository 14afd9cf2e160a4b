"""A GCS ``endpoint=`` is checked at open: a malformed one at once, an unreachable one
within the probe's bound, each in one line; no library traceback ever reaches stderr."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from reference_engine.errors import StoreUnavailable
from reference_engine.stores.gcs import ENDPOINT_PROBE_S, check_endpoint
from reference_engine.stores.registry import open_store

DW = [sys.executable, "-m", "reference_engine"]


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port nothing listens on (bound, never listening, for the test)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.mark.parametrize("endpoint", ["notaurl", "ftp://127.0.0.1:1", "http://", "http://h:99999",
                                      "http://h:port"])
def test_a_malformed_endpoint_is_refused_at_open(endpoint: str) -> None:
    with pytest.raises(StoreUnavailable, match="must be an http"):
        open_store(f"gs://bkt/p?endpoint={endpoint}")


def test_an_unreachable_endpoint_is_refused_at_open_in_one_line(closed_port: int) -> None:
    uri = f"gs://bkt/p?endpoint=http://127.0.0.1:{closed_port}"
    started = time.monotonic()
    done = subprocess.run([*DW, "waits", "--store", uri], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert f"cannot reach the GCS endpoint http://127.0.0.1:{closed_port}" in done.stderr
    # The probe's bound plus an interpreter start, not gcsfs's half minute of retries.
    assert time.monotonic() - started < ENDPOINT_PROBE_S + 15


def test_check_endpoint_accepts_a_listening_server() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_endpoint(f"http://127.0.0.1:{server.getsockname()[1]}")


def test_a_library_exception_log_prints_no_traceback(tmp_path: object) -> None:
    """What gcsfs does when it runs out of retries: ``logger.exception``."""
    script = ("import logging, sys\n"
              "from reference_engine.cli.main import dw\n"
              "try:\n    dw.main(args=['runs', '--store', 'memory://x', '--json'],"
              " prog_name='dw', standalone_mode=False)\nexcept SystemExit:\n    pass\n"
              "try:\n    raise OSError('boom')\nexcept OSError:\n"
              "    logging.getLogger('gcsfs').exception('out of retries')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "out of retries" not in done.stderr
    assert json.loads(done.stdout) == {"runs": []}
    assert logging.getLogger("gcsfs").handlers == []  # nothing configured in this process
