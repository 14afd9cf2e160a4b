"""The SQLite store: one table, WAL mode, safe across threads and processes.

The create is ``INSERT ... ON CONFLICT(k) DO NOTHING``; it created the record iff one row
changed. ``list`` selects a key range (``'p/' < k < 'p0'``, since ``'0'`` follows ``'/'``),
never ``LIKE``, so ``%`` and ``_`` in a prefix stay literal. SQLite's BINARY collation
compares UTF-8 bytes, which orders keys by code point, as the contract asks.

Each commit is synced to disk (``synchronous = FULL``), so a returned create survives a
power cut. ``fsync=False`` (``?fsync=0``) syncs only at checkpoints (``NORMAL``): under WAL
a commit still survives the process being killed, not the machine losing power; for
tests and soaks, as the file store's ``fsync=0``.
"""

from __future__ import annotations

import builtins
import os
import sqlite3
import threading
from pathlib import Path
from urllib.parse import SplitResult, unquote

from reference_engine.errors import StoreError, StoreUnavailable, TransientStoreError
from reference_engine.stores.keys import validate_key, validate_prefix
from reference_engine.stores.uri_options import flag_option, uri_options

DEFAULT_BUSY_TIMEOUT_S = 30.0
_SCHEMA = "CREATE TABLE IF NOT EXISTS records (k TEXT PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID"
_CREATE = "INSERT INTO records (k, v) VALUES (?, ?) ON CONFLICT (k) DO NOTHING"
_PUT = "INSERT INTO records (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v"
_GET = "SELECT v FROM records WHERE k = ?"
_DELETE = "DELETE FROM records WHERE k = ?"
_LIST_ALL = "SELECT k FROM records ORDER BY k"
_LIST_RANGE = "SELECT k FROM records WHERE k > ? AND k < ? ORDER BY k"
_BUSY_WORDS = ("locked", "busy")


def _mapped(exc: sqlite3.Error, op: str, key: str, path: str) -> StoreError:
    """A store error naming the call; SQLite messages never hold bound values."""
    message = f"sqlite store {path!r}: {op} of key {key!r} failed ({exc})"
    text = str(exc).lower()
    if isinstance(exc, sqlite3.OperationalError) and any(w in text for w in _BUSY_WORDS):
        return TransientStoreError(
            message + "; another writer held the database past the busy timeout, retry",
            op=op, key=key,
        )
    if isinstance(exc, sqlite3.OperationalError) and "unable to open" in text:
        return StoreUnavailable(message + "; check the path and its permissions", op=op, key=key)
    return StoreError(message, op=op, key=key)


