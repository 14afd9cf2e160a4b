"""A file-backed store mutant whose create is atomic between threads, racy between processes.

Records are files, so a child process opens the same records from the spec's ``uri``:
an import path to :func:`open_from_env`, which finds the root directory in an
environment variable the provider sets and every child process inherits.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dw_testing.kit.spec import StoreSpec
from dw_testing.selftest.mutants.base import RACE_WINDOW_SECONDS
from reference_engine.errors import StoreUnavailable
from reference_engine.stores.keys import is_under, validate_key, validate_prefix

ROOT_ENV = "DW_MUTANT_RACY_BETWEEN_PROCESSES_ROOT"
NAME = "racy_between_processes"
# Child processes start a few milliseconds apart on a loaded machine; the gap between
# check and write must outlast that skew for the race to be real.
PROCESS_RACE_WINDOW_SECONDS = 5 * RACE_WINDOW_SECONDS

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_for(root: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(root), threading.Lock())


class RacyBetweenProcesses:
    """Every write holds a ``threading.Lock`` and create checks, then writes: no thread can
    race a create, but two processes can both find the key absent and both win.

    Each record is one file named by the key's hash, holding the key, a newline and
    the value; writes go through a temp file and ``os.replace``.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = _lock_for(root)

    def _path(self, key: str) -> Path:
        return self.root / hashlib.sha256(key.encode("utf-8")).hexdigest()

    def _write(self, key: str, data: bytes) -> None:
        fd, temp = tempfile.mkstemp(dir=self.root, prefix=".tmp-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(key.encode("utf-8") + b"\n" + bytes(data))
        os.replace(temp, self._path(key))

    def put(self, key: str, data: bytes) -> None:
        validate_key(key, op="put")
        with self.lock:
            self._write(key, data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        validate_key(key, op="put_if_absent")
        with self.lock:
            if self._path(key).exists():
                return False
            time.sleep(PROCESS_RACE_WINDOW_SECONDS)
            self._write(key, data)
            return True

    def get(self, key: str) -> bytes | None:
        try:
            raw = self._path(validate_key(key, op="get")).read_bytes()
        except FileNotFoundError:
            return None
        return raw.partition(b"\n")[2]

    def delete(self, key: str) -> None:
        path = self._path(validate_key(key, op="delete"))
        with self.lock:
            path.unlink(missing_ok=True)

    def list(self, prefix: str) -> list[str]:
        normalised = validate_prefix(prefix)
        keys = []
        for path in self.root.iterdir():
            if path.name.startswith(".tmp-"):
                continue
            try:
                with path.open("rb") as handle:
                    key = handle.readline().rstrip(b"\n").decode("utf-8")
            except FileNotFoundError:
                continue
            if is_under(key, normalised):
                keys.append(key)
        return sorted(keys)

    def close(self) -> None:
        """Nothing to release."""


def open_from_env() -> RacyBetweenProcesses:
    """A new handle on the records the entered provider made (child processes use this)."""
    root = os.environ.get(ROOT_ENV)
    if not root:
        raise StoreUnavailable(
            f"{ROOT_ENV} is not set; open this store through its provider, "
            f"--dw-store=dw_testing.mutants:{NAME}",
            op="open",
        )
    return RacyBetweenProcesses(Path(root))


@contextmanager
def racy_between_processes() -> Iterator[StoreSpec]:
    """Provider: a fresh record directory, published to child processes by environment."""
    with tempfile.TemporaryDirectory(prefix="dw-mutant-racy-") as root:
        previous = os.environ.get(ROOT_ENV)
        os.environ[ROOT_ENV] = root
        try:
            yield StoreSpec(
                factory=open_from_env,
                uri=f"{__name__}:open_from_env",
                capabilities={"cross_process": True, "durable_reopen": True},
                name=NAME,
            )
        finally:
            if previous is None:
                os.environ.pop(ROOT_ENV, None)
            else:
                os.environ[ROOT_ENV] = previous
