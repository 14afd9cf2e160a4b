"""C-LAST-1, records last until deleted: a few records written when a store is first used
in the session, read back byte for byte on every handle kind when the session ends.

One handle that wrote them stays open all session, so no reopen (C-HANDLE-3) can excuse a
record that vanished; at the end each record is read on that handle, on a new factory
handle and, when the store declares ``cross_process``, on a handle ``open_store(uri)``
opens. A store built on a cache with a default expiry fails here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dw_testing.history.labels import digest
from reference_engine.stores.contract import close_store

# Tries at writing the records (one per test) and at reading them back at the end.
ATTEMPTS = 3
# Values of each byte class at the first, a middle and the last byte, and one past 64 KiB.
LASTING_VALUES: tuple[tuple[str, bytes], ...] = (
    ("empty", b""),
    ("nul", b"\x00"),
    ("every-byte", bytes(range(256))),
    ("text-line", b"still here\r\n"),
    ("not-utf8", b"\xff\xfe\x80last\xc0"),
    ("json", b'{"kept": true}'),
    ("large", bytes(range(256)) * 257),
)


WRITER = "the handle that wrote them"
GONE = "answered no record (None)"


def lasting_clause(problems: list[str]) -> tuple[str, str]:
    """The clause of the problems found, and its fix: a record gone from the handle that
    wrote it did not last (C-LAST-1); one read back with other bytes was not kept byte for
    byte (C-VAL-1); one only other handles miss was never seen by them (C-HANDLE-1)."""
    gone = [p for p in problems if GONE in p or "could not" in p]
    if any(f" on {WRITER} " in p or "could not" in p for p in gone):
        return ("C-LAST-1 (records last until deleted)",
                "keep records until they are deleted: no expiry (TTL) and no eviction")
    if len(gone) < len(problems):
        return ("C-VAL-1 (values are bytes, kept exactly)",
                "store and return the value's bytes unchanged: no text decoding, no "
                "trimming, no size cap")
    return ("C-HANDLE-1 (handles see each other's writes)",
            "make every handle read the same records: no per-handle copy or cache; or "
            "declare cross_handle = false")


@dataclass
class LastingRecords:
    """The records of one session (or xdist worker), per store."""

    root: str
    keepers: dict[str, Any] = field(default_factory=dict)
    problems: dict[str, list[str]] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)

    def key(self, label: str) -> str:
        return f"{self.root}/{label}"

    def start(self, store: str, factory: Callable[[], Any]) -> None:
        """Write the records once per store, on a handle kept open until the end.

        A write that raises is tried again at the next test, up to ``ATTEMPTS`` tests: any
        call may raise (C-ERR-1), and a store that cannot write at all fails its own tests,
        under their clauses, not this one."""
        if store in self.keepers or self.attempts.get(store, 0) >= ATTEMPTS:
            return
        self.attempts[store] = self.attempts.get(store, 0) + 1
        handle = None
        try:
            handle = factory()
            for label, value in LASTING_VALUES:
                handle.put(self.key(label), value)
        except Exception:
            if handle is not None:
                _close(handle)
            return
        self.keepers[store] = handle

    def finish(self, store: str, factory: Callable[[], Any],
               open_uri: Callable[[], Any] | None, *, shared: bool = True) -> list[str]:
        """Read every record on every handle kind, then delete them; the problems found.
        Without ``shared`` (a store declaring ``cross_handle = false``) only the handle that
        wrote them is asked."""
        keeper = self.keepers.pop(store, None)
        if keeper is None:
            return self.problems.get(store, [])
        kinds: list[tuple[str, Callable[[], Any]]] = [(WRITER, lambda: keeper)]
        if shared:
            kinds.append(("a new factory handle", factory))
        if open_uri is not None and shared:
            kinds.append(("a handle open_store(uri) opened", open_uri))
        found: list[str] = []
        for kind, opener in kinds:
            found += self._read_with_retries(opener, keeper, kind)
        try:
            for label, _ in LASTING_VALUES:
                keeper.delete(self.key(label))
        except Exception:
            pass  # the suite's delete tests judge delete; the leftovers check counts keys
        _close(keeper)
        if found:
            self.problems[store] = found
        return found

    def _read_with_retries(self, opener: Callable[[], Any], keeper: Any,
                           kind: str) -> list[str]:
        """The wrong answers of one handle kind. A handle that raises is opened again, up to
        ``ATTEMPTS`` times (C-ERR-1 lets any call raise); only a store that never answers
        is reported, and as that, not as a record gone."""
        error = ""
        for _ in range(ATTEMPTS):
            handle = None
            try:
                handle = opener()
                return self._read_all(handle, kind)
            except Exception as exc:
                error = type(exc).__name__
            finally:
                if handle is not None and handle is not keeper:
                    _close(handle)
        return [f"{kind} could not be opened or read at the session's end, {ATTEMPTS} "
                f"times ({error})"]

    def _read_all(self, handle: Any, kind: str) -> list[str]:
        found: list[str] = []
        for label, value in LASTING_VALUES:
            got = handle.get(self.key(label))
            # An empty record read as None is C-GET-1, which the store-level tests blame;
            # here it would read as a record gone (C-LAST-1), the wrong cause.
            if got == value or (value == b"" and got is None):
                continue
            what = (GONE.removeprefix("answered ") if got is None
                    else digest(bytes(got)) if isinstance(got, bytes | bytearray)
                    else repr(type(got)))
            found.append(f"get('{label}') on {kind} answered {what} at the session's end; "
                         f"written {digest(value)} at its start and never deleted")
        return found


def _close(handle: Any) -> None:
    try:
        close_store(handle)
    except Exception:
        return
