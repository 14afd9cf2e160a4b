"""What is special about the SQLite store: ordering, range listing, locking, URIs."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dw_testing.kit.together import run_together
from reference_engine.errors import StoreUnavailable, TransientStoreError
from reference_engine.stores.registry import open_store
from reference_engine.stores.sqlite import SqliteStore


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "control.db")


def test_keys_sort_by_code_point_even_beyond_the_bmp(store: SqliteStore) -> None:
    # UTF-16 order would put U+10000 (a surrogate pair, 0xD800...) before U+E000 and U+FFFF.
    keys = ["n/\U00010000", "n/\uffff", "n/\ue000", "n/z", "n/\u00e9", "n/Z", "n/\U0001f600"]
    for key in keys:
        assert store.put_if_absent(key, b"v")
    expected = sorted(keys)
    assert expected[-2:] == ["n/\U00010000", "n/\U0001f600"]
    assert store.list("n") == expected
    assert store.list("") == expected


def test_list_is_a_range_not_a_pattern(store: SqliteStore) -> None:
    for key in ["p%/a", "pX/b", "p_/c", "p/d", "p0", "p/e/f", "p"]:
        store.put(key, b"v")
    assert store.list("p") == ["p/d", "p/e/f"]
    assert store.list("p%") == ["p%/a"]
    assert store.list("p_/") == ["p_/c"]


def test_an_empty_record_is_bytes_not_none(store: SqliteStore) -> None:
    assert store.put_if_absent("e", b"")
    assert store.get("e") == b""
    assert not store.put_if_absent("e", b"x")
    assert store.get("e") == b""


def test_a_held_write_lock_is_a_transient_error_naming_the_call(tmp_path: Path) -> None:
    db = tmp_path / "locked.db"
    store = SqliteStore(db, busy_timeout=0.05)
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(TransientStoreError, match="put_if_absent of key 'k'") as info:
            store.put_if_absent("k", b"secret payload")
        assert "secret payload" not in str(info.value)
        assert (info.value.op, info.value.key) == ("put_if_absent", "k")
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert store.put_if_absent("k", b"v")


def test_threads_racing_on_one_handle_get_one_winner_per_key(store: SqliteStore) -> None:
    threads_n, keys_n = 8, 40
    wins: list[list[str]] = [[] for _ in range(threads_n)]

    def race(index: int) -> None:
        for k in range(keys_n):
            if store.put_if_absent(f"race/{k}", str(index).encode()):
                wins[index].append(f"race/{k}")

    run_together([lambda i=i: race(i) for i in range(threads_n)])
    all_wins = [key for won in wins for key in won]
    assert sorted(all_wins) == sorted(f"race/{k}" for k in range(keys_n))
    for index, won in enumerate(wins):
        for key in won:
            assert store.get(key) == str(index).encode()


_CHILD = """
import sys
from reference_engine.stores.sqlite import SqliteStore
store = SqliteStore(sys.argv[1])
won = [k for k in range(60) if store.put_if_absent(f"x/{k}", sys.argv[2].encode())]
print(" ".join(map(str, won)))
"""


def test_processes_racing_get_one_winner_per_key(tmp_path: Path) -> None:
    db = str(tmp_path / "shared.db")
    SqliteStore(db).close()
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, db, name], stdout=subprocess.PIPE, text=True
        )
        for name in ("left", "right", "third")
    ]
    outputs = [child.communicate(timeout=60)[0] for child in children]
    assert all(child.returncode == 0 for child in children)
    wins = [[int(k) for k in out.split()] for out in outputs]
    assert sorted(k for won in wins for k in won) == list(range(60))
    store = SqliteStore(db)
    for name, won in zip(("left", "right", "third"), wins, strict=True):
        for k in won:
            assert store.get(f"x/{k}") == name.encode()


def test_records_survive_close_and_reopen(tmp_path: Path) -> None:
    first = SqliteStore(tmp_path / "d.db")
    first.put("k", b"kept")
    first.close()
    with pytest.raises(StoreUnavailable, match="closed"):
        first.get("k")
    assert SqliteStore(tmp_path / "d.db").get("k") == b"kept"


def test_sqlite_uris(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    three = open_store(f"sqlite://{tmp_path}/three.db")
    four = open_store(f"sqlite:///{tmp_path}/three.db")
    assert isinstance(three, SqliteStore) and isinstance(four, SqliteStore)
    assert three.path == four.path == f"{tmp_path}/three.db"
    three.put("k", b"v")
    assert four.get("k") == b"v"
    monkeypatch.chdir(tmp_path)
    relative = open_store("sqlite://./sub/rel.db?busy_timeout=2")
    assert isinstance(relative, SqliteStore)
    assert relative.path == f"{tmp_path}/sub/rel.db"


def _synchronous(store: SqliteStore) -> int:
    assert store._conn is not None
    return int(store._conn.execute("PRAGMA synchronous").fetchone()[0])


def test_fsync_0_syncs_at_checkpoints_only(tmp_path: Path) -> None:
    synced = open_store(f"sqlite://{tmp_path}/s.db")
    unsynced = open_store(f"sqlite://{tmp_path}/s.db?fsync=0")
    assert isinstance(synced, SqliteStore) and isinstance(unsynced, SqliteStore)
    assert (_synchronous(synced), _synchronous(unsynced)) == (2, 1)  # FULL, NORMAL
    unsynced.put("k", b"v")
    assert synced.get("k") == b"v", "the same database either way"


@pytest.mark.parametrize(
    ("uri", "hint"),
    [
        ("sqlite://somehost/x.db", "host part"),
        ("sqlite:///", "needs a database path"),
        ("sqlite://./", "needs a file name"),
        ("sqlite:///tmp/x.db?mode=ro", "unknown option"),
        ("sqlite:///tmp/x.db?busy_timeout=soon", "number of seconds"),
        ("sqlite:///tmp/x.db?fsync=maybe", "must be 0 or 1"),
    ],
)
def test_bad_sqlite_uris_are_refused(uri: str, hint: str) -> None:
    with pytest.raises(StoreUnavailable, match=hint):
        open_store(uri)


def test_a_directory_or_a_foreign_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable, match="is a directory"):
        SqliteStore(tmp_path)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database, just some bytes " * 100)
    with pytest.raises(StoreUnavailable, match="cannot open sqlite store"):
        SqliteStore(junk)
