"""Run one store function in N child processes that start together.

Each child opens its own handle, ``PrefixedStore(open_store(uri), prefix)``, reports
"ready" and blocks until the parent has heard from every child; the parent then
sends "go" to all of them at once. Python start-up, imports and opening the store all
happen before the start line, so the calls themselves overlap.

The function runs as ``function(store, *args)`` and must be importable by its
``module:qualname`` and return JSON data. Store operations for races live here
(:func:`create_each`), so a child never imports a test module.
"""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from dw_testing.kit.child_env import child_environment
from dw_testing.kit.prefixed import PrefixedStore
from reference_engine.stores.registry import open_store

READY = "ready"
GO = "go"
DEFAULT_TIMEOUT_SECONDS = 120.0


class ChildTarget(Protocol):
    """Where a child opens its handle: the spec's uri and the test's key prefix."""

    @property
    def uri(self) -> str: ...

    @property
    def prefix(self) -> str: ...


@dataclass(frozen=True)
class DwChildTarget:
    """What a child process needs to open the same corner of the store as the test."""

    uri: str
    prefix: str

    def open(self) -> PrefixedStore:
        """``PrefixedStore(open_store(uri), prefix)``: a fresh handle, in any process."""
        return PrefixedStore(open_store(self.uri), self.prefix)


class ChildFailed(RuntimeError):
    """A child process exited early or raised; the message carries its stderr tail."""


def create_each(store: Any, keys: Sequence[str], value: str) -> list[bool]:
    """``put_if_absent`` every key in order with ``value``; the answers, in order."""
    return [bool(store.put_if_absent(key, value.encode("utf-8"))) for key in keys]


def create_and_read_each(store: Any, keys: Sequence[str], value: str) -> list[list[Any]]:
    """Create each key, then read it back at once: ``[answer, bytes read or None]``."""
    results: list[list[Any]] = []
    for key in keys:
        won = bool(store.put_if_absent(key, value.encode("utf-8")))
        seen = store.get(key)
        results.append([won, None if seen is None else seen.decode("utf-8", "replace")])
    return results


def _function_path(function: Callable[..., Any] | str) -> str:
    if isinstance(function, str):
        return function
    return f"{function.__module__}:{function.__qualname__}"


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def run_in_children(
    target: ChildTarget,
    function: Callable[..., Any] | str,
    args_per_child: Sequence[Sequence[Any]],
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> list[Any]:
    """Run ``function(store, *args)`` in one child per entry of ``args_per_child``.

    Children start their calls together; the results come back in child order.
    """
    path = _function_path(function)
    children: list[subprocess.Popen[str]] = []
    try:
        for args in args_per_child:
            child = subprocess.Popen(
                [sys.executable, "-m", "dw_testing.kit.procs"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, env=child_environment(),
            )
            children.append(child)
            request = {"uri": target.uri, "prefix": target.prefix, "function": path,
                       "args": list(args)}
            assert child.stdin is not None
            child.stdin.write(json.dumps(request) + "\n")
            child.stdin.flush()
        deadline = time.monotonic() + timeout
        for child in children:
            _await_ready(child, deadline)
        for child in children:
            assert child.stdin is not None
            child.stdin.write(GO + "\n")
            child.stdin.flush()
        return [_result_of(child, timeout) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
            # However the test ended, its pipes go with it: a long run of failing tests
            # must not pile up open descriptors.
            for pipe in (child.stdin, child.stdout, child.stderr):
                if pipe is not None:
                    pipe.close()


def _await_ready(child: subprocess.Popen[str], deadline: float) -> None:
    """Wait for the child's "ready" line, never past ``deadline``."""
    assert child.stdout is not None
    # A selector, not select(): select() cannot wait on a descriptor numbered 1024 or more.
    with selectors.DefaultSelector() as selector:
        selector.register(child.stdout, selectors.EVENT_READ)
        ready = bool(selector.select(max(0.0, deadline - time.monotonic())))
    line = child.stdout.readline().strip() if ready else ""
    if line == READY:
        return
    child.kill()
    _, err = child.communicate()
    what = "did not report ready in time" if not ready else "failed before the start line"
    raise ChildFailed(f"a child {what}:\n{_tail(err)}")


def _result_of(child: subprocess.Popen[str], timeout: float) -> Any:
    out, err = child.communicate(timeout=timeout)
    try:
        reply = json.loads(out.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise ChildFailed(f"a child gave no result (exit {child.returncode}):\n{_tail(err)}")\
            from None
    if "error" in reply:
        raise ChildFailed(f"a child raised {reply['error']}:\n{_tail(err)}")
    return reply["ok"]


def _child_main() -> int:
    # Imports stay here so the parent never pays for them.
    import traceback

    from dw_testing.kit.prefixed import PrefixedStore
    from reference_engine.stores.registry import load_object, open_store

    request = json.loads(sys.stdin.readline())
    function = load_object(request["function"])
    store = PrefixedStore(open_store(request["uri"]), request["prefix"])
    print(READY, flush=True)
    if sys.stdin.readline().strip() != GO:
        return 2
    try:
        result = function(store, *request["args"])
        store.close()  # C-HANDLE-3: whoever opened a handle closes it, child processes too
    except Exception as exc:  # every failure goes back to the parent, named
        traceback.print_exc()
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        return 1
    print(json.dumps({"ok": result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_child_main())
