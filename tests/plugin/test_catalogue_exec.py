"""exec: stores in the catalogue: names, pyproject `exec = [...]`, handshake capabilities."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from dw_testing.plugin.catalogue import (
    CatalogueError,
    EnteredStores,
    describe_known,
    exec_name,
    resolve,
)
from reference_engine.stores.exec.client import ExecStore

CHILD = [sys.executable, "-m", "reference_engine.stores.exec.child"]


@pytest.mark.parametrize(("command", "name"), [
    ("deno run -A examples/typescript/fs_store.ts", "fs_store"),
    ("deno run -A examples/typescript/fs_store.ts /tmp/root", "fs_store"),
    ("node ./dw_store_run.js ./my_store.mjs", "my_store"),
    ("python -m reference_engine.stores.exec.child memory://", "exec"),
    ("deno run 'unbalanced", "exec"),
])
def test_an_exec_store_is_named_after_its_script(command: str, name: str) -> None:
    assert exec_name(command) == name


def test_an_exec_reference_opens_children_with_the_announced_capabilities() -> None:
    reference = "exec:" + shlex.join([*CHILD, "memory://", "--capability", "large_values=false"])
    stores = EnteredStores()
    try:
        entry = resolve(reference, session="x1", rootpath=None)
        spec = stores.spec(entry)
        assert spec.uri == reference, "child processes of the suite get the same reference"
        assert spec.capabilities == {"cross_handle": False, "cross_process": False,
                                     "durable_reopen": False, "large_values": False,
                                     "segment_prefixes": True, "sorted_list": True,
                                     "refuses_bad_keys": True, "nested_keys": True}
        caps = stores.capabilities(entry)
        assert caps["put_if_absent"] is True and caps["large_values"] is False
        handle = spec.factory()
        assert isinstance(handle, ExecStore)
        handle.close()
    finally:
        stores.close()


def test_an_unknown_announced_capability_is_refused_naming_it() -> None:
    reference = "exec:" + shlex.join([*CHILD, "memory://", "--capability", "teleports=true"])
    stores = EnteredStores()
    try:
        with pytest.raises(CatalogueError, match=r"exec store 'memory' \(its dw-store/1 "
                           r"handshake\) declares unknown capability teleports"):
            stores.spec(resolve(reference, session="x2", rootpath=None))
    finally:
        stores.close()


def _pyproject(tmp_path: Path, body: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(body, encoding="utf-8")
    return tmp_path


def test_pyproject_exec_lists_become_exec_references(tmp_path: Path) -> None:
    argv = [*CHILD, "memory://"]
    words = ", ".join(f'"{w}"' for w in argv)
    root = _pyproject(tmp_path, f"""
[tool.dw-testing.stores.mine]
exec = [{words}]
capabilities = {{durable_reopen = false}}
""")
    entry = resolve("mine", session="x3", rootpath=root)
    assert entry.name == "mine" and entry.overrides == {"durable_reopen": False}
    assert entry.source == f"pyproject.toml (exec:{shlex.join(argv)})"
    stores = EnteredStores()
    try:
        assert stores.spec(entry).uri == f"exec:{shlex.join(argv)}"
    finally:
        stores.close()
    assert ("mine", f"pyproject.toml ({argv})", "") in describe_known(root)


@pytest.mark.parametrize(("body", "message"), [
    ('exec = "deno run store.ts"', "`exec` must be a non-empty list of command-line words"),
    ("exec = []", "`exec` must be a non-empty list"),
    ('exec = ["deno", ""]', "`exec` must be a non-empty list"),
    ('exec = ["deno"]\nuri = "memory://"', "needs exactly one of `obj"),
])
def test_a_bad_pyproject_exec_entry_is_refused(tmp_path: Path, body: str, message: str) -> None:
    root = _pyproject(tmp_path, f"[tool.dw-testing.stores.bad]\n{body}\n")
    with pytest.raises(CatalogueError, match=message.replace("[", r"\[").replace("(", r"\(")):
        resolve("bad", session="x4", rootpath=root)


def test_the_exec_file_built_in_removes_its_directory_and_its_spares() -> None:
    stores = EnteredStores()
    entry = resolve("exec-file", session="x5", rootpath=None)
    spec = stores.spec(entry)
    handles = [spec.factory() for _ in range(3)]  # a third open: spares are queued
    handles[0].put("k", b"v")
    assert handles[2].get("k") == b"v", "children of exec-file share one directory"
    for handle in handles:
        handle.close()
    assert spec.uri is not None
    root = Path(shlex.split(spec.uri.removeprefix("exec:"))[-1].removeprefix("file://")
                .split("?")[0])
    stores.close()
    assert not root.exists()


def test_an_exec_command_given_as_is_is_named_by_its_handshake_store_name() -> None:
    from dw_testing.plugin.catalogue import named_by_spec, names_itself

    reference = "exec:" + shlex.join([*CHILD, "memory://", "--name", "kv-handshake"])
    entry = resolve(reference, session="x3", rootpath=None)
    stores = EnteredStores()
    try:
        assert names_itself(entry)
        spec = stores.enter(entry)
        assert named_by_spec(entry, spec).name == "kv-handshake", (
            "an exec: store is named in test ids and reports by its handshake, not its script")
    finally:
        stores.close()


def test_the_skip_hint_of_an_exec_store_names_the_handshake_and_exec_in_pyproject() -> None:
    from dw_testing.plugin.catalogue import capability_hint

    hint = capability_hint("dir-ts", "nested_keys", "exec:deno run -A store.ts /tmp/r")
    assert "dw-store/1 handshake" in hint and "nested_keys: true" in hint
    assert 'exec = ["deno", "run", "-A", "store.ts", "/tmp/r"]' in hint
    assert "factory.capabilities" not in hint and "obj =" not in hint
