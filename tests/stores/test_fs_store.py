"""What is special about the filesystem store: layout, temp files, pruning, races, fsync."""

from __future__ import annotations

import errno
import itertools
import os
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from reference_engine.errors import InvalidKey, StoreError, StoreUnavailable
from reference_engine.stores import fs
from reference_engine.stores.fs import FsStore
from reference_engine.stores.fs_layout import CONTROL_DIR, RECORD_SUFFIX, TEMP_SUFFIX
from reference_engine.stores.registry import open_store


@pytest.fixture
def store(tmp_path: Path) -> FsStore:
    return FsStore(tmp_path / "dw", fsync=False)


def _files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


# Keys chosen to collide under a naive layout: a key and its child, keys spelled like the
# layout's own suffixes, and keys spelled like temp files.
TRICKY_KEYS = [
    "a",
    "a/b",
    "a.rec",
    "a.rec/x",
    "a.d",
    "a.d/y",
    "a/b.rec",
    "a/b.d",
    "a/b/c",
    ".x.tmp",
    "x.tmp",
    "a/.0-0.tmp",
    "_control",
    "_control/a",
]


def test_the_layout_is_injective(store: FsStore) -> None:
    for index, key in enumerate(TRICKY_KEYS):
        assert store.put_if_absent(key, f"value {index}".encode())
    for index, key in enumerate(TRICKY_KEYS):
        assert store.get(key) == f"value {index}".encode(), key
    assert store.list("") == sorted(TRICKY_KEYS)
    assert store.list("a") == ["a/.0-0.tmp", "a/b", "a/b.d", "a/b.rec", "a/b/c"]
    assert store.list("a.rec/") == ["a.rec/x"]


def test_a_key_and_the_key_beneath_it_delete_independently(store: FsStore) -> None:
    store.put("a", b"parent")
    store.put("a/b", b"child")
    store.delete("a")
    assert store.get("a") is None
    assert store.get("a/b") == b"child"
    assert store.put_if_absent("a", b"again")
    store.delete("a/b")
    assert store.list("") == ["a"]


def test_list_skips_temp_files_and_strangers(store: FsStore) -> None:
    store.put("r/k", b"1")
    control = Path(store.root) / CONTROL_DIR
    (control / ".crashed-writer.tmp").write_bytes(b"partial")
    (control / "r.d" / ".99-7.tmp").write_bytes(b"partial")
    (control / "README").write_text("not a record")
    (control / "r.d" / "link.rec").symlink_to(control / "r.d" / "k.rec")
    assert store.list("") == ["r/k"]


def test_a_stale_temp_file_with_the_next_name_does_not_block_a_create(store: FsStore) -> None:
    store._counter = itertools.count(5)
    control = Path(store.root) / CONTROL_DIR
    stale = control / f".{store._token}-5{TEMP_SUFFIX}"
    stale.write_bytes(b"left by a crash")
    assert store.put_if_absent("k", b"fresh")
    assert store.get("k") == b"fresh"
    assert stale.read_bytes() == b"left by a crash"


def test_no_temp_file_survives_a_create_or_a_put(store: FsStore) -> None:
    assert store.put_if_absent("d/k", b"1")
    assert not store.put_if_absent("d/k", b"2")
    store.put("d/k", b"3")
    assert _files_under(Path(store.root)) == ["_control", "_control/d.d", "_control/d.d/k.rec"]


def test_delete_prunes_empty_directories_up_to_control(store: FsStore) -> None:
    store.put("a/b/c", b"1")
    store.put("a/x", b"2")
    store.delete("a/b/c")
    assert _files_under(Path(store.root)) == ["_control", "_control/a.d", "_control/a.d/x.rec"]
    store.delete("a/x")
    assert _files_under(Path(store.root)) == ["_control"]
    store.delete("a/x")  # missing: no error


def test_a_create_whose_directory_is_pruned_under_it_still_succeeds(store: FsStore) -> None:
    # Deterministic: the racing delete runs exactly between "directory exists" and "open temp".
    store.put("d/old", b"old")
    real_temp_path = store._temp_path
    raced = threading.Event()

    def temp_path_after_a_racing_delete(directory: str) -> str:
        if not raced.is_set():
            raced.set()
            store.delete("d/old")  # prunes d.d: it held only d/old
            assert not os.path.isdir(directory)
        return real_temp_path(directory)

    store._temp_path = temp_path_after_a_racing_delete  # type: ignore[method-assign]
    assert store.put_if_absent("d/new", b"new")
    assert raced.is_set()
    assert store.get("d/new") == b"new"
    assert store.list("d") == ["d/new"]


def test_deletes_racing_creates_in_one_directory_never_fail_a_create(tmp_path: Path) -> None:
    creator, deleter = FsStore(tmp_path, fsync=False), FsStore(tmp_path, fsync=False)
    rounds = 300
    barrier = threading.Barrier(2)
    failures: list[BaseException] = []
    results: list[bool] = []

    def create() -> None:
        try:
            for i in range(rounds):
                barrier.wait()
                results.append(creator.put_if_absent(f"deep/dir/k{i}", b"v"))
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)
            barrier.abort()

    def delete() -> None:
        try:
            for i in range(rounds):
                barrier.wait()
                deleter.delete(f"deep/dir/k{i - 1}")
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=create), threading.Thread(target=delete)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert results == [True] * rounds
    assert creator.list("") == [f"deep/dir/k{rounds - 1}"]


