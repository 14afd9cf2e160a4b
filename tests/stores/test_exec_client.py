"""The exec: parent against children that misbehave: every failure names the command, the
call and the child's stderr, and leaves no process behind."""

from __future__ import annotations

import base64
import gc
import shlex
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from exec_helpers import live_children

from reference_engine.errors import InvalidKey, StoreError, StoreUnavailable, TransientStoreError
from reference_engine.stores.exec.client import ExecChildError, ExecStore, start_child
from reference_engine.stores.registry import open_store

MISBEHAVING = str(Path(__file__).with_name("exec_misbehaving_child.py"))
PAYLOAD = b"PAYLOAD-THAT-MUST-NOT-LEAK"
SERVE_MEMORY = [sys.executable, "-m", "reference_engine.stores.exec.child", "memory://"]




@pytest.fixture
def spawn() -> Iterator[Callable[..., ExecStore]]:
    """Start a misbehaving child; after the test, every child started is gone and reaped."""
    started: list[ExecStore] = []

    def start(mode: str, op: str | None = None, *, timeout: float = 10.0) -> ExecStore:
        argv = [sys.executable, MISBEHAVING, mode, *([op] if op else [])]
        store = start_child(argv, timeout=timeout)
        started.append(store)
        return store

    yield start
    for store in started:
        store.close()
    left = live_children() & {store.pid for store in started}
    assert not left, f"exec children left behind: {sorted(left)}"


def assert_names_the_fault(exc: BaseException, store_or_label: ExecStore | str,
                           call: str, *stderr_lines: str) -> None:
    text = str(exc)
    label = store_or_label if isinstance(store_or_label, str) else store_or_label.command
    assert label in text, "the error names the command"
    assert call in text, "the error names the call"
    for line in stderr_lines:
        assert line in text, "the error quotes the child's stderr"
    assert PAYLOAD.decode() not in text and base64.b64encode(PAYLOAD).decode() not in text


def assert_ended(store: ExecStore) -> None:
    assert store._conn.proc.returncode is not None, "the broken child was not reaped"
    assert store.pid not in live_children()


# -- each way a child can fail a call ---------------------------------------------------------


@pytest.mark.parametrize(("mode", "reason"), [
    ("exit", "the child exited with code 3"),
    ("not-json", "not a reply (the reply line is not JSON): 'debug: this is not json'"),
    ("unknown-id", "answered id 1001, which was never asked"),
    ("wrong-shape", "in the wrong shape: a put_if_absent result must be true or false"),
    ("stdout-closed", "the child closed its stdout but kept running"),
])
def test_a_broken_reply_fails_the_call_and_ends_the_child(
    spawn: Callable[..., ExecStore], mode: str, reason: str
) -> None:
    # A timeout far beyond the join below: the call must fail at the fault, not time out.
    store = spawn(mode, "put_if_absent", timeout=600.0)
    store.put("runs/a", PAYLOAD)  # calls before the trigger are served
    raised: list[BaseException] = []

    def create() -> None:
        try:
            store.put_if_absent("runs/b", PAYLOAD)  # type: ignore[attr-defined]
        except BaseException as exc:
            raised.append(exc)

    caller = threading.Thread(target=create, daemon=True)
    caller.start()
    caller.join(timeout=60)
    assert not caller.is_alive(), "the call waited for its timeout instead of failing at once"
    assert len(raised) == 1 and isinstance(raised[0], ExecChildError), raised
    caught = pytest.ExceptionInfo.from_exception(raised[0])
    assert_names_the_fault(caught.value, store, "put_if_absent of key 'runs/b'",
                           f"misbehaving child: {mode} on put_if_absent")
    assert reason in str(caught.value)
    assert caught.value.op == "put_if_absent" and caught.value.key == "runs/b"
    assert_ended(store)


def test_an_answer_given_twice_breaks_the_handle_at_the_second(
    spawn: Callable[..., ExecStore],
) -> None:
    store = spawn("twice", "put")
    store.put("a", PAYLOAD)  # the first answer is good; the second is an id nobody awaits
    with pytest.raises(ExecChildError, match="answered id 0, which was never asked or was "
                       "already answered"):
        store.get("a")
    assert_ended(store)


