"""Every S3 and GCS call has a bounded deadline (``deadline=`` in the URI): an endpoint that
accepts connections and never answers meets one clear error, never a hang."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from urllib.parse import quote, urlsplit

import pytest

from dw_testing.kit.fault_proxy import FaultProxy, Faults
from reference_engine.errors import StoreUnavailable, TransientStoreError
from reference_engine.stores.deadlines import DEFAULT_DEADLINE_S, attempt_connect_s, attempt_read_s
from reference_engine.stores.registry import open_store

SHORT = "1"  # seconds: the blackhole never answers, so any deadline is met by its error
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "dw-testing", "AWS_SECRET_ACCESS_KEY": "dw-testing"}


@pytest.fixture
def blackhole() -> Iterator[FaultProxy]:
    """A proxy that accepts, reads and never answers (its upstream only listens)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        upstream = listener.getsockname()[:2]
        with FaultProxy(upstream, faults=Faults(blackhole=1.0)) as proxy:
            yield proxy


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text
    return text


@pytest.mark.usefixtures("aws_credentials")
def test_an_s3_endpoint_that_never_answers_meets_the_deadline_error(
    blackhole: FaultProxy,
) -> None:
    uri = (f"s3://bucket/p?endpoint_url={quote(blackhole.url(), safe='')}&region=us-east-1"
           f"&deadline={SHORT}")
    store = open_store(uri)
    with pytest.raises(TransientStoreError) as raised:
        store.get("k")
    message = _one_line(raised.value)
    assert "get of key 'k' got no answer within the 1 s deadline" in message
    assert "deadline=SECONDS" in message
    assert blackhole.counters["blackhole"] >= 1


def test_a_gcs_endpoint_that_never_answers_meets_the_deadline_error(
    blackhole: FaultProxy,
) -> None:
    store = open_store(f"gs://bucket/p?endpoint={quote(blackhole.url(), safe='')}"
                       f"&deadline={SHORT}")
    with pytest.raises(TransientStoreError) as raised:
        store.put_if_absent("k", b"v")
    assert "put_if_absent of key 'k' got no answer within the 1 s deadline" in _one_line(
        raised.value)


@pytest.mark.parametrize("scheme", ["s3", "gs"])
@pytest.mark.parametrize("value", ["soon", "0", "-3", "inf"])
def test_a_deadline_that_is_no_positive_number_is_refused_at_open(scheme: str,
                                                                  value: str) -> None:
    option = "endpoint_url" if scheme == "s3" else "endpoint"
    with pytest.raises(StoreUnavailable, match="deadline must be a positive number"):
        open_store(f"{scheme}://bucket/p?{option}=http%3A%2F%2F127.0.0.1%3A1&deadline={value}")


def test_each_attempt_fits_the_deadline_and_the_default_is_interactive() -> None:
    assert DEFAULT_DEADLINE_S < 60
    for deadline in (1.0, DEFAULT_DEADLINE_S, 120.0):
        assert attempt_connect_s(deadline) + attempt_read_s(deadline) < deadline


@pytest.mark.usefixtures("aws_credentials")
def test_dw_waits_against_a_blackholed_s3_endpoint_says_so_in_one_line(
    blackhole: FaultProxy, tmp_path: os.PathLike[str],
) -> None:
    import subprocess
    import sys

    host, port = urlsplit(blackhole.url()).hostname, urlsplit(blackhole.url()).port
    uri = (f"s3://bucket/p?endpoint_url={quote(f'http://{host}:{port}', safe='')}"
           f"&region=us-east-1&deadline={SHORT}")
    done = subprocess.run([sys.executable, "-m", "reference_engine", "waits", "--store", uri],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, **CREDENTIALS})
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "got no answer within the 1 s deadline" in lines[0]
    assert "Traceback" not in done.stderr