@pytest.mark.parametrize("durable", [False, True])
def test_fsync_follows_the_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durable: bool
) -> None:
    store = FsStore(tmp_path, fsync=durable)
    calls: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        calls.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    assert store.put_if_absent("x/y", b"1")
    store.put("x/y", b"2")
    store.delete("x/y")
    assert store.get("x/y") is None
    assert bool(calls) is durable
    if durable:
        # file + new dir's parent + dir for the create, file + dir for the put, dir for delete
        assert len(calls) >= 6


@pytest.mark.dw_clause("C-ERR-1")
def test_without_hard_links_open_refuses_with_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_link(src: str, dst: str) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_link)
    with pytest.raises(StoreUnavailable, match="cannot hard-link") as info:
        FsStore(tmp_path)
    assert "sqlite://" in str(info.value)
    assert _files_under(tmp_path) == ["_control"]


def test_when_hard_links_fail_later_a_create_refuses_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FsStore(tmp_path, fsync=False)

    def no_link(src: str, dst: str) -> None:
        raise OSError(errno.ENOTSUP, "Operation not supported")

    monkeypatch.setattr(os, "link", no_link)
    with pytest.raises(StoreUnavailable, match="cannot hard-link") as info:
        store.put_if_absent("k", b"v")
    assert info.value.op == "put_if_absent"
    assert info.value.key == "k"
    assert _files_under(tmp_path) == ["_control"]


@pytest.mark.dw_clause("C-ERR-1")
def test_an_os_error_names_the_operation_and_key(store: FsStore) -> None:
    # A stranger's file where the store needs a directory.
    (Path(store.root) / CONTROL_DIR / "a.d").write_bytes(b"")
    with pytest.raises(StoreError, match=r"put_if_absent of key 'a/b'") as info:
        store.put_if_absent("a/b", b"secret payload")
    assert "secret payload" not in str(info.value)
    assert (info.value.op, info.value.key) == ("put_if_absent", "a/b")


def test_invalid_keys_are_refused_before_any_io(tmp_path: Path) -> None:
    store = FsStore(tmp_path, fsync=False)
    for bad in ["../escape", "/abs", "a//b", "a/./b", "tab\there"]:
        with pytest.raises(InvalidKey):
            store.put_if_absent(bad, b"v")
    assert _files_under(tmp_path) == ["_control"]


def test_file_uri_options(tmp_path: Path) -> None:
    fast = open_store(f"file://{tmp_path}/a?fsync=0")
    durable = open_store(f"file://{tmp_path}/b")
    assert isinstance(fast, FsStore) and not fast.fsync
    assert isinstance(durable, FsStore) and durable.fsync
    assert isinstance(open_store(f"file://localhost{tmp_path}/c?fsync=true"), FsStore)
    spaced = fs.from_uri(urlsplit(f"file://{tmp_path}/with%20space"))
    assert spaced.root == f"{tmp_path}/with space"


@pytest.mark.parametrize(
    ("uri_tail", "hint"),
    [
        ("?fsync=maybe", "fsync= must be 0 or 1"),
        ("?fsnyc=0", "unknown option"),
    ],
)
def test_bad_file_uri_options_are_refused(tmp_path: Path, uri_tail: str, hint: str) -> None:
    with pytest.raises(StoreUnavailable, match=hint):
        open_store(f"file://{tmp_path}{uri_tail}")


def test_a_file_uri_with_a_host_is_refused() -> None:
    with pytest.raises(StoreUnavailable, match="file:///abs/path"):
        open_store("file://relative/path")


def test_a_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(StoreUnavailable, match="not a directory") as info:
        open_store(str(blocker))
    assert str(blocker) in str(info.value)


def test_a_relative_bare_path_opens_under_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store("./.dw")
    assert isinstance(store, FsStore)
    store.put("k", b"v")
    assert (tmp_path / ".dw" / "_control" / "k.rec").read_bytes() == b"v"
    with pytest.raises(StoreUnavailable, match="empty store path"):
        fs.from_path("")


@pytest.mark.parametrize("typo", ["file:/abs/path", "sqlite:control.db", "s3:bucket/p"])
def test_a_uri_missing_its_slashes_is_not_taken_for_a_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, typo: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreUnavailable, match="looks like a URI"):
        fs.from_path(typo)
    assert list(tmp_path.iterdir()) == []


def test_two_handles_share_records(tmp_path: Path) -> None:
    first, second = FsStore(tmp_path, fsync=False), FsStore(tmp_path, fsync=False)
    assert first.put_if_absent("k", b"1")
    assert not second.put_if_absent("k", b"2")
    assert second.get("k") == b"1"


def test_get_of_a_key_under_a_record_is_none(store: FsStore) -> None:
    store.put("a", b"1")
    assert store.get("a/b") is None
    store.delete("a/b")
    assert store.list("a") == []


def test_a_durable_delete_whose_directory_a_sibling_delete_pruned_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FsStore(tmp_path / "dw", fsync=True)
    store.put("waits/a", b"1")
    store.put("waits/b", b"2")
    real_fsync_dir = fs._fsync_dir
    synced_dirs: list[str] = []

    def sibling_deletes_first(path: str) -> None:
        # Exactly the interleaving that a concurrent `delete("waits/b")` produces: our
        # unlink landed, then the sibling's delete emptied and pruned the directory.
        if not synced_dirs:
            synced_dirs.append(path)
            os.unlink(os.path.join(path, "b" + RECORD_SUFFIX))
            os.rmdir(path)
        real_fsync_dir(path)

    monkeypatch.setattr(fs, "_fsync_dir", sibling_deletes_first)
    store.delete("waits/a")
    assert synced_dirs, "the delete must fsync its directory in durable mode"
    assert store.list("waits") == []