class SqliteStore:
    """Records in table ``records`` of one SQLite file; one connection behind a lock."""

    def __init__(self, path: Path | str, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT_S,
                 fsync: bool = True) -> None:
        self.path = os.path.abspath(os.path.expanduser(os.fspath(path)))
        self.fsync = fsync
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = self._connect(busy_timeout)

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r})"

    def _connect(self, busy_timeout: float) -> sqlite3.Connection:
        if os.path.isdir(self.path):
            raise StoreUnavailable(
                f"sqlite store path {self.path!r} is a directory; name a database file, "
                "e.g. sqlite:///var/dw/control.db",
                op="open",
            )
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot create the directory for sqlite store {self.path!r} ({exc.strerror}); "
                "check the path and its permissions",
                op="open",
            ) from None
        conn: sqlite3.Connection | None = None
        try:
            # Autocommit: each statement is its own transaction; the lock serialises threads.
            conn = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA synchronous = {'FULL' if self.fsync else 'NORMAL'}")
            conn.execute(_SCHEMA)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc).lower():
                raise TransientStoreError(
                    f"sqlite store {self.path!r} stayed locked while opening; retry",
                    op="open",
                ) from None
            raise StoreUnavailable(
                f"cannot open sqlite store {self.path!r} ({exc}); point it at a new file or an "
                "existing dw-testing database",
                op="open",
            ) from None
        return conn

    def _live(self, op: str, key: str) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreUnavailable(
                f"sqlite store {self.path!r} is closed; open a new handle", op=op, key=key
            )
        return self._conn

    def put_if_absent(self, key: str, data: bytes) -> bool:
        validate_key(key, op="put_if_absent")
        with self._lock:
            try:
                cursor = self._live("put_if_absent", key).execute(_CREATE, (key, bytes(data)))
            except sqlite3.Error as exc:
                raise _mapped(exc, "put_if_absent", key, self.path) from None
            return cursor.rowcount == 1

    def put(self, key: str, data: bytes) -> None:
        validate_key(key, op="put")
        with self._lock:
            try:
                self._live("put", key).execute(_PUT, (key, bytes(data)))
            except sqlite3.Error as exc:
                raise _mapped(exc, "put", key, self.path) from None

    def get(self, key: str) -> bytes | None:
        validate_key(key, op="get")
        with self._lock:
            try:
                row = self._live("get", key).execute(_GET, (key,)).fetchone()
            except sqlite3.Error as exc:
                raise _mapped(exc, "get", key, self.path) from None
        return None if row is None else bytes(row[0])

    def delete(self, key: str) -> None:
        validate_key(key, op="delete")
        with self._lock:
            try:
                self._live("delete", key).execute(_DELETE, (key,))
            except sqlite3.Error as exc:
                raise _mapped(exc, "delete", key, self.path) from None

    def list(self, prefix: str) -> builtins.list[str]:
        normalised = validate_prefix(prefix)
        with self._lock:
            conn = self._live("list", normalised)
            try:
                if normalised == "":
                    rows = conn.execute(_LIST_ALL).fetchall()
                else:
                    bounds = (normalised + "/", normalised + "0")
                    rows = conn.execute(_LIST_RANGE, bounds).fetchall()
            except sqlite3.Error as exc:
                raise _mapped(exc, "list", normalised, self.path) from None
        return [row[0] for row in rows]

    def close(self) -> None:
        """Close the connection; later calls raise StoreUnavailable."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None





def from_uri(parsed: SplitResult) -> SqliteStore:
    """``sqlite:///abs/path.db`` (also ``sqlite:////abs/path.db``) or ``sqlite://./rel.db``,
    with ``?busy_timeout=SECONDS`` and ``?fsync=0`` (commits not synced; see the module)."""
    options = uri_options(parsed, store="sqlite store", known={"busy_timeout", "fsync"},
                          advice="the options are busy_timeout=SECONDS and fsync=0|1")
    fsync = (flag_option(options["fsync"], "fsync", store="sqlite store")
             if "fsync" in options else True)
    busy_timeout = DEFAULT_BUSY_TIMEOUT_S
    if "busy_timeout" in options:
        try:
            busy_timeout = float(options["busy_timeout"])
        except ValueError:
            raise StoreUnavailable(
                "sqlite store URI option busy_timeout= must be a number of seconds", op="open"
            ) from None
    path = unquote(parsed.path)
    if parsed.netloc in ("", "localhost"):
        if not path.startswith("/") or path.strip("/") == "":
            raise StoreUnavailable(
                "sqlite URI needs a database path: sqlite:///abs/path.db or sqlite://./rel.db",
                op="open",
            )
        return SqliteStore("/" + path.lstrip("/"), busy_timeout=busy_timeout, fsync=fsync)
    if parsed.netloc in (".", ".."):
        if path.strip("/") == "":
            raise StoreUnavailable(
                "sqlite URI needs a file name after the directory: sqlite://./control.db",
                op="open",
            )
        return SqliteStore(parsed.netloc + path, busy_timeout=busy_timeout, fsync=fsync)
    raise StoreUnavailable(
        f"sqlite URI has a host part {parsed.netloc!r}; write sqlite:///abs/path.db for an "
        "absolute path or sqlite://./rel.db for one relative to the current directory",
        op="open",
    )