def test_a_hung_child_fails_the_call_at_the_timeout(spawn: Callable[..., ExecStore]) -> None:
    # The hang is the first call: no served call can overrun the short timeout on a busy machine.
    store = spawn("hang", "get", timeout=0.5)
    with pytest.raises(ExecChildError) as caught:
        store.get("a")
    assert_names_the_fault(caught.value, store, "get of key 'a'", "misbehaving child: hang on get")
    assert "no answer to get of key 'a' within 0.5s" in str(caught.value)
    assert "DW_EXEC_TIMEOUT" in str(caught.value), "the error says how to raise the timeout"
    assert_ended(store)


def test_a_child_that_stops_reading_cannot_block_a_write_past_the_timeout(
    spawn: Callable[..., ExecStore],
) -> None:
    store = spawn("deaf", timeout=1.0)
    big = b"x" * (4 << 20)  # far more than a pipe buffer holds
    with pytest.raises(ExecChildError, match=r"no answer to put of key 'big' within 1s"):
        store.put("big", big)
    assert_ended(store)


def test_every_call_after_a_fault_fails_with_the_first_reason(
    spawn: Callable[..., ExecStore],
) -> None:
    store = spawn("exit", "delete")
    with pytest.raises(ExecChildError):
        store.delete("a")
    with pytest.raises(ExecChildError, match=r"list of prefix 'p' failed: the child exited"):
        store.list("p")
    store.close()  # closing a broken handle is quiet


# -- the handshake -----------------------------------------------------------------------------


def test_a_child_that_speaks_another_version_is_refused_naming_both() -> None:
    argv = [sys.executable, MISBEHAVING, "bad-version"]
    before = live_children()
    with pytest.raises(ExecChildError) as caught:
        start_child(argv, timeout=10)
    text = str(caught.value)
    assert "the child speaks dw-store/9, this parent speaks dw-store/1" in text
    assert_names_the_fault(caught.value, shlex.join(argv), "starting the child",
                           "misbehaving child: mode bad-version")
    assert live_children() <= before


@pytest.mark.parametrize(("mode", "reason", "stderr_line"), [
    ("no-handshake", "exited with code 7 before its handshake",
     "misbehaving child: giving up before the handshake"),
    ("garbage-handshake", "its first line is not a dw-store/1 handshake",
     "misbehaving child: mode garbage-handshake"),
])
def test_a_child_without_a_handshake_is_refused(mode: str, reason: str, stderr_line: str) -> None:
    argv = [sys.executable, MISBEHAVING, mode]
    before = live_children()
    with pytest.raises(ExecChildError) as caught:
        start_child(argv, timeout=10)
    assert reason in str(caught.value)
    assert_names_the_fault(caught.value, shlex.join(argv), "starting the child", stderr_line)
    assert live_children() <= before


def test_a_child_that_never_says_hello_times_out() -> None:
    argv = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    before = live_children()
    with pytest.raises(ExecChildError, match=r"no handshake line within 0.5s"):
        start_child(argv, timeout=0.5)
    assert live_children() <= before


def test_a_missing_program_is_unavailable_and_names_it() -> None:
    with pytest.raises(StoreUnavailable, match=r"cannot start 'no-such-dw-program'.*on PATH"):
        open_store("exec:no-such-dw-program --flag")


@pytest.mark.parametrize("reference", ["exec:", "exec:   ", "exec:deno run 'unbalanced"])
def test_an_unusable_command_line_is_refused(reference: str) -> None:
    with pytest.raises(StoreUnavailable, match=r"exec store: (empty command|cannot split)"):
        open_store(reference)


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_a_bad_timeout_setting_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("DW_EXEC_TIMEOUT", value)
    with pytest.raises(StoreUnavailable, match="DW_EXEC_TIMEOUT must be a number of seconds"):
        open_store(f"exec:{shlex.join(SERVE_MEMORY)}")


