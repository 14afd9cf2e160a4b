"""The claim looks are private state: no shared directory is trusted, no planted link is
followed, and no planted record shortens a takeover below what this host observed."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from reference_engine.cli.session import LOOKS_DIR_ENV, claim_looks_path, private_looks_dir
from reference_engine.clock import SystemClock
from reference_engine.records import keys
from reference_engine.refusals import Refusal
from reference_engine.runs.claim_looks import Looks, Seen, ensure_private_dir
from reference_engine.runs.claims import ClaimBook
from reference_engine.stores.memory import MemoryStore

STALE_AFTER = 36.0


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_text("precious")
    return path


def _shared(tmp_path: Path, name: str, mode: int) -> Path:
    where = tmp_path / name
    where.mkdir()
    os.chmod(where, mode)
    return where


@pytest.mark.parametrize("how, why", [
    ("world_writable", "other users can write to it"),
    ("group_writable", "other users can write to it"),
    ("other_owner", "another user owns it"),
    ("symlink", "it is a symbolic link"),
    ("file", "it is not a directory"),
])
def test_a_looks_directory_that_is_not_private_is_refused_for_a_private_one(
    tmp_path: Path, how: str, why: str
) -> None:
    if how == "world_writable":
        where = _shared(tmp_path, "looks", 0o777)
    elif how == "group_writable":
        where = _shared(tmp_path, "looks", 0o770)
    elif how == "other_owner":
        if os.getuid() != 0:
            pytest.skip("only root can give a directory to another user")
        where = _shared(tmp_path, "looks", 0o700)
        os.chown(where, 4242, 4242)
    elif how == "symlink":
        target = _shared(tmp_path, "elsewhere", 0o700)
        where = tmp_path / "looks"
        where.symlink_to(target)
    else:
        where = tmp_path / "looks"
        where.write_text("")
    notes: list[str] = []
    used = ensure_private_dir(where, notes.append)
    try:
        assert used != where and used.is_dir() and (used.stat().st_mode & 0o077) == 0
        assert used.stat().st_uid == os.getuid()
        assert len(notes) == 1 and why in notes[0] and str(where) in notes[0]
        assert LOOKS_DIR_ENV in notes[0]
    finally:
        used.rmdir()


def test_a_private_directory_is_used_as_it_is_and_a_missing_one_is_made_0700(
    tmp_path: Path
) -> None:
    notes: list[str] = []
    made = ensure_private_dir(tmp_path / "new", notes.append)
    assert made == tmp_path / "new" and (made.stat().st_mode & 0o777) == 0o700
    assert ensure_private_dir(made, notes.append) == made and notes == []


def test_the_cli_never_puts_looks_under_a_shared_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = _shared(tmp_path, "shared-tmp-name", 0o777)
    monkeypatch.setenv(LOOKS_DIR_ENV, str(base))
    looks = private_looks_dir(claim_looks_path("./.dw"))
    try:
        assert base not in looks.parents and list(base.iterdir()) == []
    finally:
        looks.rmdir()


def _lease(store: MemoryStore, run_id: str) -> bytes:
    ClaimBook(store, SystemClock(), host="holder").take(run_id)  # a live holder elsewhere
    data = store.get(keys.claim_key(run_id, 1))
    assert data is not None
    return data


def test_a_planted_symlink_is_replaced_never_written_through(
    tmp_path: Path, victim: Path
) -> None:
    store = MemoryStore()
    raw = _lease(store, "r1")
    looks = Looks(tmp_path / "looks")
    target = looks._file("r1")
    target.symlink_to(victim)
    for pid in range(os.getpid() - 2, os.getpid() + 3):  # the old predictable temp names
        (target.parent / f"{target.name}.{pid}.tmp").symlink_to(victim)
    assert looks.judge("r1", 1, raw, time.monotonic(), STALE_AFTER) == "unknown"
    assert victim.read_text() == "precious"
    assert not target.is_symlink() and json.loads(target.read_text())["g"] == 1
    assert (target.stat().st_mode & 0o777) == 0o600


def test_a_planted_look_cannot_make_a_live_lease_look_stale(tmp_path: Path) -> None:
    store = MemoryStore()
    raw = _lease(store, "r1")
    book = ClaimBook(store, SystemClock(), host="taker", patience=False,
                     looks_path=tmp_path / "looks")
    # The forgery: this lease, first "seen" 1000 s ago by this host's monotonic clock.
    planted = book._looks._file("r1")
    planted.write_text(json.dumps({"g": 1, "digest": hashlib.sha256(raw).hexdigest(),
                                   "since": time.monotonic() - 1000}))
    with pytest.raises(Refusal) as refused:
        book.take("r1")
    assert refused.value.kind == "busy"
    assert store.list(keys.claims_prefix("r1")) == [keys.claim_key("r1", 1)]


def test_a_look_is_as_old_as_its_file_at_most() -> None:
    looks = Looks(None, wall_clock_check=True)
    now = time.time()
    assert looks._old_enough(Seen(1, "d", 0.0, now - STALE_AFTER - 1), STALE_AFTER)
    assert not looks._old_enough(Seen(1, "d", 0.0, now - STALE_AFTER + 5), STALE_AFTER)
    assert looks._old_enough(Seen(1, "d", 0.0, None), STALE_AFTER)  # in memory: ours
