"""Children forked from a warm process: each is still its own process, pipes and store
connection, and runs as ``python -m <module>`` would in the caller's place at open time."""

from __future__ import annotations

import os
import shlex
import signal
import sys
import textwrap
from pathlib import Path

import pytest
from exec_helpers import live_children

from reference_engine.errors import StoreError
from reference_engine.stores.exec.client import ExecStore, open_exec
from reference_engine.stores.exec.forkserver import ForkedProcess, forkable_module

CHILD = [sys.executable, "-m", "reference_engine.stores.exec.child"]
# A factory the stock child opens from the working directory (sys.path[0] under -m): its
# records say which environment and directory the child ran in.
PROBE = textwrap.dedent("""
    import os
    from reference_engine.stores.memory import MemoryStore

    def factory():
        store = MemoryStore()
        store.put("probe/env", os.environ.get("DW_FORK_PROBE", "").encode())
        store.put("probe/cwd", os.getcwd().encode())
        return store
""")


def forked(*args: str) -> ExecStore:
    return open_exec(shlex.join([*CHILD, *args]), fork=True)


def test_forked_handles_are_separate_processes_that_end_cleanly(tmp_path: Path) -> None:
    uri = f"file://{tmp_path}?fsync=0"
    handles = [forked(uri) for _ in range(3)]
    try:
        assert all(isinstance(h._conn.proc, ForkedProcess) for h in handles)
        assert len({h.pid for h in handles}) == 3
        assert not {h.pid for h in handles} & live_children(), "forked, not started here"
        assert handles[0].put_if_absent("a/k", b"1") is True  # type: ignore[attr-defined]
        assert handles[1].put_if_absent("a/k", b"2") is False  # type: ignore[attr-defined]
        assert [h.get("a/k") for h in handles] == [b"1", b"1", b"1"]
    finally:
        for handle in handles:
            handle.close()
    assert [h._conn.proc.poll() for h in handles] == [0, 0, 0]


def test_a_killed_forked_child_fails_its_call_with_its_exit_status() -> None:
    store = forked("memory://")
    try:
        store.put("k", b"v")
        os.kill(store.pid, signal.SIGKILL)
        with pytest.raises(StoreError, match="the child exited with code -9"):
            store.get("k")
    finally:
        store.close()


def test_a_forked_child_that_cannot_open_reports_its_stderr() -> None:
    with pytest.raises(StoreError, match=r"exited with code 1 before its handshake(.|\n)*"
                                         r"cannot open 'nosuch://x'"):
        forked("nosuch://x")


def test_a_forked_child_runs_in_the_callers_directory_and_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "fork_probe_store.py").write_text(PROBE)
    monkeypatch.chdir(tmp_path)
    for value in ("first", "second"):  # the environment at each open, not at the first
        monkeypatch.setenv("DW_FORK_PROBE", value)
        store = forked("fork_probe_store:factory")
        try:
            assert store.get("probe/env") == value.encode()
            assert store.get("probe/cwd") == str(tmp_path).encode()
        finally:
            store.close()


def test_without_forking_the_command_is_started_as_written(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DW_EXEC_FORK", "0")
    store = forked("memory://")
    try:
        assert store.pid in live_children()
    finally:
        store.close()


@pytest.mark.parametrize(("argv", "module"), [
    ([sys.executable, "-m", "pkg.mod", "x"], "pkg.mod"),
    ([sys.executable, "script.py"], None),
    (["python3", "-m", "pkg.mod"], None),  # another interpreter may hold other code
    (["deno", "run", "-A", "store.ts"], None),
])
def test_only_this_interpreters_module_commands_fork(argv: list[str], module: str | None) -> None:
    assert forkable_module(argv) == module


def test_a_few_servers_are_kept_and_a_retired_ones_child_still_ends_cleanly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reference_engine.stores.exec import forkserver

    forkserver.end_servers()
    places = [tmp_path / f"d{i}" for i in range(forkserver.MAX_SERVERS + 1)]
    handles = []
    try:
        for place in places:  # a server per working directory, as python -m would see it
            place.mkdir()
            monkeypatch.chdir(place)
            handles.append(forked("memory://"))
        assert len(forkserver._SERVERS) == forkserver.MAX_SERVERS
        first = handles[0]  # its server was retired: its exit is watched by pidfd instead
        first.put("k", b"v")
        assert first.get("k") == b"v"
    finally:
        for handle in handles:
            handle.close()
        forkserver.end_servers()
    assert all(h._conn.proc.poll() is not None for h in handles)


def test_a_fork_of_this_process_leaves_the_parents_servers_alone() -> None:
    from reference_engine.stores.exec import forkserver

    store = forked("memory://")
    try:
        store.put("k", b"v")
        pid = os.fork()
        if pid == 0:  # the fork: no server of its own yet, none of the parent's to use
            os._exit(0 if not forkserver._SERVERS else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "the fork kept the parent's servers"
        assert store.get("k") == b"v", "the parent's child and server still answer"
        another = forked("memory://")  # and the server still forks
        assert another.get("k") is None
        another.close()
    finally:
        store.close()