def test_the_timeout_setting_reaches_the_handle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DW_EXEC_TIMEOUT", "2.5")
    store = open_store(f"exec:{shlex.join(SERVE_MEMORY)}")
    try:
        assert isinstance(store, ExecStore) and store._conn.timeout == 2.5
    finally:
        store.close()


# -- error kinds, pipelining, threads, closing -------------------------------------------------


@pytest.mark.parametrize(("kind", "error_class"), [
    ("invalid_key", InvalidKey), ("transient", TransientStoreError),
    ("unavailable", StoreUnavailable), ("failed", StoreError),
])
def test_error_kinds_raise_the_package_exceptions(
    spawn: Callable[..., ExecStore], kind: str, error_class: type[StoreError]
) -> None:
    store = spawn("serve")
    with pytest.raises(error_class, match=f"raised {kind} on purpose") as caught:
        store.get(f"raise/{kind}")
    assert type(caught.value) is error_class, "kinds map onto exactly one class each"
    assert caught.value.op == "get" and caught.value.key == f"raise/{kind}"
    assert store.get("still/served") is None, "an error reply does not break the handle"


def test_replies_out_of_order_reach_their_own_callers(spawn: Callable[..., ExecStore]) -> None:
    store = spawn("reverse")
    results: dict[str, bytes | None] = {}

    def read(key: str) -> None:
        results[key] = store.get(key)

    threads = [threading.Thread(target=read, args=(key,)) for key in ("first", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    # The child answered "second" before "first"; each caller still got its own answer.
    assert results == {"first": b"first", "second": b"second"}


def test_many_threads_share_one_handle() -> None:
    store = open_store(f"exec:{shlex.join(SERVE_MEMORY)}")
    errors: list[BaseException] = []
    wins: list[int] = []

    def work(worker: int) -> None:
        try:
            for i in range(100):
                key = f"t/{worker}/{i}"
                store.put(key, f"{worker}:{i}".encode())
                assert store.get(key) == f"{worker}:{i}".encode()
                if store.put_if_absent(f"race/{i}", str(worker).encode()):  # type: ignore[attr-defined]
                    wins.append(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert not errors, errors[:3]
        assert sorted(wins) == list(range(100)), "each race key was created exactly once"
        assert len(store.list("t")) == 800
    finally:
        store.close()


def test_close_ends_the_child_and_later_calls_fail() -> None:
    store = open_store(f"exec:{shlex.join(SERVE_MEMORY)}")
    assert isinstance(store, ExecStore)
    store.close()
    assert store._conn.proc.returncode == 0, "the child exits 0 after close"
    store.close()  # a second close is harmless
    with pytest.raises(ExecChildError, match="the handle is closed"):
        store.get("a")


def test_a_dropped_handle_ends_its_child() -> None:
    store = open_store(f"exec:{shlex.join(SERVE_MEMORY)}")
    assert isinstance(store, ExecStore)
    proc = store._conn.proc
    del store
    gc.collect()
    assert proc.returncode is not None and proc.pid not in live_children()


# -- the prefix of list ------------------------------------------------------------------------

ECHO_PREFIX_CHILD = """
import sys
from reference_engine.stores.exec.child import serve_stdio
from reference_engine.stores.memory import MemoryStore

class EchoPrefix(MemoryStore):
    def list(self, prefix):
        return ["asked/" + prefix.replace("/", "|")]

sys.exit(serve_stdio(EchoPrefix(), "echo-prefix", {}))
"""


def test_the_client_sends_the_list_prefix_exactly_as_given() -> None:
    # The child answers with the prefix it received, its "/" spelled "|": a client that
    # dropped or added a trailing "/" would show it here.
    store = start_child([sys.executable, "-c", ECHO_PREFIX_CHILD])
    try:
        assert [store.list(p) for p in ("", "a", "a/", "a/b/")] == [
            ["asked/"], ["asked/a"], ["asked/a|"], ["asked/a|b|"]]
    finally:
        store.close()
