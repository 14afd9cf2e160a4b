"""The file store on a case-insensitive file system: ``Foo`` and ``foo`` stay two keys.

Linux file systems fold no case, so the folding is faked: once by telling the store its
directory folds case, once by making ``os.path.exists`` answer case-insensitively for the
open-time probe."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reference_engine.stores import fs as fs_module
from reference_engine.stores.fs import FsStore, is_case_insensitive
from reference_engine.stores.fs_layout import fold_name, unfold_name


@pytest.mark.parametrize("text", ["foo", "Foo", "FOO", "a^b", "^", "^^A", "runs/Foo/rev/1",
                                  "MiXeD-Case_9^x"])
def test_folding_round_trips_and_leaves_no_capital(text: str) -> None:
    folded = fold_name(text)
    assert unfold_name(folded) == text and folded == folded.lower()


def test_a_key_without_capitals_keeps_its_name() -> None:
    assert fold_name("runs/r1/rev/00000001") == "runs/r1/rev/00000001"


def _folding_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FsStore:
    monkeypatch.setattr(fs_module, "is_case_insensitive", lambda _d, _t: True)
    return FsStore(tmp_path / "store", fsync=False)


def test_keys_that_differ_only_in_case_stay_distinct_on_a_folding_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _folding_store(tmp_path, monkeypatch)
    assert store.case_insensitive
    store.put("runs/Foo/rev/1", b"upper")
    assert store.put_if_absent("runs/foo/rev/1", b"lower") is True
    assert store.get("runs/Foo/rev/1") == b"upper" and store.get("runs/foo/rev/1") == b"lower"
    assert store.list("runs") == ["runs/Foo/rev/1", "runs/foo/rev/1"]
    assert store.list("runs/Foo") == ["runs/Foo/rev/1"]
    on_disk = [str(p.relative_to(tmp_path)) for p in (tmp_path / "store").rglob("*")]
    # What a case-folding file system would hold: still one name per key.
    assert len({name.lower() for name in on_disk}) == len(on_disk)
    store.delete("runs/Foo/rev/1")
    assert store.list("runs") == ["runs/foo/rev/1"]


def test_a_store_written_before_folding_keeps_its_lower_case_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    FsStore(tmp_path / "store", fsync=False).put("runs/r1/rev/1", b"old")
    store = _folding_store(tmp_path, monkeypatch)
    assert store.get("runs/r1/rev/1") == b"old" and store.list("") == ["runs/r1/rev/1"]


def test_the_open_time_probe_detects_a_folding_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FsStore(tmp_path / "plain", fsync=False)
    assert store.case_insensitive is False  # this machine's file system

    def folding_exists(path: str) -> bool:
        head, tail = os.path.split(path)
        try:
            return tail.lower() in {n.lower() for n in os.listdir(head)}
        except OSError:
            return False

    monkeypatch.setattr(fs_module.os.path, "exists", folding_exists)
    assert is_case_insensitive(str(tmp_path), lambda d: f"{d}/.probe-ab12.tmp") is True
    assert FsStore(tmp_path / "folding", fsync=False).case_insensitive is True
