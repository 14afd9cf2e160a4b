"""Store mutants served through ``exec:``, one ``dw-store/1`` child per handle.

A memory mutant cannot run behind ``exec:``: each child would hold records of its own. Here
the mutant's class (unchanged, from :data:`~dw_testing.selftest.mutants.BACKING_CLASSES`)
runs over a :class:`FileBacking`: records in a file store, a lock every child process
takes. So the defect is the mutant's own, and what the suite sees went through the
protocol's parent side (pipelining, error kinds, handshake capabilities).

    --dw-store=dw_testing.selftest.mutants.over_exec:glob_matched_list
    python -m dw_testing.selftest.mutants.over_exec glob_matched_list /tmp/records   # a child
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shlex
import sys
import tempfile
import threading
from collections.abc import Iterator, MutableMapping, Sequence
from pathlib import Path
from types import TracebackType

from dw_testing.kit.spec import StoreSpec
from dw_testing.selftest.mutants import BACKING_CLASSES
from dw_testing.selftest.mutants.base import MEMORY_CAPABILITIES, Backing, CorrectStore, Provider
from reference_engine.stores.fs import FsStore

#: The name that serves the unbroken :class:`CorrectStore`: the control run.
CONTROL = "correct_store"
# Records are files every child opens, so a second child or process sees them too.
EXEC_CAPABILITIES = {**MEMORY_CAPABILITIES, "cross_process": True}
RECORDS_DIR = "records"
LOCK_FILE = "records.lock"


class ProcessSharedLock:
    """A re-entrant lock held across processes: an ``RLock`` for this process's threads,
    then ``flock`` on a file (per open file, so it cannot tell threads apart itself)."""

    def __init__(self, path: Path) -> None:
        self._threads = threading.RLock()
        self._depth = 0
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def __enter__(self) -> None:
        self._threads.acquire()
        if self._depth == 0:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        self._depth += 1

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._depth -= 1
        if self._depth == 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._threads.release()

    def close(self) -> None:
        os.close(self._fd)


class FileRecords(MutableMapping[str, bytes]):
    """``{key: record}`` kept in a file store, so every process opening ``root`` shares it."""

    def __init__(self, root: Path) -> None:
        self._files = FsStore(root, fsync=False)

    def __getitem__(self, key: str) -> bytes:
        found = self._files.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __setitem__(self, key: str, value: bytes) -> None:
        self._files.put(key, value)

    def __delitem__(self, key: str) -> None:
        self[key]  # KeyError when absent, as a dict does
        self._files.delete(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._files.list(""))

    def __len__(self) -> int:
        return len(self._files.list(""))


class FileBacking(Backing):
    """A :class:`Backing` whose records and lock live under ``root``, for every process.

    The in-flight counters stay per process: a defect that needs them shows between the
    threads of one child (one handle, pipelined calls), not between children.
    """

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.records = FileRecords(root / RECORDS_DIR)
        self.lock = ProcessSharedLock(root / LOCK_FILE)


def child_command(name: str, root: Path) -> list[str]:
    """The command line of a child serving mutant ``name`` over the records under ``root``."""
    return [sys.executable, "-m", __name__, name, str(root)]


def exec_mutant_provider(name: str) -> Provider:
    """A provider: a fresh record directory, and an ``exec:`` store of ``name`` children."""
    _store_class(name)  # refuse an unknown name when the provider is made

    @contextlib.contextmanager
    def provide() -> Iterator[StoreSpec]:
        from dw_testing.plugin.catalogue.providers import exec_provider

        with tempfile.TemporaryDirectory(prefix=f"dw-exec-mutant-{name}-") as root:
            reference = "exec:" + shlex.join(child_command(name, Path(root)))
            with exec_provider(reference, name, fork=True)() as spec:
                yield spec

    provide.__name__ = name
    provide.__qualname__ = name
    return provide


def _store_class(name: str) -> type[CorrectStore]:
    if name == CONTROL:
        return CorrectStore
    try:
        return BACKING_CLASSES[name]
    except KeyError:
        raise KeyError(
            f"no mutant {name!r} can run over files; choose {CONTROL} or one of "
            f"{', '.join(BACKING_CLASSES)}"
        ) from None


def __getattr__(name: str) -> Provider:
    """``--dw-store=dw_testing.selftest.mutants.over_exec:<name>`` reaches a provider."""
    if name != CONTROL and name not in BACKING_CLASSES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return exec_mutant_provider(name)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve one handle of mutant ``name`` over the records under ``root`` on stdin/stdout."""
    from reference_engine.stores.exec.child import serve_stdio

    parser = argparse.ArgumentParser(
        prog=f"python -m {__name__}",
        description="Serve a store mutant over shared files as a dw-store/1 child.")
    parser.add_argument("name", choices=[CONTROL, *BACKING_CLASSES])
    parser.add_argument("root", type=Path, help="the directory every child of the store shares")
    args = parser.parse_args(argv)
    store = _store_class(args.name)(FileBacking(args.root))
    return serve_stdio(store, args.name, dict(EXEC_CAPABILITIES))


if __name__ == "__main__":
    exit_code = main()
    sys.stderr.flush()
    # As the stock child does: every reply is flushed, skip the slow interpreter teardown.
    os._exit(exit_code)
